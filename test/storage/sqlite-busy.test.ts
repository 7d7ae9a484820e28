/**
 * Two processes on one SQLite file (the server and `tollgate mcp` or another CLI command): a transaction that read
 * before it wrote is refused `SQLITE_BUSY_SNAPSHOT` at once when the other committed in between
 * (https://www.sqlite.org/rescode.html#busy_snapshot). The gateway's transactions run again then, and succeed.
 * Here the other process is a second connection to the same file, committing between the transaction's read and write.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { loadConfiguration } from '../../core/configuration/configuration';
import { openDatabase } from '../../core/storage/database';

describe('SQLite transactions refused as busy by another writer', function () {
  this.timeout(20_000);
  let directory: string;
  let database: Knex;
  // A second connection to the file, as another process has (better-sqlite3, the driver knex runs on).
  let other: { prepare(sql: string): { run(): unknown }; close(): void };

  before(async () => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-busy-'));
    database = openDatabase(loadConfiguration({ TOLLGATE_DATA_DIR: directory }, directory));
    await database.raw('create table counters (name text primary key, value integer not null)');
    await database('counters').insert({ name: 'a', value: 0 });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Database = require('better-sqlite3') as new (file: string) => typeof other;
    other = new Database(path.join(directory, 'tollgate.db'));
  });
  after(async () => {
    other?.close();
    await database?.destroy();
    rmSync(directory, { recursive: true, force: true });
  });

  it('runs a transaction again when another connection committed between its read and its write', async () => {
    let attempts = 0;
    const value = await database.transaction(async (transaction) => {
      attempts += 1;
      const row = (await transaction('counters').where({ name: 'a' }).first()) as { value: number };
      // The other process commits after this transaction's read: its write is then refused SQLITE_BUSY_SNAPSHOT.
      if (attempts === 1) other.prepare("update counters set value = value + 10 where name = 'a'").run();
      await transaction('counters').where({ name: 'a' }).update({ value: row.value + 1 });
      return row.value + 1;
    });
    expect(attempts).to.equal(2);
    // The second attempt read the other process's commit: nothing of either write is lost.
    expect(value).to.equal(11);
    expect(((await database('counters').where({ name: 'a' }).first()) as { value: number }).value).to.equal(11);
  });
});
