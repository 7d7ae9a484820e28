/**
 * Two gateway processes share one PostgreSQL and one Redis: a per-device limit of N per minute admits exactly N requests
 * across both nodes fired concurrently; a device revoked through node A is refused by node B; readiness reports Redis;
 * and when Redis goes away the nodes fail closed.
 */
import { expect } from 'chai';
import { attestOnNode, fleetEnvironment } from '../support/nodes';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createGatewayCore } from '../../core/server/gateway';
import { FakeUpstream } from '../support/fake-upstream';
import { rawRequest } from '../support/http';
import { requireService, startPostgres, startRedis, type RunningPostgres, type RunningRedis } from '../support/services';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');
const LIMIT = 6;

function serve(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CLI, 'serve'], { env: { PATH: process.env.PATH ?? '', ...env, TOLLGATE_PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((resolve, reject) => {
    let text = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(text);
      if (match) resolve({ child, url: match[1]! });
    });
    child.once('exit', (code) => reject(new Error(`node exited ${code}: ${text}`)));
  });
}

describe('two nodes on shared PostgreSQL and Redis', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let redis: RunningRedis;
  let upstream: FakeUpstream;
  const nodes: ChildProcess[] = [];
  const directories: string[] = [];
  let urls: [string, string];
  let env: Record<string, string>;
  let app: { id: string; appToken: string };
  let adminKey: string;

  const attest = (nodeUrl: string, deviceId: string) => attestOnNode(nodeUrl, { env, dataDirectory: directories[0]! }, app, deviceId);

  before(async function () {
    postgres = await requireService(this, startPostgres);
    redis = await requireService(this, startRedis);
    upstream = await FakeUpstream.start();
    env = fleetEnvironment(postgres.url, redis.url, upstream.url);
    for (let index = 0; index < 2; index += 1) directories.push(mkdtempSync(path.join(os.tmpdir(), `tollgate-node-${index}-`)));
    const core = await createGatewayCore({ env: { ...env, TOLLGATE_DATA_DIR: directories[0]! }, workingDirectory: directories[0]! });
    app = await core.management.createApp({ name: 'fleet', allowDevelopmentAttestation: true, deviceLimitPerMinute: LIMIT, appLimitPerMinute: 10_000 });
    await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-fleet-0123456789abcdef' });
    ({ adminKey } = await core.management.createAdminKey({ name: 'fleet-admin' }));
    await core.close();
    const started = await Promise.all(directories.map((directory) => serve({ ...env, TOLLGATE_DATA_DIR: directory })));
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

  it('CLI commands on the shared set-up exit (plugin connections close with the command)', () => {
    const result = spawnSync(process.execPath, [CLI, 'apps', 'list'], { env: { PATH: process.env.PATH ?? '', ...env, TOLLGATE_DATA_DIR: directories[0]! }, encoding: 'utf8', timeout: 20_000 });
    expect(result.status, result.stderr).to.equal(0);
    expect((JSON.parse(result.stdout) as { apps: Array<{ id: string }> }).apps.map((listed) => listed.id)).to.include(app.id);
  });

  it('reports Redis in readiness on both nodes', async () => {
    for (const url of urls) {
      const ready = (await (await fetch(`${url}/readyz`)).json()) as { checks: Record<string, string> };
      expect(ready.checks).to.deep.equal({ database: 'ok', cache: 'ok', redis: 'ok' });
    }
  });

  it(`admits exactly ${LIMIT} of ${LIMIT * 2} concurrent requests from one device spread over both nodes`, async () => {
    const headers = await attest(urls[0], 'fleet-device-1');
    const responses = await Promise.all(
      Array.from({ length: LIMIT * 2 }, (_, index) => rawRequest(urls[index % 2]!, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers, body: '{}' })),
    );
    const statuses = responses.map((response) => response.status);
    const detail = `${statuses.join(',')} ${responses.find((response) => response.status !== 200 && response.status !== 429)?.text() ?? ''}`;
    expect(statuses.filter((status) => status === 200), detail).to.have.length(LIMIT);
    expect(statuses.filter((status) => status === 429)).to.have.length(LIMIT);
    for (const response of responses.filter((candidate) => candidate.status === 429)) expect(response.headers['tollgate-error']).to.equal('rateLimited');
  });

  it('refuses on node B a device revoked through node A', async () => {
    const headers = await attest(urls[1], 'fleet-device-2');
    expect((await rawRequest(urls[1], { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers, body: '{}' })).status).to.equal(200);
    const client = new Client({ name: 'fleet-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${urls[0]}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
    const revoked = await client.callTool({ name: 'revoke_device', arguments: { appId: app.id, deviceId: 'fleet-device-2' } });
    await client.close();
    expect((revoked as { isError?: boolean }).isError ?? false).to.equal(false);
    let status = 200;
    let type: unknown;
    for (let attempt = 0; attempt < 50 && status === 200; attempt += 1) {
      const response = await rawRequest(urls[1], { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers, body: '{}' });
      status = response.status;
      type = response.headers['tollgate-error'];
      if (status === 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).to.equal(403);
    expect(type).to.equal('attestationFailed');
  });

  it('fails closed when Redis goes away: readiness reports it and proxied requests are refused', async () => {
    const headers = await attest(urls[0], 'fleet-device-3');
    redis.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ready = await fetch(`${urls[0]}/readyz`);
    expect(ready.status).to.equal(503);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks.redis).to.equal('failing');
    const before = upstream.requests.length;
    const response = await rawRequest(urls[0], { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers, body: '{}' });
    expect(response.status).to.equal(503);
    expect(response.headers['retry-after']).to.equal('1');
    expect(upstream.requests.length).to.equal(before);
  });
});
