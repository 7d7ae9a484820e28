/**
 * Which commands may create a database. `serve`, `migrate` and `restore` set one up; every other command works on an
 * existing one and refuses when there is none, naming where it looked: a command run from the wrong directory must not
 * quietly create an empty SQLite database (and a master key) there and make its change in it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadConfiguration } from '../core/configuration/configuration';
import { SQLITE_FILE_NAME } from '../core/storage/database';

/** Commands allowed to create the database (and, outside production, the master key file). */
export const CREATING_COMMANDS: ReadonlySet<string> = new Set(['serve', 'migrate', 'restore']);

/** A refusal the CLI reports on one line with exit code 1. */
export class NoDatabaseError extends Error {}

/**
 * Throws {@link NoDatabaseError} when the configured SQLite database does not exist. PostgreSQL
 * (`TOLLGATE_DATABASE_URL`) is left to the server: the URL names an existing database by definition.
 */
export function requireExistingDatabase(env: Readonly<Record<string, string | undefined>> = process.env, workingDirectory = process.cwd()): void {
  const configuration = loadConfiguration(env, workingDirectory);
  if (configuration.databaseUrl) return;
  const file = path.join(configuration.dataDirectory, SQLITE_FILE_NAME);
  if (existsSync(file)) return;
  throw new NoDatabaseError(
    `no database at ${file}: set TOLLGATE_DATA_DIR to the gateway's data directory (or TOLLGATE_DATABASE_URL), or run this from the directory the gateway runs in; \`tollgate migrate\` creates a new one`,
  );
}
