/**
 * Logical backup and restore (`tollgate backup --out FILE`, `tollgate restore --in FILE`): a versioned copy of the
 * database's rows, independent of the engine, so a SQLite gateway can move to PostgreSQL (or a node be rebuilt) and
 * keep every app token, device token and admin key working. Nothing is decrypted: secrets, attestation secrets and the
 * device-token signing keys stay sealed under the master key, so the target must run with the same master key (checked
 * before anything is written).
 *
 * Which tables: every table the migrations created, found in the database itself, so tables added by later migrations
 * are copied without a change here, except those listed in {@link TABLES_NOT_COPIED} (state that belongs to one running
 * node or lives minutes) and those in {@link HISTORY_TABLES}, copied only with `--with-history`. A new table that must
 * not travel is added to one of these two lists, and nowhere else.
 *
 * Format: JSON Lines. The first line is the header ({@link BackupHeader}); then, per table, one line
 * `{"table":NAME,"columns":[…]}` followed by one line per row `{"row":[…]}` in the columns' order. Binary values are
 * written `{"$base64":"…"}`. Tables are written parents first (foreign keys), and restored in that order.
 */
import { createHmac } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Knex } from 'knex';
import { TollgateError } from '../contract';
import { MIGRATIONS } from './migrations';

export const BACKUP_FORMAT = 'tollgate-backup';
/** Bumped when the file layout changes; a reader refuses versions it does not know. */
export const BACKUP_VERSION = 1;

/** Node-local or short-lived state: sessions and set-up links (sign in again), the change counter (bumped on restore). */
export const TABLES_NOT_COPIED: readonly string[] = ['knex_migrations', 'knex_migrations_lock', 'change_feed', 'admin_sessions', 'setup_tokens'];

/** Usage history: the request log and token counts. Copied with `--with-history` only (it can be large). */
export const HISTORY_TABLES: readonly string[] = ['usage_events'];

export interface BackupHeader {
  readonly format: typeof BACKUP_FORMAT;
  readonly version: number;
  readonly createdAt: string;
  readonly gatewayVersion: string;
  /** The migrations applied to the source: the target must know every one of them. */
  readonly migrations: readonly string[];
  readonly withHistory: boolean;
  /** HMAC-SHA256 of a fixed label under the master key: tells a wrong master key apart before a row is written. */
  readonly masterKeyCheck: string;
  readonly tables: Readonly<Record<string, number>>;
}

export interface BackupSummary {
  readonly file: string;
  readonly tables: Readonly<Record<string, number>>;
  readonly withHistory: boolean;
}

function backupError(message: string): TollgateError {
  return new TollgateError('TG_ERR_STORAGE', message);
}

export function masterKeyCheck(masterKey: Buffer): string {
  return createHmac('sha256', masterKey).update('tollgate backup master key check v1').digest('hex');
}

function isPostgres(database: Knex): boolean {
  return database.client.config.client === 'pg';
}

/** The tables the migrations created, as the database lists them. */
async function listTables(database: Knex): Promise<string[]> {
  if (isPostgres(database)) {
    const rows = (await database.raw("select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'")) as { rows: Array<{ table_name: string }> };
    return rows.rows.map((row) => row.table_name);
  }
  const rows = (await database.raw("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'")) as Array<{ name: string }>;
  return rows.map((row) => row.name);
}

/** Table → the tables its foreign keys point at. */
async function foreignKeys(database: Knex, tables: readonly string[]): Promise<Map<string, Set<string>>> {
  const parents = new Map<string, Set<string>>(tables.map((table) => [table, new Set<string>()]));
  if (isPostgres(database)) {
    const rows = (await database.raw(
      `select cl.relname as child, pr.relname as parent from pg_constraint c
         join pg_class cl on cl.oid = c.conrelid join pg_class pr on pr.oid = c.confrelid
         join pg_namespace n on n.oid = cl.relnamespace
        where c.contype = 'f' and n.nspname = current_schema()`,
    )) as { rows: Array<{ child: string; parent: string }> };
    for (const row of rows.rows) parents.get(row.child)?.add(row.parent);
    return parents;
  }
  for (const table of tables) {
    const rows = (await database.raw(`pragma foreign_key_list(${JSON.stringify(table)})`)) as Array<{ table: string }>;
    for (const row of rows) parents.get(table)!.add(row.table);
  }
  return parents;
}

