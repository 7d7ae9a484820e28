/**
 * A frozen Redis (SIGSTOP: the server keeps its TCP connections open and answers nothing, as a blackholed network or a
 * long fork would) under load. Every request is answered within the configured command timeout: refused with 503
 * `rate_limit_store_unavailable` while Redis is frozen, never held for the freeze; Redis is reported down (log line,
 * gauge) and up again on SIGCONT, when requests pass again. What was answered 200 is what was stored as usage.
 */
import { expect } from 'chai';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';
import { metricSample, scrapeMetrics } from '../support/metrics';
import { requireService, startRedis, type RunningRedis } from '../support/services';

const CHAT = '/v1/proxy/openai/v1/chat/completions';
const COMMAND_TIMEOUT_MS = 300;
const FREEZE_MS = 15_000;
/**
 * The longest any answer may take: far below the freeze (before command timeouts, requests waited for the whole freeze)
 * yet loose enough for a loaded test machine, where even a 200 took seconds. That refusals are fast is shown by their
 * number: they keep coming all through the freeze.
 */
const LONGEST_MS = FREEZE_MS / 2;

interface Answer {
  readonly startedAt: number;
  readonly tookMs: number;
  readonly status: number;
  readonly reason?: string;
}

describe('Redis frozen (SIGSTOP) under load', function () {
  this.timeout(120_000);
  let redis: RunningRedis;
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async function () {
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({
      upstreams: { openai: upstream.url },
      env: { TOLLGATE_REDIS_URL: redis.url, TOLLGATE_REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) },
    });
  });
  after(async () => {
    try {
      redis?.process.kill('SIGCONT');
    } catch {
      // gone
    }
    await gateway?.close();
    await upstream?.close();
    redis?.stop();
  });

  it('refuses within the command timeout while frozen, never waits for Redis, and recovers on SIGCONT', async () => {
    const device = await gateway.provision({ openai: 'sk-freeze-0123456789abcdef' }, { deviceLimitPerMinute: 100_000, appLimitPerMinute: 100_000, maxConcurrentStreamsPerDevice: 1000 });
    await gateway.gateway.directory.poll();
    const startedAt = Date.now();
    const WARM_UP = 3;
    for (let warm = 0; warm < WARM_UP; warm += 1) expect((await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status).to.equal(200);
    const answers: Answer[] = [];
    let running = true;
    const worker = async () => {
      while (running) {
        const sent = Date.now();
        const response = await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' });
        const answer: Answer = { startedAt: sent, tookMs: Date.now() - sent, status: response.status };
        if (response.status !== 200) (answer as { reason?: string }).reason = response.json<{ error: { reason: string } }>().error.reason;
        answers.push(answer);
        if (response.status !== 200) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const workers = Array.from({ length: 6 }, worker);
    while (answers.length < 12) await new Promise((resolve) => setTimeout(resolve, 50));
    const frozenAt = Date.now();
    redis.process.kill('SIGSTOP');
    let downScrape = '';
    let readyDuringFreeze = 0;
    await new Promise((resolve) => setTimeout(resolve, FREEZE_MS / 2));
    downScrape = await scrapeMetrics(gateway);
    readyDuringFreeze = (await fetch(`${gateway.url}/readyz`)).status;
    await new Promise((resolve) => setTimeout(resolve, FREEZE_MS / 2));
    const thawedAt = Date.now();
    redis.process.kill('SIGCONT');
    // Passing again after SIGCONT.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && !answers.some((answer) => answer.startedAt > thawedAt && answer.status === 200)) await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    running = false;
    await Promise.all(workers);

    const before = answers.filter((answer) => answer.startedAt + answer.tookMs < frozenAt);
    // Started once the requests in flight at the freeze were answered, answered before the thaw.
    const during = answers.filter((answer) => answer.startedAt >= frozenAt + 2000 && answer.startedAt + answer.tookMs < thawedAt);
    // Once one request passed after SIGCONT, every later one passes.
    const recovered = answers.find((answer) => answer.startedAt > thawedAt && answer.status === 200);
    expect(recovered, `no request passed after SIGCONT: ${JSON.stringify(answers.slice(-5))}`).to.not.equal(undefined);
    const after = answers.filter((answer) => answer.startedAt > recovered!.startedAt + recovered!.tookMs);
    const summary = JSON.stringify({ total: answers.length, frozenAt: frozenAt - startedAt, thawedAt: thawedAt - startedAt, sample: answers.slice(0, 5).map((answer) => ({ ...answer, startedAt: answer.startedAt - startedAt })) });
    expect(before.length, `requests answered before the freeze: ${summary}`).to.be.greaterThan(0);
    expect(before.every((answer) => answer.status === 200)).to.equal(true);
    // Refusals kept coming all through the freeze (before the fix, none was answered until Redis was), each one the
    // refusal of a dead Redis.
    expect(during.length, `requests answered during the freeze: ${summary}`).to.be.greaterThan(20);
    expect([...new Set(during.map((answer) => `${answer.status} ${answer.reason}`))]).to.deep.equal(['503 rate_limit_store_unavailable']);
    // None waited for Redis.
    const slowest = Math.max(...answers.map((answer) => answer.tookMs));
    expect(slowest, `slowest answer ${slowest} ms`).to.be.lessThan(LONGEST_MS);
    expect(after.length).to.be.greaterThan(0);
    expect(after.every((answer) => answer.status === 200), JSON.stringify(after.filter((answer) => answer.status !== 200).slice(0, 3))).to.equal(true);

    // Seen and said: the gauge went to 0 during the freeze, back to 1 after; /readyz failed during it.
    expect(metricSample(downScrape, 'tollgate_dependency_up{dependency="redis"}')).to.equal(0);
    expect(readyDuringFreeze).to.equal(503);
    expect(metricSample(await scrapeMetrics(gateway), 'tollgate_dependency_up{dependency="redis"}')).to.equal(1);
    const changes = gateway.logs.map((line) => JSON.parse(line) as { msg: string; cause?: string }).filter((line) => /^redis is (un)?reachable/.test(line.msg));
    expect(changes.map((line) => line.msg)).to.deep.equal(['redis is reachable', 'redis is unreachable', 'redis is reachable again']);
    expect(changes[1]!.cause).to.match(/timed out|did not answer/i);

    // Acknowledged against stored: every 200 has its usage event, and nothing else passed.
    const acknowledged = WARM_UP + answers.filter((answer) => answer.status === 200).length;
    const events = await gateway.recordedUsage(device.appId, startedAt, (recorded) => recorded.filter((event) => event.status === 200).length >= acknowledged);
    expect(events.filter((event) => event.status === 200)).to.have.length(acknowledged);
    expect(upstream.requests.length, 'requests that reached the provider').to.equal(acknowledged);
  });
});
