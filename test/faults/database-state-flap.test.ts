/**
 * A database whose reads answer while its writes fail (a full volume, a trigger refusing, a read-only replica after a
 * failover) is one state, "down", told once: the reads of the readiness probe (every 5 s) must not log it "reachable
 * again" between the failed usage writes. Here a real SQLite file gets a trigger that aborts every usage insert.
 */
import { expect } from 'chai';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';

const CHAT = '/v1/proxy/openai/v1/chat/completions';

function stateLines(gateway: TestGateway): string[] {
  return gateway.logs
    .map((line) => JSON.parse(line) as { dependency?: string; msg?: string })
    .filter((line) => line.dependency === 'database')
    .map((line) => line.msg ?? '');
}

describe('database state while reads answer and writes fail', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
  });
  after(async () => {
    await gateway?.gateway.database.raw('drop trigger if exists refuse_usage').catch(() => undefined);
    await gateway?.close();
    await upstream?.close();
  });

  it('is told down once, stays down through successful reads, and is told back once writes succeed', async () => {
    const device = await gateway.provision({ openai: 'sk-flap-0123456789abcdef' });
    const before = stateLines(gateway).length;
    await gateway.gateway.database.raw("create trigger refuse_usage before insert on usage_events begin select raise(abort, 'usage writes refused'); end");
    for (let index = 0; index < 3; index += 1) {
      expect((await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status).to.equal(200);
    }
    // Long enough for a failed usage write and two probes that read successfully (every 5 s).
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const during = stateLines(gateway).slice(before);
    expect(during, JSON.stringify(during)).to.deep.equal(['database is unreachable']);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).to.match(/tollgate_dependency_up\{dependency="database"\} 0/);

    await gateway.gateway.database.raw('drop trigger refuse_usage');
    await gateway.gateway.usage.flush().catch(() => undefined);
    const deadline = Date.now() + 40_000;
    while (!stateLines(gateway).slice(before).includes('database is reachable again') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(stateLines(gateway).slice(before)).to.deep.equal(['database is unreachable', 'database is reachable again']);
  });
});
