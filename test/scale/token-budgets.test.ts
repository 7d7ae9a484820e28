/**
 * Token budgets across a fleet (issue 20): two gateway processes share PostgreSQL and Redis; a device with a 1,000-token
 * daily budget spends 600 tokens through node A and 600 through node B (the request that crosses completes), then is
 * refused with `rateLimited`, reason `token_budget`, on both nodes, with `Retry-After` to 00:00 UTC; another device of
 * the same app is still served.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis, { Cluster } from 'ioredis';
import { createGatewayCore } from '../../core/server/gateway';
import { DEFAULT_APP_SETTINGS } from '../../core/contract';
import { budgetsFor, secondsToUtcMidnight } from '../../core/pipeline/token-budget';
import { RedisRateLimitStore } from '../../plugins/store-redis';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { rawRequest } from '../support/http';
import { serveNode } from '../support/nodes';
import { requireService, startPostgres, startRedis, startRedisCluster, type RunningPostgres, type RunningRedis } from '../support/services';

/** An OpenAI chat completion reporting 400 + 200 tokens (https://platform.openai.com/docs/api-reference/chat/object). */
const COMPLETION = {
  id: 'chatcmpl-budget',
  object: 'chat.completion',
  created: 1741570283,
  model: 'gpt-4o-mini-2024-07-18',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 400, completion_tokens: 200, total_tokens: 600 },
};

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

  async function attest(nodeUrl: string, deviceId: string): Promise<Record<string, string>> {
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    const { developmentToken } = await core.management.createDevelopmentToken(app.id);
    await core.close();
    const response = await fetch(`${nodeUrl}/v1/attest/development`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken },
      body: JSON.stringify({ developmentToken, deviceId }),
    });
    expect(response.status).to.equal(200);
    return { 'tollgate-app-token': app.appToken, 'tollgate-device-token': ((await response.json()) as { deviceToken: string }).deviceToken };
  }

  /** Waits until the shared counter holds `expected` tokens (the charge lands when the answer ends, asynchronously). */
  async function counterReaches(deviceId: string, expected: number): Promise<number> {
    const [budget] = budgetsFor({ ...DEFAULT_APP_SETTINGS, deviceDailyTokens: 1000 }, app.id, deviceId, 'openai', Date.now());
    let spent = 0;
    for (let attempt = 0; attempt < 200 && spent < expected; attempt += 1) {
      [spent = 0] = await counters.spent([budget!.key]);
      if (spent < expected) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return spent;
  }

  const chat = (url: string, headers: Record<string, string>) =>
    rawRequest(url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...headers, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });

  before(async function () {
    postgres = await requireService(this, startPostgres);
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, COMPLETION));
    counters = new RedisRateLimitStore(new Redis(redis.url, { lazyConnect: false }));
    env = {
      TOLLGATE_DATABASE_URL: postgres.url,
      TOLLGATE_REDIS_URL: redis.url,
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_CHANGE_POLL_MS: '100',
      TOLLGATE_PROVIDER_OPENAI_BASE_URL: upstream.url,
      TOLLGATE_LOG_LEVEL: 'warn',
    };
    for (let index = 0; index < 2; index += 1) directories.push(mkdtempSync(path.join(os.tmpdir(), `tollgate-budget-node-${index}-`)));
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    app = await core.management.createApp({ name: 'budgets', allowDevelopmentAttestation: true, deviceDailyTokens: 1000 });
    await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-budget-0123456789abcdef' });
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
    // 600 of 1,000 spent: the next request is admitted, and it crosses the budget (to 1,200).
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

    // Another device of the same app is still served, on both nodes.
    for (const url of urls) expect((await chat(url, other)).status).to.equal(200);
  });
});

describe('token budget counters in Redis Cluster', function () {
  this.timeout(60_000);
  let cluster: Awaited<ReturnType<typeof startRedisCluster>>;

  before(async function () {
    cluster = await requireService(this, () => startRedisCluster(3));
  });
  after(() => cluster?.stop());

  it('adds and reads one app\'s device, app and provider counters in one shard (shared hash tag), for many apps', async () => {
    const store = new RedisRateLimitStore(new Cluster([{ host: '127.0.0.1', port: cluster.ports[0]! }]) as never);
    try {
      const settings = { ...DEFAULT_APP_SETTINGS, deviceDailyTokens: 10, appDailyTokens: 10, providerDailyTokens: { openai: 10 } };
      for (let index = 0; index < 8; index += 1) {
        const keys = budgetsFor(settings, `app_cluster_${index}`, 'device-1', 'openai', Date.now()).map((budget) => budget.key);
        expect(keys).to.have.length(3);
        for (const key of keys) expect(await store.spend(key, 7 + index, 60_000)).to.equal(7 + index);
        expect(await store.spend(keys[0]!, 5, 60_000)).to.equal(12 + index);
        expect(await store.spent(keys)).to.deep.equal([12 + index, 7 + index, 7 + index]);
      }
      expect(await store.spent(budgetsFor(settings, 'app_cluster_unused', 'device-1', 'openai', Date.now()).map((budget) => budget.key))).to.deep.equal([0, 0, 0]);
    } finally {
      await store.close();
    }
  });
});