/** Parents before children; ties by name, so two backups of the same data are the same file but for the header. */
function parentsFirst(parents: Map<string, Set<string>>): string[] {
  const order: string[] = [];
  const placed = new Set<string>();
  const visit = (table: string, path: Set<string>) => {
    if (placed.has(table) || path.has(table)) return;
    path.add(table);
    for (const parent of [...(parents.get(table) ?? [])].sort()) if (parents.has(parent)) visit(parent, path);
    placed.add(table);
    order.push(table);
  };
  for (const table of [...parents.keys()].sort()) visit(table, new Set());
  return order;
}

async function appliedMigrations(database: Knex): Promise<string[]> {
  const rows = (await database('knex_migrations').select('name').orderBy('id')) as Array<{ name: string }>;
  return rows.map((row) => row.name);
}

/** The tables a backup copies, parents first. */
export async function copiedTables(database: Knex, withHistory: boolean): Promise<string[]> {
  const tables = (await listTables(database)).filter((table) => !TABLES_NOT_COPIED.includes(table) && (withHistory || !HISTORY_TABLES.includes(table)));
  return parentsFirst(await foreignKeys(database, tables));
}

function encodeValue(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return { $base64: value.toString('base64') };
  if (typeof value === 'bigint') return Number(value);
  return value;
}

