/**
 * Token budgets by reservation across a fleet: two gateway processes share PostgreSQL and Redis. A device with a
 * 1,000-token day budget whose answers report 2,000 tokens: 10 requests sent at once, half to each node, admit only the
 * reservations that fit (one Lua script per reservation, atomic across nodes); the second request is refused on either
 * node whether the client asks for gzip or streams without `include_usage`. The reservation scripts keep one app's keys
 * on one Redis Cluster shard.
 *
 * Formats: https://platform.openai.com/docs/api-reference/chat/object and
 * https://platform.openai.com/docs/api-reference/chat-streaming/streaming.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Cluster } from 'ioredis';
import { DEFAULT_APP_SETTINGS } from '../../core/contract';
import { createGatewayCore } from '../../core/server/gateway';
import { budgetsFor } from '../../core/pipeline/token-budget';
import { BYTES_PER_INPUT_TOKEN } from '../../core/pipeline/token-reservation';
import { RedisRateLimitStore } from '../../plugins/store-redis';
import { FakeUpstream, sseEvents, type Responder } from '../support/fake-upstream';
import { rawRequest, type RawResponse } from '../support/http';
import { attestOnNode, serveNode, fleetEnvironment } from '../support/nodes';
import { requireService, startPostgres, startRedis, startRedisCluster, type RunningPostgres, type RunningRedis } from '../support/services';

const USAGE = { prompt_tokens: 1500, completion_tokens: 500, total_tokens: 2000 };
const COMPLETION = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }], usage: USAGE });

/** Answers as OpenAI does: compressed only when asked, streamed when asked (with the usage chunk only when asked). */
const provider: Responder = (request, response) => {
  const body = JSON.parse(request.body.toString()) as { stream?: boolean; stream_options?: { include_usage?: boolean } };
  if (body.stream) {
    const usage = body.stream_options?.include_usage === true;
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = { id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'Hi' } }], ...(usage ? { usage: null } : {}) };
    response.end(sseEvents([chunk, ...(usage ? [{ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [], usage: USAGE }] : [])]).join(''));
    return;
  }
  const gzip = String(request.headers['accept-encoding'] ?? '').includes('gzip');
  response.writeHead(200, { 'content-type': 'application/json', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
  response.end(gzip ? gzipSync(COMPLETION) : COMPLETION);
};

describe('token budgets by reservation, shared by two nodes through Redis', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let upstream: FakeUpstream;
  const nodes: ChildProcess[] = [];
  const directories: string[] = [];
  let urls: [string, string];
  let env: Record<string, string>;
  let app: { id: string; appToken: string };
  let gate: Promise<void> = Promise.resolve();

  before(async function () {
    postgres = await requireService(this, startPostgres);
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    upstream.respond(async (request, response) => {
      await gate;
      await provider(request, response, undefined as never);
    });
    env = fleetEnvironment(postgres.url, redis.url, upstream.url);
    for (let index = 0; index < 2; index += 1) directories.push(mkdtempSync(path.join(os.tmpdir(), `tollgate-reserve-node-${index}-`)));
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    app = await core.management.createApp({ name: 'reservations', allowDevelopmentAttestation: true, deviceDailyTokens: 1000 });
    await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-reserve-fleet-0123456789abcdef' });
    await core.close();
    const started = await Promise.all(directories.map((directory) => serveNode({ ...env, TOLLGATE_DATA_DIR: directory })));
    for (const node of started) nodes.push(node.child);
    urls = [started[0]!.url, started[1]!.url];
  });
  after(async () => {
    for (const node of nodes) node.kill('SIGKILL');
    await upstream?.close();
    redis?.stop();
    postgres?.stop();
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  const attest = (url: string, deviceId: string) => attestOnNode(url, { env, dataDirectory: directories[0]! }, app, deviceId);
  const chat = (url: string, headers: Record<string, string>, body: string) =>
    rawRequest(url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...headers, 'content-type': 'application/json' }, body });
  const reason = (answer: RawResponse) => (answer.status === 429 ? (answer.json() as { error: { reason: string } }).error.reason : undefined);
  /** Until the request's settlement landed: the next one is refused on both nodes (bounded tries, no timing asserted). */
  async function refusedOnBoth(headers: Record<string, string>, body: string): Promise<void> {
    let answers: RawResponse[] = [];
    for (let attempt = 0; attempt < 100; attempt += 1) {
      answers = await Promise.all(urls.map((url) => chat(url, headers, body)));
      if (answers.every((answer) => answer.status === 429)) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    for (const answer of answers) expect([answer.status, reason(answer)]).to.deep.equal([429, 'token_budget']);
  }

  it('10 requests at once on two nodes admit only the reservations that fit; then both nodes refuse', async () => {
    const headers = await attest(urls[0], 'fleet-burst');
    const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 300, messages: [{ role: 'user', content: 'Hi' }] });
    const fit = Math.floor(1000 / (Math.ceil(Buffer.byteLength(body) / BYTES_PER_INPUT_TOKEN) + 300));
    let release: () => void = () => undefined;
    gate = new Promise<void>((resolve) => (release = resolve));
    const before = upstream.requests.length;
    const early: RawResponse[] = [];
    const pending = Array.from({ length: 10 }, (_unused, index) =>
      chat(urls[index % 2]!, headers, body).then((answer) => {
        early.push(answer);
        return answer;
      }),
    );
    while (early.length + upstream.requests.length - before < 10) await new Promise((resolve) => setTimeout(resolve, 10));
    const refusedWhileHeld = [...early];
    release();
    const answers = await Promise.all(pending);
    expect(refusedWhileHeld.map((answer) => [answer.status, reason(answer)])).to.deep.equal(Array(10 - fit).fill([429, 'token_budget']));
    expect(answers.filter((answer) => answer.status === 200)).to.have.length(fit);
    expect(upstream.requests.length - before).to.equal(fit);
    await refusedOnBoth(headers, body);
  });

  it('a client asking for gzip is charged what the provider reported: the second request is refused on either node', async () => {
    const headers = await attest(urls[1], 'fleet-gzip');
    const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 100, messages: [] });
    const first = await chat(urls[1], { ...headers, 'accept-encoding': 'gzip' }, body);
    expect(first.status).to.equal(200);
    expect(upstream.last().headers['accept-encoding']).to.equal('identity');
    expect(first.text()).to.equal(COMPLETION);
    await refusedOnBoth({ ...headers, 'accept-encoding': 'gzip' }, body);
  });

  it('a stream without include_usage is asked for its usage and charged it: the second request is refused on either node', async () => {
    const headers = await attest(urls[0], 'fleet-stream');
    const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 100, stream: true, messages: [] });
    const first = await chat(urls[0], headers, body);
    expect(first.status).to.equal(200);
    expect((JSON.parse(upstream.last().body.toString()) as { stream_options: unknown }).stream_options).to.deep.equal({ include_usage: true });
    expect(first.text()).to.not.contain('total_tokens');
    await refusedOnBoth(headers, body);
  });
});

