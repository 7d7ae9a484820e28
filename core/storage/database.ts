/**
 * The database connection: SQLite (better-sqlite3) in the data directory by default, PostgreSQL when
 * `TOLLGATE_DATABASE_URL` is set. Same migrations on both.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import type { Configuration } from '../configuration/configuration';
import { CodeMigrationSource } from './migrations';

export const SQLITE_FILE_NAME = 'tollgate.db';

/** Where the data lives, for the boot message (no credentials). */
export function describeDatabase(configuration: Configuration): string {
  if (configuration.databaseUrl) {
    const url = new URL(configuration.databaseUrl);
    return `PostgreSQL ${url.hostname}:${url.port || 5432}${url.pathname}`;
  }
  return `SQLite ${path.join(configuration.dataDirectory, SQLITE_FILE_NAME)}`;
}

/** Opens the database. SQLite runs in WAL mode with a busy timeout, so the CLI can write while the server runs. */
export function openDatabase(configuration: Configuration): Knex {
  if (configuration.databaseUrl) {
    // int8 (bigint) columns hold unix-ms times and counters, all within 2^53: read them as numbers.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pg = require('pg') as typeof import('pg');
    pg.types.setTypeParser(20, (value: string) => Number(value));
    return knexFactory({ client: 'pg', connection: configuration.databaseUrl, pool: { min: 0, max: 10 } });
  }
  mkdirSync(configuration.dataDirectory, { recursive: true, mode: 0o700 });
  return knexFactory({
    client: 'better-sqlite3',
    connection: { filename: path.join(configuration.dataDirectory, SQLITE_FILE_NAME) },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate(connection: { pragma(source: string): unknown }, done: (error: Error | null, connection: unknown) => void) {
        connection.pragma('journal_mode = WAL');
        connection.pragma('synchronous = NORMAL');
        connection.pragma('busy_timeout = 5000');
        connection.pragma('foreign_keys = ON');
        done(null, connection);
      },
    },
  });
}

/** Applies pending migrations; returns the names applied. */
export async function migrate(database: Knex): Promise<string[]> {
  const [, applied] = (await database.migrate.latest({ migrationSource: new CodeMigrationSource() })) as [number, string[]];
  return applied;
}