function decodeValue(value: unknown, sqlite: boolean): unknown {
  if (value !== null && typeof value === 'object' && '$base64' in value) return Buffer.from(String((value as { $base64: string }).$base64), 'base64');
  // better-sqlite3 binds no booleans; PostgreSQL reads 1/0 into a boolean column.
  if (sqlite && typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

/** Writes a backup of `database` to `file` (mode 0600: it holds sealed secrets and token hashes). */
export async function writeBackup(database: Knex, options: { file: string; masterKey: Buffer; gatewayVersion: string; withHistory: boolean; clock?: () => number }): Promise<BackupSummary> {
  const tables = await copiedTables(database, options.withHistory);
  const out = createWriteStream(options.file, { mode: 0o600, flags: 'wx' });
  const write = async (line: unknown) => {
    if (!out.write(`${JSON.stringify(line)}\n`)) await once(out, 'drain');
  };
  const counts: Record<string, number> = {};
  try {
    // One read transaction: the copy is consistent even while the gateway serves and writes.
    await database.transaction(async (transaction) => {
      for (const table of tables) counts[table] = Number(((await transaction(table).count({ n: '*' })) as Array<{ n: number | string }>)[0]!.n);
      const header: BackupHeader = {
        format: BACKUP_FORMAT,
        version: BACKUP_VERSION,
        createdAt: new Date((options.clock ?? Date.now)()).toISOString(),
        gatewayVersion: options.gatewayVersion,
        migrations: await appliedMigrations(transaction),
        withHistory: options.withHistory,
        masterKeyCheck: masterKeyCheck(options.masterKey),
        tables: counts,
      };
      await write(header);
      for (const table of tables) {
        const columns = Object.keys(await transaction(table).columnInfo());
        await write({ table, columns });
        // Pages of 1,000 rows keep memory flat for large tables (usage history).
        const order = columns.includes('id') ? ['id'] : columns.slice(0, 2);
        for (let offset = 0; ; offset += 1000) {
          const rows = (await transaction(table).select(columns).orderBy(order).limit(1000).offset(offset)) as Array<Record<string, unknown>>;
          for (const row of rows) await write({ row: columns.map((column) => encodeValue(row[column])) });
          if (rows.length < 1000) break;
        }
      }
    });
  } finally {
    out.end();
    await once(out, 'close');
  }
  return { file: options.file, tables: counts, withHistory: options.withHistory };
}

type Line = { table: string; columns: string[] } | { row: unknown[] };

/** Restores `file` into `database` (migrated, and empty unless `replace`), in one transaction. */
export async function restoreBackup(database: Knex, options: { file: string; masterKey: Buffer; replace: boolean }): Promise<BackupSummary> {
  const lines = createInterface({ input: createReadStream(options.file, 'utf8'), crlfDelay: Infinity });
  const iterator = lines[Symbol.asyncIterator]();
  const first = await iterator.next();
  let header: BackupHeader;
  try {
    header = JSON.parse(first.done ? '' : first.value) as BackupHeader;
  } catch {
    throw backupError(`${options.file} is not a Tollgate backup`);
  }
  if (header.format !== BACKUP_FORMAT) throw backupError(`${options.file} is not a Tollgate backup`);
  if (header.version !== BACKUP_VERSION) throw backupError(`backup format version ${header.version} is not supported by this version (it reads ${BACKUP_VERSION}); restore with a newer Tollgate`);
  const known = new Set(MIGRATIONS.map((migration) => migration.name));
  const unknown = header.migrations.filter((name) => !known.has(name));
  if (unknown.length) throw backupError(`the backup comes from a newer schema (${unknown.join(', ')}); restore with the Tollgate version that wrote it (${header.gatewayVersion}) or newer`);
  if (header.masterKeyCheck !== masterKeyCheck(options.masterKey)) {
    throw backupError('the master key differs from the one the backup was made under: set TOLLGATE_MASTER_KEY (or TOLLGATE_MASTER_KEY_FILE) to the source gateway\'s key; secrets and signing keys are copied sealed');
  }
  const sqlite = !isPostgres(database);
  const present = new Set(await listTables(database));
  const restored: Record<string, number> = {};
  await database.transaction(async (transaction) => {
    const tables = Object.keys(header.tables);
    for (const table of tables) if (!present.has(table)) throw backupError(`table "${table}" of the backup does not exist here`);
    const occupied: string[] = [];
    for (const table of tables) {
      const count = Number(((await transaction(table).count({ n: '*' })) as Array<{ n: number | string }>)[0]!.n);
      if (count > 0) occupied.push(table);
    }
    if (occupied.length && !options.replace) {
      throw backupError(`the target database is not empty (${occupied.join(', ')}): restore into a new database (\`tollgate migrate\` creates one), or pass --replace to overwrite these tables`);
    }
    // Children first when emptying, parents first when filling (the file's order).
    for (const table of [...tables].reverse()) await transaction(table).delete();
    let table: string | undefined;
    let columns: string[] = [];
    let batch: Array<Record<string, unknown>> = [];
    const flush = async () => {
      const rows = batch;
      batch = [];
      for (let start = 0; table && start < rows.length; start += 100) await transaction(table).insert(rows.slice(start, start + 100));
    };
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (!next.value) continue;
      const line = JSON.parse(next.value) as Line;
      if ('table' in line) {
        await flush();
        if (!tables.includes(line.table)) throw backupError(`the backup's body names table "${line.table}", absent from its header`);
        table = line.table;
        columns = line.columns;
        restored[table] = 0;
        continue;
      }
      if (!table) throw backupError('a row comes before its table');
      batch.push(Object.fromEntries(columns.map((column, index) => [column, decodeValue(line.row[index], sqlite)])));
      restored[table] = (restored[table] ?? 0) + 1;
      if (batch.length >= 500) await flush();
    }
    await flush();
    for (const [name, count] of Object.entries(header.tables)) {
      if ((restored[name] ?? 0) !== count) throw backupError(`the backup is incomplete: table "${name}" holds ${restored[name] ?? 0} rows of ${count}`);
    }
    if (!sqlite) await resetSequences(transaction, tables);
    // Caches of running nodes reload on a change of the sequence.
    await transaction('change_feed').where({ id: 1 }).increment('sequence', 1);
  });
  lines.close();
  return { file: options.file, tables: restored, withHistory: header.withHistory };
}

/** PostgreSQL: identity sequences continue after the restored ids (rows inserted with explicit ids do not move them). */
async function resetSequences(transaction: Knex.Transaction, tables: readonly string[]): Promise<void> {
  const rows = (await transaction.raw(
    "select table_name, column_name from information_schema.columns where table_schema = current_schema() and column_default like 'nextval(%'",
  )) as { rows: Array<{ table_name: string; column_name: string }> };
  for (const { table_name: table, column_name: column } of rows.rows) {
    if (!tables.includes(table)) continue;
    await transaction.raw(`select setval(pg_get_serial_sequence(?, ?), coalesce((select max(??) from ??), 0) + 1, false)`, [table, column, column, table]);
  }
}
