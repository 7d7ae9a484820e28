/**
 * `TOLLGATE_SHARED_STORE_FAILURE=local`: Redis stopped under load. Two nodes share Redis; when it goes away the node
 * under test keeps serving, admitting its share of the device's limit (20 per minute over 2 nodes: 10), refuses the
 * rest with 429 (never 503), says so once in its log and in its metrics, stays ready (`/readyz` 200 `degraded`), and
 * goes back to shared limits once Redis is back. Every request answered 200 has its usage event.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';
import { metricSample, scrapeMetrics } from '../support/metrics';
import { requireService, startRedis, type RunningRedis } from '../support/services';

const CHAT = '/v1/proxy/openai/v1/chat/completions';
const DEVICE_LIMIT = 20;

describe('TOLLGATE_SHARED_STORE_FAILURE=local: Redis stopped under load', function () {
  this.timeout(90_000);
  let redis: RunningRedis;
  let revived: ChildProcess | undefined;
  let upstream: FakeUpstream;
  let other: TestGateway;
  let node: TestGateway;

  before(async function () {
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    const env = { TOLLGATE_REDIS_URL: redis.url, TOLLGATE_SHARED_STORE_FAILURE: 'local', TOLLGATE_REDIS_COMMAND_TIMEOUT_MS: '300' };
    // Two nodes on one Redis: the second one's first heartbeat sees both.
    other = await TestGateway.start({ upstreams: { openai: upstream.url }, env });
    node = await TestGateway.start({ upstreams: { openai: upstream.url }, env });
  });
  after(async () => {
    revived?.kill('SIGKILL');
    await node?.close();
    await other?.close();
    await upstream?.close();
    redis?.stop();
  });

  it('keeps traffic flowing within the node\'s share, visible in metrics and logs, and returns to shared state', async () => {
    const device = await node.provision({ openai: 'sk-local-0123456789abcdef' }, { deviceLimitPerMinute: DEVICE_LIMIT, appLimitPerMinute: 10_000 });
    await node.gateway.directory.poll();
    const fromMs = Date.now();
    expect((await rawRequest(node.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status).to.equal(200);
    const healthy = await scrapeMetrics(node);
    expect(metricSample(healthy, 'tollgate_shared_store_local')).to.equal(0);
    expect(metricSample(healthy, 'tollgate_shared_store_nodes')).to.equal(2);

    const port = new URL(redis.url).port;
    redis.stop();
    // A burst of 30 from the device: the node admits its share (10 of 20 per minute), refuses the rest as over the
    // limit. GCRA lets one more through per 60/10 s that the burst lasts.
    const burstStarted = Date.now();
    const responses = await Promise.all(Array.from({ length: 30 }, () => rawRequest(node.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })));
    const burstMs = Date.now() - burstStarted;
    const statuses = responses.map((response) => response.status);
    const admitted = statuses.filter((status) => status === 200).length;
    const share = DEVICE_LIMIT / 2;
    expect(statuses.filter((status) => status !== 200 && status !== 429), `statuses: ${statuses.join(',')}`).to.deep.equal([]);
    expect(admitted).to.be.at.least(share).and.at.most(share + Math.floor(burstMs / ((60_000 / share))));
    for (const response of responses.filter((candidate) => candidate.status === 429)) {
      expect(response.json<{ error: { reason: string } }>().error.reason).to.equal('rate_limited_device');
    }

    const local = await scrapeMetrics(node);
    expect(metricSample(local, 'tollgate_shared_store_local')).to.equal(1);
    expect(metricSample(local, 'tollgate_shared_store_fallbacks_total')).to.equal(1);
    expect(metricSample(local, 'tollgate_shared_store_local_decisions_total')).to.be.at.least(29);
    expect(metricSample(local, 'tollgate_dependency_up{dependency="redis"}')).to.equal(0);
    const ready = await fetch(`${node.url}/readyz`);
    expect(ready.status).to.equal(200);
    expect(await ready.json()).to.deep.include({ status: 'degraded' });
    const warnings = node.logs.map((line) => JSON.parse(line) as { level: number; msg: string; nodes?: number }).filter((line) => line.msg.startsWith('shared store unavailable'));
    expect(warnings.map((line) => [line.level, line.nodes])).to.deep.equal([[40, 2]]);

    // Redis back on the same port: the node goes back to shared limits by itself.
    revived = spawn('redis-server', ['--port', port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const deadline = Date.now() + 20_000;
    while (metricSample(await scrapeMetrics(node), 'tollgate_shared_store_local') !== 0) {
      if (Date.now() > deadline) throw new Error('the node did not return to shared state');
      await rawRequest(node.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(node.logs.some((line) => line.includes('shared store reachable again'))).to.equal(true);

    // Acknowledged against stored: every 200 of the whole run has its usage event.
    const upstreamSeen = upstream.requests.length;
    const events = await node.recordedUsage(device.appId, fromMs, (recorded) => recorded.filter((event) => event.status === 200).length >= upstreamSeen);
    expect(events.filter((event) => event.status === 200)).to.have.length(upstreamSeen);
  });
});
