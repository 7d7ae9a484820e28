/**
 * Token budgets across a fleet (issue 20): two gateway processes share PostgreSQL and Redis; a device with a 1,000-token
 * daily budget spends 600 tokens through node A and 600 through node B (the request that crosses completes), then is
 * refused with `rateLimited`, reason `token_budget`, on both nodes, with `Retry-After` to 00:00 UTC; another device of
 * the same app is still served. The same for a 1,000-token budget per UTC minute (`Retry-After` to the minute's end)
 * and a per-provider budget per device per day.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis, { Cluster } from 'ioredis';
import { createGatewayCore } from '../../core/server/gateway';
import { DEFAULT_APP_SETTINGS } from '../../core/contract';
import { budgetsFor, secondsToNextUtcMinute, secondsToUtcMidnight } from '../../core/pipeline/token-budget';
import type { AppSettings } from '../../core/contract';
import { RedisRateLimitStore } from '../../plugins/store-redis';
import { FakeUpstream, chatCompletion, respondJson } from '../support/fake-upstream';
import { rawRequest } from '../support/http';
import { serveNode, attestOnNode, fleetEnvironment } from '../support/nodes';
import { requireService, startPostgres, startRedis, startRedisCluster, type RunningPostgres, type RunningRedis } from '../support/services';

/** An OpenAI chat completion reporting 400 + 200 tokens (https://platform.openai.com/docs/api-reference/chat/object). */
const COMPLETION = chatCompletion('Hello', { prompt: 400, completion: 200 }, { id: 'chatcmpl-budget' });

