/**
 * A change made elsewhere while the `apps` table is locked (a long migration, an operator's transaction): the change
 * drops every node's caches, and reloading an app blocks on the lock. Before, proxying stopped (0-4 req/s) while
 * `/readyz` said 200. Now the entries from before the change are served while their reload is slow (bounded: 30 s
 * after the change), `/readyz` says `degraded`, and once the lock is gone the reloaded entries are used.
 */
import { expect } from 'chai';
import knexFactory, { type Knex } from 'knex';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';
import { requireService, startPostgres, type RunningPostgres } from '../support/services';

const CHAT = '/v1/proxy/openai/v1/chat/completions';

describe('app entries while the apps table is locked after a change', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let direct: Knex;

  before(async function () {
    postgres = await requireService(this, startPostgres);
    const url = postgres.createDatabase('stale_entries');
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_DATABASE_URL: url, TOLLGATE_DATABASE_QUERY_TIMEOUT_MS: '3000' } });
    direct = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 3 } });
  });
  after(async () => {
    await gateway?.close();
    await direct?.destroy();
    await upstream?.close();
    postgres?.stop();
  });

  it('keeps serving known apps from their last entry, says degraded, and recovers when the lock goes', async () => {
    const device = await gateway.provision({ openai: 'sk-stale-0123456789abcdef' }, { deviceLimitPerMinute: 10_000, appLimitPerMinute: 10_000 });
    await gateway.gateway.directory.poll();
    expect((await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status).to.equal(200);

    const locker = await direct.transaction();
    try {
      await locker.raw('LOCK TABLE apps IN ACCESS EXCLUSIVE MODE');
      // Another node's change: the change feed moves, and this node drops its caches at its next poll.
      await direct('change_feed').where({ id: 1 }).increment('sequence', 1);
      await gateway.gateway.directory.poll();
      const statuses: string[] = [];
      const until = Date.now() + 4000;
      while (Date.now() < until) {
        const response = await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' });
        statuses.push(response.status === 200 ? '200' : `${response.status} ${response.text()}`);
      }
      expect(statuses.length).to.be.greaterThan(3);
      expect([...new Set(statuses)], `statuses while locked: ${statuses.join(',')}`).to.deep.equal(['200']);
      const ready = await fetch(`${gateway.url}/readyz`);
      expect(ready.status).to.equal(200);
      expect(await ready.json()).to.deep.include({ status: 'degraded' });
      expect(gateway.gateway.directory.staleServed).to.be.greaterThan(0);
    } finally {
      await locker.rollback();
    }
    // The lock gone: requests pass on reloaded entries (no stale one served any more).
    expect((await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status).to.equal(200);
    const served = gateway.gateway.directory.staleServed;
    await gateway.gateway.directory.poll();
    for (let index = 0; index < 5; index += 1) expect((await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status).to.equal(200);
    expect(gateway.gateway.directory.staleServed).to.equal(served);
  });
});