describe('token budget reservations in Redis Cluster', function () {
  this.timeout(60_000);
  let cluster: Awaited<ReturnType<typeof startRedisCluster>>;

  before(async function () {
    cluster = await requireService(this, () => startRedisCluster(3));
  });
  after(() => cluster?.stop());

  it('reserves and settles one app\'s seven counters in one script (one shard), all or nothing, for many apps', async () => {
    const store = new RedisRateLimitStore(new Cluster([{ host: '127.0.0.1', port: cluster.ports[0]! }]) as never);
    try {
      const settings = { ...DEFAULT_APP_SETTINGS, deviceDailyTokens: 100, appDailyTokens: 100, providerDailyTokens: { openai: 100 }, providerDeviceDailyTokens: { openai: 100 }, deviceMinuteTokens: 100, appMinuteTokens: 100, providerMinuteTokens: { openai: 50 } };
      const now = Date.now();
      for (let index = 0; index < 8; index += 1) {
        const budgets = budgetsFor(settings, `app_reserve_${index}`, 'device-1', 'openai', now);
        const keys = budgets.map((budget) => budget.key);
        const limits = budgets.map((budget) => budget.limit);
        const ttls = keys.map(() => 60_000);
        expect(await store.reserve(keys, limits, 40, ttls)).to.deep.equal({ admitted: true, totals: Array(7).fill(40) });
        // The provider's minute budget (50) has no room for 40 more: nothing is added anywhere.
        expect(await store.reserve(keys, limits, 40, ttls)).to.deep.equal({ admitted: false, totals: Array(7).fill(40) });
        await store.settle(keys, -30, ttls);
        expect(await store.spent(keys)).to.deep.equal(Array(7).fill(10));
        await store.settle(keys, -50, ttls);
        expect(await store.spent(keys), 'never below 0').to.deep.equal(Array(7).fill(0));
      }
    } finally {
      await store.close();
    }
  });
});