describe('token budgets shared by two nodes through Redis', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let upstream: FakeUpstream;
  let counters: RedisRateLimitStore;
  const nodes: ChildProcess[] = [];
  const directories: string[] = [];
  let urls: [string, string];
  let env: Record<string, string>;
  let app: { id: string; appToken: string };
  /** An app with a 1,000-token budget per device per UTC minute and 1,000 per device per day with openai. */
  let minuteApp: { id: string; appToken: string };
  /** An app with a 1,000-token budget per device per UTC minute only. */
  let minuteOnlyApp: { id: string; appToken: string };

  const attest = (nodeUrl: string, deviceId: string, target = app) => attestOnNode(nodeUrl, { env, dataDirectory: directories[0]! }, target, deviceId);

  /** Waits until the shared counter holds `expected` tokens (the charge lands when the answer ends, asynchronously). */
  async function counterReaches(deviceId: string, expected: number, target = app, settings: Partial<AppSettings> = { deviceDailyTokens: 1000 }): Promise<number> {
    const [budget] = budgetsFor({ ...DEFAULT_APP_SETTINGS, ...settings }, target.id, deviceId, 'openai', Date.now());
    let spent = 0;
    for (let attempt = 0; attempt < 200 && spent < expected; attempt += 1) {
      [spent = 0] = await counters.spent([budget!.key]);
      if (spent < expected) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return spent;
  }

  const chat = (url: string, headers: Record<string, string>) =>
    rawRequest(url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...headers, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[],"max_tokens":100}' });

  before(async function () {
    postgres = await requireService(this, startPostgres);
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, COMPLETION));
    counters = new RedisRateLimitStore(new Redis(redis.url, { lazyConnect: false }));
    env = fleetEnvironment(postgres.url, redis.url, upstream.url);
    for (let index = 0; index < 2; index += 1) directories.push(mkdtempSync(path.join(os.tmpdir(), `tollgate-budget-node-${index}-`)));
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    app = await core.management.createApp({ name: 'budgets', allowDevelopmentAttestation: true, deviceDailyTokens: 1000 });
    await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-budget-0123456789abcdef' });
    minuteApp = await core.management.createApp({ name: 'minute budgets', allowDevelopmentAttestation: true, deviceMinuteTokens: 1000, providerDeviceDailyTokens: { openai: 1000 } });
    await core.management.setSecret({ appId: minuteApp.id, provider: 'openai', value: 'sk-budget-minute-0123456789abcdef' });
    minuteOnlyApp = await core.management.createApp({ name: 'minute budget', allowDevelopmentAttestation: true, deviceMinuteTokens: 1000 });
    await core.management.setSecret({ appId: minuteOnlyApp.id, provider: 'openai', value: 'sk-budget-minute-only-0123456789ab' });
    await core.close();
    const started = await Promise.all(directories.map((directory) => serveNode({ ...env, TOLLGATE_DATA_DIR: directory })));
    for (const node of started) nodes.push(node.child);
    urls = [started[0]!.url, started[1]!.url];
  });
  after(async () => {
    for (const node of nodes) node.kill('SIGKILL');
    await counters?.close();
    await upstream?.close();
    redis?.stop();
    postgres?.stop();
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  it('refuses a device past its 1,000-token day on either node, and only that device', async () => {
    const spender = await attest(urls[0], 'budget-device-1');
    const other = await attest(urls[1], 'budget-device-2');

    expect((await chat(urls[0], spender)).status).to.equal(200);
    expect(await counterReaches('budget-device-1', 600)).to.equal(600);
    // 600 of 1,000 spent: the next request's reservation (114 tokens: 55 bytes of body and its 100-token output limit)
    // fits, so it is admitted; it reports 600 and crosses the budget (to 1,200).
    const crossing = await chat(urls[1], spender);
    expect(crossing.status).to.equal(200);
    expect(JSON.parse(crossing.text())).to.deep.equal(COMPLETION);
    expect(await counterReaches('budget-device-1', 1200)).to.equal(1200);

    const forwardedBefore = upstream.requests.length;
    for (const url of urls) {
      const before = Date.now();
      const refused = await chat(url, spender);
      const after = Date.now();
      expect(refused.status, refused.text()).to.equal(429);
      expect(refused.headers['tollgate-error']).to.equal('rateLimited');
      expect((JSON.parse(refused.text()) as { error: { reason: string } }).error.reason).to.equal('token_budget');
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).to.be.within(secondsToUtcMidnight(after), secondsToUtcMidnight(before));
    }
    expect(upstream.requests.length, 'refused requests never reach the provider').to.equal(forwardedBefore);
    // The stream slot each node took in the same Redis call as the rate limits was given back when the budget refused:
    // the device's open-request set is empty again (no slot leaks until its lease runs out).
    const client = new Redis(redis.url, { lazyConnect: false });
    try {
      const slots = `tollgate:rl:slot:{${app.id}}\u0000s\u0000budget-device-1`;
      let held = -1;
      for (let attempt = 0; attempt < 100 && held !== 0; attempt += 1) {
        held = await client.zcard(slots);
        if (held !== 0) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(held, 'slots still held after the budget refusals').to.equal(0);
    } finally {
      client.disconnect();
    }

    // Another device of the same app is still served, on both nodes.
    for (const url of urls) expect((await chat(url, other)).status).to.equal(200);
  });

  it('refuses a device past its 1,000-token minute on either node until the minute ends, and only that device', async () => {
    const spender = await attest(urls[0], 'minute-device-1', minuteApp);
    const other = await attest(urls[1], 'minute-device-2', minuteApp);
    // The scenario must stay inside one UTC minute (it takes well under a second): start with 15 s of it left at least.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 15_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
    const minute = Math.floor(Date.now() / 60_000);

    expect((await chat(urls[0], spender)).status).to.equal(200);
    expect(await counterReaches('minute-device-1', 600, minuteApp, { deviceMinuteTokens: 1000 })).to.equal(600);
    expect((await chat(urls[1], spender)).status).to.equal(200); // crosses: 1,200
    expect(await counterReaches('minute-device-1', 1200, minuteApp, { deviceMinuteTokens: 1000 })).to.equal(1200);

    const forwardedBefore = upstream.requests.length;
    for (const url of urls) {
      const before = Date.now();
      const refused = await chat(url, spender);
      const after = Date.now();
      expect(refused.status, refused.text()).to.equal(429);
      const error = (JSON.parse(refused.text()) as { error: { reason: string; message: string } }).error;
      expect(error.reason).to.equal('token_budget');
      // Both the minute's (1,200 of 1,000) and the day's openai budget per device (1,200 of 1,000) are used up: the later
      // end, 00:00 UTC, is the one to wait for.
      expect(error.message).to.contain('device per minute').and.to.contain('device with this provider per day');
      expect(Number(refused.headers['retry-after'])).to.be.within(secondsToUtcMidnight(after), secondsToUtcMidnight(before));
    }
    expect(upstream.requests.length, 'refused requests never reach the provider').to.equal(forwardedBefore);
    for (const url of urls) expect((await chat(url, other)).status).to.equal(200);
    expect(Math.floor(Date.now() / 60_000), 'the scenario stayed inside one minute').to.equal(minute);
  });

  it('a minute budget alone: Retry-After runs to the minute\'s end on both nodes', async () => {
    const spender = await attest(urls[1], 'minute-device-3', minuteOnlyApp);
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 15_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
    const minute = Math.floor(Date.now() / 60_000);
    expect((await chat(urls[1], spender)).status).to.equal(200);
    expect(await counterReaches('minute-device-3', 600, minuteOnlyApp, { deviceMinuteTokens: 1000 })).to.equal(600);
    expect((await chat(urls[0], spender)).status).to.equal(200);
    expect(await counterReaches('minute-device-3', 1200, minuteOnlyApp, { deviceMinuteTokens: 1000 })).to.equal(1200);
    for (const url of urls) {
      const before = Date.now();
      const refused = await chat(url, spender);
      const after = Date.now();
      expect(refused.status, refused.text()).to.equal(429);
      const error = (JSON.parse(refused.text()) as { error: { reason: string; message: string } }).error;
      expect(error).to.deep.include({ reason: 'token_budget' });
      expect(error.message).to.contain('device per minute').and.not.to.contain('per day');
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).to.be.within(secondsToNextUtcMinute(after), secondsToNextUtcMinute(before));
      expect(retryAfter).to.be.at.most(60);
    }
    expect(Math.floor(Date.now() / 60_000), 'the scenario stayed inside one minute').to.equal(minute);
  });
});

