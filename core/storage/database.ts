/**
 * The database connection: SQLite (better-sqlite3) in the data directory by default, PostgreSQL when
 * `TOLLGATE_DATABASE_URL` is set. Same migrations on both.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import type { Configuration } from '../configuration/configuration';
import { TollgateError } from '../contract';
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
/** Where knex's own messages go (it writes to the console otherwise). */
export interface DatabaseLog {
  debug(message: unknown): void;
}

export function openDatabase(configuration: Configuration, log?: DatabaseLog): Knex {
  // knex's pool messages ("Acquire connection error") repeat per attempt; the gateway logs one line per change of the
  // database's state instead, so they go to debug.
  const knexLog = log ? { log: { warn: (message: unknown) => log.debug(message), error: (message: unknown) => log.debug(message), debug: (message: unknown) => log.debug(message), deprecate: (message: unknown) => log.debug(message) } } : {};
  if (configuration.databaseUrl) {
    // int8 (bigint) columns hold unix-ms times and counters, all within 2^53: read them as numbers.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pg = require('pg') as typeof import('pg');
    pg.types.setTypeParser(20, (value: string) => Number(value));
    // Every wait is bounded: a connection within TOLLGATE_DATABASE_ACQUIRE_TIMEOUT_MS (from the pool or a new
    // one), a statement within TOLLGATE_DATABASE_QUERY_TIMEOUT_MS, enforced by the server (statement_timeout) and by the
    // client (query_timeout), so a frozen or unreachable server fails the request fast instead of holding it.
    const queryTimeout = configuration.databaseQueryTimeoutMs > 0 ? configuration.databaseQueryTimeoutMs : undefined;
    return knexFactory({
      client: 'pg',
      connection: {
        connectionString: configuration.databaseUrl,
        connectionTimeoutMillis: configuration.databaseAcquireTimeoutMs,
        ...(queryTimeout ? { statement_timeout: queryTimeout, query_timeout: queryTimeout } : {}),
      },
      pool: { min: 0, max: 10, acquireTimeoutMillis: configuration.databaseAcquireTimeoutMs },
      acquireConnectionTimeout: configuration.databaseAcquireTimeoutMs,
      ...knexLog,
    });
  }
  mkdirSync(configuration.dataDirectory, { recursive: true, mode: 0o700 });
  return retryingBusyTransactions(knexFactory({
    client: 'better-sqlite3',
    connection: { filename: path.join(configuration.dataDirectory, SQLITE_FILE_NAME) },
    useNullAsDefault: true,
    ...knexLog,
    pool: {
      min: 1,
      max: 1,
      afterCreate(connection: { pragma(source: string): unknown }, done: (error: Error | null, connection: unknown) => void) {
        connection.pragma('journal_mode = WAL');
        // FULL: the WAL is synced at every commit, so an answered change (a revocation, a new app) survives a power cut.
        // With NORMAL a revocation answered 200 was undone by a cut 0.1-20 s later. The one connection carries usage
        // batches too, which commit at NORMAL (no sync of their own, see UsageRepository.insertBatch).
        connection.pragma(`synchronous = ${configuration.sqliteSynchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
        connection.pragma('busy_timeout = 5000');
        connection.pragma('foreign_keys = ON');
        done(null, connection);
      },
    },
  }));
}

/** Attempts of a SQLite transaction refused as busy, and the first wait between them (doubled each time, jittered). */
const BUSY_ATTEMPTS = 6;
const BUSY_FIRST_WAIT_MS = 20;

/**
 * SQLite, several processes on one file (the server and a CLI command, `tollgate mcp`): a transaction that read before
 * it wrote is refused `SQLITE_BUSY_SNAPSHOT` at once, without the busy timeout, when another process committed in
 * between (https://www.sqlite.org/rescode.html#busy_snapshot). Such a transaction changed nothing (it is rolled back),
 * so it is run again, a few times with a growing wait, before the refusal is answered `database_unavailable`.
 */
function retryingBusyTransactions(database: Knex): Knex {
  // A knex instance forwards `transaction` to its context object (knex/lib/knex-builder/make-knex.js).
  const context = (database as unknown as { context: { transaction: (handler?: unknown, config?: unknown) => unknown } }).context;
  const transaction = context.transaction.bind(context);
  const retrying = async (handler: unknown, config?: unknown): Promise<unknown> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await transaction(handler, config);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (attempt >= BUSY_ATTEMPTS || typeof code !== 'string' || !code.startsWith('SQLITE_BUSY')) throw error;
        const wait = BUSY_FIRST_WAIT_MS * 2 ** (attempt - 1);
        await new Promise((resolve) => setTimeout(resolve, wait / 2 + Math.random() * wait));
      }
    }
  };
  // Only the callback form (every transaction of the gateway): the other forms hand the transaction to the caller.
  context.transaction = (handler?: unknown, config?: unknown) => (typeof handler === 'function' ? retrying(handler, config) : transaction(handler, config));
  return database;
}

/**
 * SQLite only: `PRAGMA quick_check` (https://www.sqlite.org/pragma.html#pragma_quick_check) before serving, so that a
 * corrupted file is refused at boot with a clear message instead of answering from whatever pages still read. It reads
 * every page once (about a second per GB on an SSD); constraints and indexes are not re-verified (`integrity_check`
 * does, more slowly).
 *
 * @throws TollgateError `TG_ERR_STORAGE` naming the file and SQLite's first findings.
 */
export async function checkDatabaseIntegrity(database: Knex, file: string): Promise<void> {
  if (database.client.config.client !== 'better-sqlite3') return;
  let findings: string[];
  try {
    const rows = (await database.raw('PRAGMA quick_check(10)')) as Array<Record<string, unknown>>;
    findings = rows.map((row) => String(Object.values(row)[0]));
  } catch (error) {
    findings = [error instanceof Error ? error.message : String(error)];
  }
  if (findings.length === 1 && findings[0] === 'ok') return;
  throw new TollgateError(
    'TG_ERR_STORAGE',
    `the SQLite database ${file} is corrupted (quick_check: ${findings.slice(0, 3).join('; ')}); refusing to start. Restore it from a backup (docs/guides/production.md, "Durability"), or try \`sqlite3 ${file} ".recover"\` on a copy`,
  );
}

/** Applies pending migrations; returns the names applied. */
export async function migrate(database: Knex): Promise<string[]> {
  const [, applied] = (await database.migrate.latest({ migrationSource: new CodeMigrationSource() })) as [number, string[]];
  return applied;
}
