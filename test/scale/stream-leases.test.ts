/**
 * Open-request slots are leases (issue 17, docs/decisions/2026-11-24-stream-slot-leases.md):
 * - two nodes on one PostgreSQL and one Redis: a device holding its maximum of open streams through node A is refused
 *   by node B; node A is killed with SIGKILL; the device streams again through node B once A's leases lapse (short
 *   leases here: TOLLGATE_STREAM_LEASE_MS=1500; the test waits at most 30 s, the documented bound of the defaults).
 * - the same per-device limits, enforced exactly through two nodes on a real three-master Redis Cluster
 *   (`redis-cluster://…`): every multi-key script runs on one shard thanks to the `{app}` hash tag.
 */
import { expect } from 'chai';
import Redis from 'ioredis';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { FakeUpstream, respondChunks } from '../support/fake-upstream';
import { rawRequest } from '../support/http';
import { openStream, serveNode, attestOnNode } from '../support/nodes';
import { RedisRateLimitStore } from '../../plugins/store-redis';
import { requireService, startPostgres, startRedis, startRedisCluster, type RunningPostgres } from '../support/services';

const CHAT = '/v1/proxy/openai/v1/chat/completions';

/** An OpenAI-style chat completion chunk (https://platform.openai.com/docs/api-reference/chat-streaming). */
const chunk = (content: string) => `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] })}\n\n`;

interface Fleet {
  readonly urls: [string, string];
  readonly nodes: ChildProcess[];
  readonly env: Record<string, string>;
  readonly directories: string[];
  readonly appId: string;
  readonly appToken: string;
  attest(nodeUrl: string, deviceId: string): Promise<Record<string, string>>;
  stop(): void;
}

async function startFleet(databaseUrl: string, redisUrl: string, upstream: FakeUpstream, settings: Record<string, unknown>, extraEnv: Record<string, string> = {}): Promise<Fleet> {
  const env: Record<string, string> = {
    TOLLGATE_DATABASE_URL: databaseUrl,
    TOLLGATE_REDIS_URL: redisUrl,
    TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
    TOLLGATE_CHANGE_POLL_MS: '100',
    TOLLGATE_PROVIDER_OPENAI_BASE_URL: upstream.url,
    TOLLGATE_LOG_LEVEL: 'warn',
    TOLLGATE_SHUTDOWN_GRACE_MS: '0',
    ...extraEnv,
  };
  const directories = [0, 1].map((index) => mkdtempSync(path.join(os.tmpdir(), `tollgate-lease-node-${index}-`)));
  const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
  const app = await core.management.createApp({ name: 'leases', allowDevelopmentAttestation: true, ...settings });
  await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-lease-0123456789abcdef' });
  await core.close();
  const started = await Promise.all(directories.map((directory) => serveNode({ ...env, TOLLGATE_DATA_DIR: directory })));
  const nodes = started.map((node) => node.child);
  return {
    urls: [started[0]!.url, started[1]!.url],
    nodes,
    env,
    directories,
    appId: app.id,
    appToken: app.appToken,
    attest: (nodeUrl, deviceId) => attestOnNode(nodeUrl, { env, dataDirectory: directories[0]! }, app, deviceId),
    stop() {
      for (const node of nodes) node.kill('SIGKILL');
      for (const directory of directories) rmSync(directory, { recursive: true, force: true });
    },
  };
}

