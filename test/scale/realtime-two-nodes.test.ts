/**
 * Realtime sessions on two gateway processes sharing one PostgreSQL and one Redis: open sessions count with open
 * streams per device across both nodes (a device at its maximum through node A is refused by node B, and the refused
 * upgrade never reaches the provider), and a device revoked by the operator has its session on the other node closed
 * with 4403 `device_revoked` within 5 seconds. The provider is a fake socket speaking OpenAI Realtime's events
 * (https://platform.openai.com/docs/api-reference/realtime-server-events).
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WebSocket } from 'ws';
import { createGatewayCore } from '../../core/server/gateway';
import { FakeRealtimeUpstream } from '../support/fake-realtime';
import { attestOnNode, serveNode } from '../support/nodes';
import { requireService, startPostgres, startRedis, type RunningPostgres, type RunningRedis } from '../support/services';

const REALTIME = '/v1/proxy/openai/v1/realtime?model=gpt-realtime';

function connect(url: string, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => reject(Object.assign(new Error(`refused ${response.statusCode}`), { status: response.statusCode, body })));
    });
    socket.once('error', reject);
  });
}

describe('realtime sessions on two nodes sharing PostgreSQL and Redis', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let fake: FakeRealtimeUpstream;
  const nodes: ChildProcess[] = [];
  const directories: string[] = [];
  let urls: [string, string];
  let env: Record<string, string>;
  let app: { id: string; appToken: string };

  before(async function () {
    postgres = await requireService(this, startPostgres);
    redis = await requireService(this, startRedis);
    fake = await FakeRealtimeUpstream.start();
    env = {
      TOLLGATE_DATABASE_URL: postgres.url,
      TOLLGATE_REDIS_URL: redis.url,
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_CHANGE_POLL_MS: '500',
      TOLLGATE_PROVIDER_OPENAI_BASE_URL: fake.url,
      TOLLGATE_LOG_LEVEL: 'warn',
      TOLLGATE_SHUTDOWN_GRACE_MS: '0',
    };
    for (let index = 0; index < 2; index += 1) directories.push(mkdtempSync(path.join(os.tmpdir(), `tollgate-rt-node-${index}-`)));
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    app = await core.management.createApp({ name: 'realtime fleet', allowDevelopmentAttestation: true, maxConcurrentStreamsPerDevice: 1 });
    await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-fleet-realtime-0123456789' });
    await core.close();
    const started = await Promise.all(directories.map((directory) => serveNode({ ...env, TOLLGATE_DATA_DIR: directory })));
    for (const node of started) nodes.push(node.child);
    urls = [started[0]!.url.replace(/^http/, 'ws'), started[1]!.url.replace(/^http/, 'ws')];
  });

  after(async () => {
    for (const node of nodes) node.kill('SIGKILL');
    await fake?.close();
    await redis?.stop();
    await postgres?.stop();
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  const attest = (deviceId: string) => attestOnNode(urls[0].replace(/^ws/, 'http'), { env, dataDirectory: directories[0]! }, app, deviceId);

  it('counts a session on node A against the device\'s open streams on node B', async () => {
    const headers = await attest('device-fleet-slots');
    const first = await connect(`${urls[0]}${REALTIME}`, headers);
    const before = fake.sessions.length;
    const refusal = await connect(`${urls[1]}${REALTIME}`, headers).then(
      () => ({ status: 101, body: '' }),
      (error: { status: number; body: string }) => error,
    );
    expect(refusal.status).to.equal(429);
    expect(JSON.parse(refusal.body).error.reason).to.equal('rate_limited_concurrent');
    expect(fake.sessions.length).to.equal(before);
    // Once the first session ends, its slot is free on both nodes.
    const closed = new Promise((resolve) => first.once('close', resolve));
    first.close(1000);
    await closed;
    let second: WebSocket | undefined;
    for (let attempt = 0; attempt < 50 && !second; attempt += 1) {
      second = await connect(`${urls[1]}${REALTIME}`, headers).catch(async () => {
        await new Promise((resolve) => setTimeout(resolve, 100));
        return undefined;
      });
    }
    expect(second, 'a session through node B once the slot is given back').not.to.equal(undefined);
    second!.close(1000);
  });

  it('closes a session on node B with 4403 device_revoked when the device is revoked through another process', async () => {
    const headers = await attest('device-fleet-revoked');
    const client = await connect(`${urls[1]}${REALTIME}`, headers);
    const closed = new Promise<{ code: number; reason: string }>((resolve) => client.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    try {
      await core.management.revokeDevice(app.id, 'device-fleet-revoked');
    } finally {
      await core.close();
    }
    // The protocol's bound (a revocation closes the device's sessions within 5 seconds on every node).
    const result = await Promise.race([closed, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5000))]);
    expect(result).to.deep.equal({ code: 4403, reason: 'device_revoked' });
  });
});