describe('token budget counters in Redis Cluster', function () {
  this.timeout(60_000);
  let cluster: Awaited<ReturnType<typeof startRedisCluster>>;

  before(async function () {
    cluster = await requireService(this, () => startRedisCluster(3));
  });
  after(() => cluster?.stop());

  it('adds and reads one app\'s day and minute counters (device, app, provider, provider per device) in one shard (shared hash tag), for many apps', async () => {
    const store = new RedisRateLimitStore(new Cluster([{ host: '127.0.0.1', port: cluster.ports[0]! }]) as never);
    try {
      const settings = {
        ...DEFAULT_APP_SETTINGS,
        deviceDailyTokens: 10,
        appDailyTokens: 10,
        providerDailyTokens: { openai: 10 },
        providerDeviceDailyTokens: { openai: 10 },
        deviceMinuteTokens: 10,
        appMinuteTokens: 10,
        providerMinuteTokens: { openai: 10 },
      };
      const now = Date.now();
      for (let index = 0; index < 8; index += 1) {
        const keys = budgetsFor(settings, `app_cluster_${index}`, 'device-1', 'openai', now).map((budget) => budget.key);
        expect(keys).to.have.length(7);
        for (const key of keys) expect(await store.spend(key, 7 + index, 60_000)).to.equal(7 + index);
        expect(await store.spend(keys[0]!, 5, 60_000)).to.equal(12 + index);
        expect(await store.spent(keys)).to.deep.equal([12 + index, ...Array<number>(6).fill(7 + index)]);
      }
      expect(await store.spent(budgetsFor(settings, 'app_cluster_unused', 'device-1', 'openai', now).map((budget) => budget.key))).to.deep.equal(Array<number>(7).fill(0));
    } finally {
      await store.close();
    }
  });
});
