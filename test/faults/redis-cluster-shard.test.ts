/**
 * A Redis Cluster with one master down (shut down without a replica to take over, so a third of the slots are not
 * served). `/readyz` must say so (it said 200), apps whose hash tag lives on the failed shard are refused with 503
 * `rate_limit_store_unavailable` within the command deadline, and apps on the other shards keep being served.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest } from '../support/http';
import { requireService, startRedisCluster, type RunningRedisCluster } from '../support/services';

const CHAT = '/v1/proxy/openai/v1/chat/completions';
const APPS = 20;

describe('Redis Cluster with a failed shard', function () {
  this.timeout(120_000);
  let cluster: RunningRedisCluster;
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async function () {
    cluster = await requireService(this, () => startRedisCluster(3));
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_REDIS_URL: cluster.url, TOLLGATE_REDIS_COMMAND_TIMEOUT_MS: '500' } });
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
    cluster?.stop();
  });

  it('fails /readyz, refuses the failed shard\'s apps promptly and serves the others', async () => {
    const devices: Provisioned[] = [];
    for (let index = 0; index < APPS; index += 1) devices.push(await gateway.provision({ openai: 'sk-cluster-0123456789abcdef' }, { deviceLimitPerMinute: 1000, appLimitPerMinute: 1000 }));
    await gateway.gateway.directory.poll();
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status, await ready.text()).to.equal(200);
    for (const device of devices) expect((await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status).to.equal(200);

    execFileSync('redis-cli', ['-p', String(cluster.ports[0]), 'shutdown', 'nosave']);
    const notReady = await fetch(`${gateway.url}/readyz`);
    const body = (await notReady.json()) as { checks: Record<string, string> };
    expect(notReady.status).to.equal(503);
    expect(body.checks.redis).to.equal('failing');

    const answers = await Promise.all(
      devices.map(async (device) => {
        const sent = Date.now();
        const response = await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' });
        return { status: response.status, reason: response.status === 200 ? undefined : response.json<{ error: { reason: string } }>().error.reason, tookMs: Date.now() - sent };
      }),
    );
    const refused = answers.filter((answer) => answer.status !== 200);
    expect(refused.length, JSON.stringify(answers)).to.be.greaterThan(0);
    expect(refused.length, JSON.stringify(answers)).to.be.lessThan(APPS);
    expect([...new Set(refused.map((answer) => `${answer.status} ${answer.reason}`))]).to.deep.equal(['503 rate_limit_store_unavailable']);
    // Bounded by the deadline on the whole call (retries included), not by reconnect attempts; loose for a loaded machine.
    expect(Math.max(...answers.map((answer) => answer.tookMs))).to.be.lessThan(5000);
  });
});
