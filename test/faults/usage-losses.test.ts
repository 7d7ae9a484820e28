/**
 * Usage events lost while the database refuses them are said when they are lost, with their reason and count: the
 * buffer's overflow once a second at most, and what is still unwritten at shutdown. Here the database is a real SQLite
 * file without the usage table (every batch insert fails), so every event recorded is lost, and the counts told must
 * add up to exactly the events recorded.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { UsageRecorder, type UsageDropReason } from '../../core/storage/usage-recorder';
import type { UsageEvent } from '../../core/storage/repositories';

function event(index: number): UsageEvent {
  return { appId: 'app_lost', deviceId: 'device', provider: 'openai', status: 200, errorType: null, latencyMs: 1, bytesIn: 0, bytesOut: 0, truncated: false, createdAt: Date.now(), requestId: `request-${index}` };
}

describe('lost usage events are told when they are lost', function () {
  this.timeout(20_000);
  let directory: string;
  let database: Knex;

  before(() => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-usage-loss-'));
    database = knexFactory({ client: 'better-sqlite3', connection: { filename: path.join(directory, 'no-usage-table.db') }, useNullAsDefault: true });
  });
  after(async () => {
    await database.destroy();
    rmSync(directory, { recursive: true, force: true });
  });

  it('tells buffer_full within a second of the overflow and shutdown at stop; the counts add up to every event', async () => {
    const told: Array<[UsageDropReason, number]> = [];
    let failures = 0;
    const recorder = new UsageRecorder(database, {
      flushIntervalMs: 10,
      batchSize: 5,
      maxBuffered: 10,
      retryBaseMs: 50,
      onError: () => (failures += 1),
      onDropped: (reason, count) => told.push([reason, count]),
    });
    recorder.start();
    for (let index = 0; index < 25; index += 1) recorder.record(event(index));
    const deadline = Date.now() + 5000;
    while (!told.some(([reason]) => reason === 'buffer_full') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(told).to.deep.equal([['buffer_full', 15]]);
    expect(failures).to.equal(1);
    await recorder.stop();
    expect(told).to.deep.equal([
      ['buffer_full', 15],
      ['shutdown', 10],
    ]);
    expect(recorder.written).to.equal(0);
    expect(recorder.droppedByReason).to.deep.equal({ buffer_full: 15, shutdown: 10 });
  });
});
