/**
 * Outages of the gateway's own dependencies:
 * - PostgreSQL frozen (SIGSTOP of the whole server) for a few seconds under load: no usage event is lost (failed
 *   batches stay buffered and are retried), a request that needs the database (a cold app token, an admin call) is
 *   refused with 503 `serviceUnavailable`/`database_unavailable` and `Retry-After` while the server is still frozen,
 *   `/readyz` answers (failing) while it is still frozen, and the state change is logged once and exported.
 * - A second server on the same SQLite data directory exits non-zero with a clear message; a lock left by a killed
 *   server is taken over.
 * - The usage event of a stream cut at the shutdown deadline is written.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { FakeUpstream, respondChunks } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';
import { metricSample } from '../support/metrics';
import { CLI, openStream, serveNode } from '../support/nodes';
import { spawn } from 'node:child_process';
import { requireService, startPostgres, startRedis, type RunningPostgres } from '../support/services';

const CHAT = '/v1/proxy/openai/v1/chat/completions';

describe('PostgreSQL frozen under load', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async function () {
    postgres = await requireService(this, startPostgres);
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({
      upstreams: { openai: upstream.url },
      env: {
        TOLLGATE_DATABASE_URL: postgres.createDatabase('outage'),
        TOLLGATE_DATABASE_ACQUIRE_TIMEOUT_MS: '1000',
        TOLLGATE_DATABASE_QUERY_TIMEOUT_MS: '1000',
        TOLLGATE_READINESS_TIMEOUT_MS: '1000',
        TOLLGATE_CHANGE_POLL_MS: '200',
      },
    });
  });
  after(async () => {
    try {
      postgres?.thaw();
    } catch {
      // not frozen
    }
    await gateway?.close();
    await upstream?.close();
    postgres?.stop();
  });

  it('loses no usage event, refuses what needs the database with 503 + Retry-After, and /readyz answers while frozen', async () => {
    const device = await gateway.provision({ openai: 'sk-outage-0123456789abcdef' }, { deviceLimitPerMinute: 10_000, appLimitPerMinute: 10_000, maxConcurrentStreamsPerDevice: 1000 });
    const cold = await gateway.createApp({ name: 'Cold' });
    const { adminKey } = await gateway.gateway.management.createAdminKey({ name: 'ops' });
    let sent = 0;
    const fire = async (count: number) => {
      const responses = await Promise.all(Array.from({ length: count }, () => rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })));
      sent += count;
      return responses.map((response) => response.status);
    };
    // The change feed has seen the writes above (its next poll would otherwise empty the caches just warmed).
    await gateway.gateway.directory.poll();
    expect(await fire(20)).to.deep.equal(Array(20).fill(200));

    postgres.freeze();
    let frozen = true;
    // A safety net: never leave the server frozen even if an assertion below hangs.
    const safety = setTimeout(() => {
      frozen = false;
      postgres.thaw();
    }, 60_000);
    try {
      // Load keeps flowing from warm caches while usage batches fail and stay buffered.
      const during: number[] = [];
      for (let round = 0; round < 8; round += 1) {
        during.push(...(await fire(25)));
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(during.every((status) => status === 200), during.join(',')).to.equal(true);

      const ready = await fetch(`${gateway.url}/readyz`);
      expect(frozen, '/readyz waited for the frozen database').to.equal(true);
      expect(ready.status).to.equal(503);
      expect(((await ready.json()) as { checks: Record<string, string> }).checks.database).to.equal('failing');

      const refused = await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: { 'Tollgate-App-Token': cold.appToken, 'Tollgate-Device-Token': device.deviceToken }, body: '{}' });
      expect(frozen, 'the cold-token request waited for the frozen database').to.equal(true);
      // On a failure, the gateway's own error lines say which error was not recognised as the database's.
      expect(refused.status, gateway.logs.filter((line) => line.includes('"level":50')).slice(-3).join('\n')).to.equal(503);
      expect(refused.headers['tollgate-error']).to.equal('serviceUnavailable');
      expect(refused.headers['retry-after']).to.match(/^\d+$/);
      expect(refused.json<{ error: { reason: string } }>().error.reason).to.equal('database_unavailable');

      const admin = await rawRequest(gateway.url, { method: 'GET', path: '/v1/admin/apps', headers: { authorization: `Bearer ${adminKey}` } });
      expect(frozen, 'the admin call waited for the frozen database').to.equal(true);
      expect(admin.status).to.equal(503);
      expect(admin.headers['retry-after']).to.match(/^\d+$/);
      expect(admin.json<{ error: { type: string; reason: string } }>().error).to.include({ type: 'serviceUnavailable', reason: 'database_unavailable' });

      const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(metrics).to.include('tollgate_dependency_up{dependency="database"} 0');
      expect(metrics).to.match(/tollgate_dependency_refusals_total\{cause="database_unavailable"\} [1-9]/);
      expect(metricSample(metrics, 'tollgate_usage_events_buffered')).to.be.greaterThan(0);
    } finally {
      clearTimeout(safety);
      if (frozen) postgres.thaw();
    }

    expect(await fire(20)).to.deep.equal(Array(20).fill(200));
    // Every usage event reaches the database once it is back (the retry back-off is bounded), none twice.
    const written = await gateway.recordedUsage(device.appId, 0, (events) => events.length >= sent, 60_000);
    expect(written).to.have.length(sent);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).to.include('tollgate_usage_events_dropped_total{reason="buffer_full"} 0');
    // The outage is one warn line with its cause (no stack), not one per failed poll or batch; refusals are warn.
    const lines = gateway.logs.map((line) => JSON.parse(line) as { level: number; msg: string; err?: unknown; cause?: string });
    const down = lines.filter((line) => line.msg === 'database is unreachable');
    expect(down).to.have.length(1);
    expect(down[0]!.level).to.equal(40);
    expect(down[0]!.cause).to.be.a('string').and.not.match(/\n\s+at /);
    const refusals = lines.filter((line) => line.msg.startsWith('request refused'));
    expect(refusals.length).to.be.greaterThan(0);
    for (const line of refusals) {
      expect(line.level).to.equal(40);
      expect(line.err).to.equal(undefined);
    }
    expect(lines.filter((line) => line.level >= 50 && /usage|change feed/.test(line.msg))).to.deep.equal([]);
  });

  it('with cold caches, refuses every proxied request with 503 database_unavailable (never 500) until it is back', async () => {
    const device = await gateway.provision({ openai: 'sk-outage-cold-0123456789abcdef' }, { deviceLimitPerMinute: 10_000, appLimitPerMinute: 10_000, maxConcurrentStreamsPerDevice: 1000 });
    // A second node on the same database that never served this app: its caches are cold for it.
    const { TOLLGATE_DATA_DIR: _own, ...shared } = gateway.env;
    const cold = await TestGateway.start({ upstreams: { openai: upstream.url }, env: shared });
    try {
      const fire = async (target: TestGateway, count: number) =>
        Promise.all(Array.from({ length: count }, () => rawRequest(target.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })));
      expect((await fire(gateway, 10)).map((response) => response.status)).to.deep.equal(Array(10).fill(200));
      const reached = upstream.requests.length;
      const mark = cold.logs.length;
      postgres.freeze();
      try {
        // The warm node after another node's change: the entries it knew are served from before the change while
        // their reload cannot answer (bounded, core/storage/cached-directory.ts), and go upstream.
        gateway.gateway.directory.invalidate();
        expect((await fire(gateway, 5)).map((response) => response.status)).to.deep.equal(Array(5).fill(200));
        const servedWarm = upstream.requests.length;
        // The cold node must read the app, its secret and the revocations from a server that accepts connections and
        // never answers (the pool's connections time out, new ones time out too).
        const during: Array<Awaited<ReturnType<typeof rawRequest>>> = [];
        for (let round = 0; round < 4; round += 1) {
          during.push(...(await fire(cold, 25)));
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        const errors = cold.logs.slice(mark).filter((line) => line.includes('"level":50'));
        expect(during.map((response) => response.status), errors.slice(-2).join('\n')).to.deep.equal(Array(100).fill(503));
        for (const response of during) {
          expect(response.headers['retry-after']).to.match(/^\d+$/);
          expect(response.json<{ error: { reason: string } }>().error.reason).to.equal('database_unavailable');
        }
        expect(errors).to.deep.equal([]);
        expect(servedWarm - reached, 'the warm node forwarded its five').to.equal(5);
        expect(upstream.requests.length, 'nothing from the cold node reached the provider').to.equal(servedWarm);
      } finally {
        postgres.thaw();
      }
      // Back: the next requests load what they need again.
      let statuses: number[] = [];
      for (let attempt = 0; attempt < 50; attempt += 1) {
        statuses = (await fire(cold, 10)).map((response) => response.status);
        if (statuses.every((status) => status === 200)) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(statuses).to.deep.equal(Array(10).fill(200));
    } finally {
      await cold.close();
    }
  });
});

describe('one server per SQLite data directory', function () {
  this.timeout(60_000);
  let directory: string;
  before(() => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-lock-'));
  });
  after(() => rmSync(directory, { recursive: true, force: true }));

  it('a second server exits non-zero with a clear message; a killed server\'s lock is taken over', async () => {
    const env = { TOLLGATE_DATA_DIR: directory, TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'), TOLLGATE_LOG_LEVEL: 'warn' };
    const first = await serveNode(env);
    try {
      const second = spawnSync(process.execPath, [CLI, 'serve'], { env: { PATH: process.env.PATH ?? '', ...env, TOLLGATE_PORT: '0' }, encoding: 'utf8', timeout: 30_000 });
      expect(second.status).to.equal(1);
      expect(second.stderr).to.include(`another Tollgate server (pid ${first.child.pid} on host `);
      expect(second.stderr).to.include(`is already serving from the data directory ${directory}`);
      // A CLI command still works next to the running server.
      const listed = spawnSync(process.execPath, [CLI, 'apps', 'list'], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000 });
      expect(listed.status, listed.stderr).to.equal(0);
    } finally {
      first.child.kill('SIGKILL');
      await new Promise((resolve) => first.child.once('exit', resolve));
    }
    const third = await serveNode(env);
    expect((await fetch(`${third.url}/healthz`)).status).to.equal(200);
    third.child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => third.child.once('exit', resolve));
    expect(code).to.equal(0);
  });
});

describe('a stream cut at the shutdown deadline', function () {
  this.timeout(60_000);

  it('still has its usage event written', async () => {
    const upstream = await FakeUpstream.start();
    upstream.respond(respondChunks(['data: {"choices":[{"delta":{"content":"a"}}]}\n\n'], { holdOpen: true }));
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_SHUTDOWN_GRACE_MS: '200' } });
    try {
      const device = await gateway.provision({ openai: 'sk-shutdown-0123456789abcdef' });
      const stream = await openStream(gateway.url, CHAT, device.headers);
      expect(stream.status).to.equal(200);
      await gateway.gateway.close();
      await stream.text();
      const core = await createGatewayCore({ env: gateway.env, workingDirectory: gateway.dataDirectory });
      try {
        const rows = (await core.database('usage_events').where({ app_id: device.appId })) as Array<{ truncated: number | boolean }>;
        expect(rows).to.have.length(1);
        expect(Boolean(rows[0]!.truncated)).to.equal(true);
      } finally {
        await core.close();
      }
    } finally {
      rmSync(gateway.dataDirectory, { recursive: true, force: true });
      await upstream.close();
    }
  });
});

describe('Redis going away and coming back', function () {
  this.timeout(60_000);

  it('logs one line per state change, refuses at warn with the cause, and exports the state and refusals by cause', async function () {
    const redis = await requireService(this, startRedis);
    const port = new URL(redis.url).port;
    const upstream = await FakeUpstream.start();
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_REDIS_URL: redis.url } });
    let revived: ReturnType<typeof spawn> | undefined;
    try {
      const device = await gateway.provision({ openai: 'sk-redis-0123456789abcdef' });
      expect((await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status).to.equal(200);
      redis.stop();
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 50 && statuses.filter((status) => status === 503).length < 3; attempt += 1) {
        const response = await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' });
        statuses.push(response.status);
        if (response.status === 503) expect(response.json<{ error: { reason: string } }>().error.reason).to.equal('rate_limit_store_unavailable');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(statuses.filter((status) => status === 503)).to.have.length(3);
      const down = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(down).to.include('tollgate_dependency_up{dependency="redis"} 0');
      expect(down).to.match(/tollgate_dependency_refusals_total\{cause="rate_limit_store_unavailable"\} [3-9]/);
      expect(down).to.not.match(/error="internalError"/);

      // Redis comes back on the same port: the node reconnects by itself.
      revived = spawn('redis-server', ['--port', port, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      let status = 0;
      for (let attempt = 0; attempt < 200 && status !== 200; attempt += 1) {
        status = (await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' })).status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).to.equal(200);
      const up = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(up).to.include('tollgate_dependency_up{dependency="redis"} 1');

      const lines = gateway.logs.map((line) => JSON.parse(line) as { level: number; msg: string; err?: unknown; cause?: string; reason?: string });
      const changes = lines.filter((line) => /^redis is (un)?reachable/.test(line.msg)).map((line) => [line.level, line.msg]);
      expect(changes).to.deep.equal([
        [30, 'redis is reachable'],
        [40, 'redis is unreachable'],
        [30, 'redis is reachable again'],
      ]);
      const refusals = lines.filter((line) => line.reason === 'rate_limit_store_unavailable' && line.msg.startsWith('request refused'));
      expect(refusals.length).to.be.at.least(3);
      for (const line of refusals) {
        expect(line.level).to.equal(40);
        expect(line.err).to.equal(undefined);
        expect(line.cause).to.be.a('string').and.not.equal('');
      }
    } finally {
      revived?.kill('SIGKILL');
      await gateway.close();
      await upstream.close();
    }
  });
});