describe('open-request slots are leases: a crashed node does not lock a device out', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let upstream: FakeUpstream;
  let fleet: Fleet;

  before(async function () {
    postgres = await requireService(this, startPostgres);
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    // A streamed answer stays open until the gateway goes away; a non-streamed one answers at once.
    upstream.on((request) => request.body.includes('"stream":true'), respondChunks([chunk('Hel'), chunk('lo')], { holdOpen: true }));
    fleet = await startFleet(postgres.url, redis.url, upstream, { maxConcurrentStreamsPerDevice: 3, deviceLimitPerMinute: 1000, appLimitPerMinute: 10_000 }, { TOLLGATE_STREAM_LEASE_MS: '1500' });
  });
  after(async () => {
    fleet?.stop();
    await upstream?.close();
    redis?.stop();
    postgres?.stop();
  });

  it('after kill -9 of the node holding the device\'s 3 open streams, the device streams again through the other node', async () => {
    const headers = await fleet.attest(fleet.urls[0], 'lease-device-1');
    const streams = await Promise.all([0, 1, 2].map(() => openStream(fleet.urls[0], CHAT, headers)));
    expect(streams.map((stream) => stream.status)).to.deep.equal([200, 200, 200]);
    // The slots are shared: node B refuses a fourth while A's streams run, and keeps refusing for longer than one lease
    // (A renews them), so the leases really are renewed rather than merely long.
    for (let attempt = 0; attempt < 4; attempt += 1) {
      const refused = await rawRequest(fleet.urls[1], { method: 'POST', path: CHAT, headers, body: '{}' });
      expect(refused.status).to.equal(429);
      expect(refused.json<{ error: { reason: string } }>().error.reason).to.equal('rate_limited_concurrent');
      await new Promise((resolve) => setTimeout(resolve, 600));
    }

    fleet.nodes[0]!.kill('SIGKILL');
    await new Promise<void>((resolve) => fleet.nodes[0]!.once('exit', () => resolve()));
    for (const stream of streams) stream.close();

    // Retries keep coming (each refused attempt must not extend anything); within the documented 30 s bound the device
    // is admitted again, and then up to its full limit of 3.
    const deadline = Date.now() + 30_000;
    let admitted = await openStream(fleet.urls[1], CHAT, headers);
    while (admitted.status !== 200 && Date.now() < deadline) {
      admitted.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      admitted = await openStream(fleet.urls[1], CHAT, headers);
    }
    expect(admitted.status, 'the device is still locked out').to.equal(200);
    const more = await Promise.all([0, 1].map(() => openStream(fleet.urls[1], CHAT, headers)));
    expect(more.map((stream) => stream.status)).to.deep.equal([200, 200]);
    const fourth = await rawRequest(fleet.urls[1], { method: 'POST', path: CHAT, headers, body: '{}' });
    expect(fourth.status).to.equal(429);
    for (const stream of [admitted, ...more]) stream.close();
  });

  it('in Redis, refused attempts extend nothing: a holder that stops renewing is gone one lease later however often others retry', async () => {
    const store = new RedisRateLimitStore(new Redis(redis.url));
    try {
      const key = '{app_test}\u0000s\u0000retry-device';
      expect(await store.acquireSlot(key, 2, 1000, 'crashed-1')).to.equal(true);
      expect(await store.acquireSlot(key, 2, 1000, 'alive')).to.equal(true);
      // 'alive' keeps renewing; 'crashed-1' does not; a third party retries all the while and is refused.
      let admitted = false;
      for (let attempt = 0; attempt < 60 && !admitted; attempt += 1) {
        await store.renewSlot(key, 'alive', 1000);
        admitted = await store.acquireSlot(key, 2, 1000, `retry-${attempt}`);
        if (!admitted) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(admitted).to.equal(true);
      // The renewed holder kept its slot: the set is full again.
      expect(await store.acquireSlot(key, 2, 1000, 'one-more')).to.equal(false);
      // A lapsed lease is not revived by a late renewal.
      await store.renewSlot(key, 'crashed-1', 1000);
      const probe = new Redis(redis.url);
      const members = await probe.zrange(`tollgate:rl:slot:${key}`, 0, -1);
      probe.disconnect();
      expect(members).to.not.include('crashed-1');
      expect(members).to.include('alive');
    } finally {
      await store.close();
    }
  });

  it('a slot given back at the end of a response is free at once on the other node', async () => {
    const headers = await fleet.attest(fleet.urls[1], 'lease-device-2');
    for (let round = 0; round < 5; round += 1) {
      const responses = await Promise.all([0, 1, 2].map(() => rawRequest(fleet.urls[1], { method: 'POST', path: CHAT, headers, body: '{}' })));
      expect(responses.map((response) => response.status)).to.deep.equal([200, 200, 200]);
    }
  });
});

describe('Redis Cluster (three masters): limits enforced exactly through two nodes', function () {
  this.timeout(120_000);
  const LIMIT = 6;
  let postgres: RunningPostgres;
  let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
  let upstream: FakeUpstream;
  let fleet: Fleet;

  before(async function () {
    postgres = await requireService(this, startPostgres);
    cluster = await requireService(this, () => startRedisCluster(3));
    upstream = await FakeUpstream.start();
    fleet = await startFleet(postgres.url, cluster.url, upstream, { deviceLimitPerMinute: LIMIT, appLimitPerMinute: 10_000, providerLimitsPerMinute: { openai: 10_000 }, deviceDailyQuota: 100_000 });
  });
  after(async () => {
    fleet?.stop();
    await upstream?.close();
    cluster?.stop();
    postgres?.stop();
  });

  it('reports the cluster ready on both nodes', async () => {
    for (const url of fleet.urls) {
      const ready = (await (await fetch(`${url}/readyz`)).json()) as { checks: Record<string, string> };
      expect(ready.checks.redis).to.equal('ok');
    }
  });

  it(`admits exactly ${LIMIT} of ${LIMIT * 2} concurrent requests from one device spread over both nodes (every rule in one script)`, async () => {
    const headers = await fleet.attest(fleet.urls[0], 'cluster-device-1');
    const responses = await Promise.all(Array.from({ length: LIMIT * 2 }, (_, index) => rawRequest(fleet.urls[index % 2]!, { method: 'POST', path: CHAT, headers, body: '{}' })));
    const statuses = responses.map((response) => response.status);
    const detail = `${statuses.join(',')} ${responses.find((response) => response.status !== 200 && response.status !== 429)?.text() ?? ''}`;
    expect(statuses.filter((status) => status === 200), detail).to.have.length(LIMIT);
    expect(statuses.filter((status) => status === 429), detail).to.have.length(LIMIT);
    for (const response of responses.filter((candidate) => candidate.status === 429)) expect(response.json<{ error: { reason: string } }>().error.reason).to.equal('rate_limited_device');
  });

  it('spreads devices of many apps over the shards (the hash tag is the app, not one fixed slot)', async () => {
    const core = await createGatewayCore({ env: { ...fleet.env, TOLLGATE_DATA_DIR: fleet.directories[0]! }, workingDirectory: fleet.directories[0]! });
    const slots = new Set<number>();
    try {
      for (let index = 0; index < 8; index += 1) {
        const app = await core.management.createApp({ name: `spread-${index}` });
        const probe = new Redis(cluster.ports[0]!, '127.0.0.1');
        slots.add(Number(await probe.cluster('KEYSLOT', `tollgate:rl:{${app.id}}\u0000d\u0000x`)));
        probe.disconnect();
      }
    } finally {
      await core.close();
    }
    expect(slots.size).to.be.greaterThan(1);
  });
});
