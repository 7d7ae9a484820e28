/**
 * Every policy does what it says or refuses to be set (issue 16, deliverable 3; docs/security.md, "Policies that cannot
 * be enforced are refused"):
 * - `assertionMode: "every-request"` is refused, with a typed `validation` error naming `assertionMode`, for an app whose
 *   allowed attestation methods cannot prove a request — through the admin API, the CLI and MCP, which share
 *   core/management;
 * - a development device token is refused by an app in that mode (`assertion_method_unsupported`), never let through;
 * - a production gateway refuses a development device token at the device-token check itself (`development_in_production`),
 *   even when the token is validly signed by that gateway.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');
const APPLE_APP_ID = 'ABCDE12345.com.example.policy';

type ErrorBody = { error: { type: string; reason: string; message: string; fields?: Record<string, string[]> } };

describe('policies that cannot be enforced are refused', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let adminKey: string;

  before(async () => {
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'policies' }));
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const admin = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}/v1/admin${route}`, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: response.status, error: response.headers.get('tollgate-error'), body: (await response.json()) as ErrorBody & Record<string, unknown> };
  };

  it('admin API: every-request is refused with 400 validation naming assertionMode, unless every allowed method can prove a request', async () => {
    // Development attestation only (and nothing that can prove a request).
    const development = await admin('POST', '/apps', { name: 'dev only', allowDevelopmentAttestation: true, assertionMode: 'every-request' });
    expect(development.status).to.equal(400);
    expect(development.error).to.equal('invalidRequest');
    expect(development.body.error.reason).to.equal('validation');
    expect(development.body.error.fields!.assertionMode!.join(' ')).to.match(/development attestation cannot prove a request/).and.match(/no allowed attestation method/);
    // An app with App Attest configured but development attestation still allowed.
    const mixed = await admin('POST', '/apps', { name: 'mixed', appleAppId: APPLE_APP_ID, allowDevelopmentAttestation: true, assertionMode: 'every-request' });
    expect(mixed.status).to.equal(400);
    expect(mixed.body.error.fields!.assertionMode).to.deep.equal(['development attestation cannot prove a request: set allowDevelopmentAttestation to false first']);
    // An app with no method configured at all.
    const bare = await admin('POST', '/apps', { name: 'bare', assertionMode: 'every-request' });
    expect(bare.status).to.equal(400);
    expect(bare.body.error.fields!.assertionMode!.join(' ')).to.match(/set appleAppId \(App Attest\) or androidPackage/);

    // Accepted where it can be enforced; and the app cannot later be made unenforceable.
    const apple = await admin('POST', '/apps', { name: 'apple', appleAppId: APPLE_APP_ID, assertionMode: 'every-request' });
    expect(apple.status, JSON.stringify(apple.body)).to.equal(201);
    const android = await admin('POST', '/apps', { name: 'android', androidPackage: 'com.example.policy', assertionMode: 'every-request' });
    expect(android.status).to.equal(201);
    const appId = apple.body.id as string;
    const enableDevelopment = await admin('PATCH', `/apps/${appId}`, { allowDevelopmentAttestation: true });
    expect(enableDevelopment.status).to.equal(400);
    expect(enableDevelopment.body.error.fields).to.have.property('assertionMode');
    const dropApple = await admin('PATCH', `/apps/${appId}`, { appleAppId: null });
    expect(dropApple.status).to.equal(400);
    const stored = await gateway.gateway.management.getApp(appId);
    expect(stored.settings).to.deep.include({ assertionMode: 'every-request', allowDevelopmentAttestation: false, appleAppId: APPLE_APP_ID });
  });

  it('CLI: apps update --assertion-mode every-request exits 1 with TG_ERR_VALIDATION naming why, and changes nothing', async () => {
    const app = await gateway.createApp({});
    const result = spawnSync(process.execPath, [CLI, 'apps', 'update', '--app', app.appId, '--assertion-mode', 'every-request'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', ...gateway.env, TOLLGATE_LOG_LEVEL: 'warn' },
    });
    expect(result.status, result.stderr).to.equal(1);
    expect(result.stdout).to.equal('');
    expect(result.stderr).to.match(/TG_ERR_VALIDATION: .*assertionMode "every-request" cannot be enforced.*development attestation cannot prove a request/);
    expect((await gateway.gateway.management.getApp(app.appId)).settings.assertionMode).to.equal('exchange');
  });

  it('MCP: update_app answers a typed tool error (invalidRequest, validation, fields), not raw text', async () => {
    const app = await gateway.createApp({});
    const client = new Client({ name: 'policies-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${adminKey}` } } }));
    try {
      const result = (await client.callTool({ name: 'update_app', arguments: { appId: app.appId, assertionMode: 'every-request' } })) as { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: ErrorBody };
      expect(result.isError).to.equal(true);
      const body = JSON.parse(result.content[0]!.text!) as ErrorBody;
      expect(body.error).to.include({ type: 'invalidRequest', reason: 'validation' });
      expect(body.error.fields!.assertionMode!.join(' ')).to.match(/development attestation cannot prove a request/);
      expect(result.structuredContent).to.deep.equal(body);
    } finally {
      await client.close();
    }
  });

  it('a development device token is refused by an app in every-request mode, before the provider sees anything', async () => {
    // A device token issued while the app allowed development attestation, then the app switched to every-request.
    const device = await gateway.provision({ openai: 'sk-policy-0000000000000000' }, { appleAppId: APPLE_APP_ID });
    expect((await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: device.headers })).status).to.equal(200);
    await gateway.gateway.management.updateApp(device.appId, { allowDevelopmentAttestation: false, assertionMode: 'every-request' });
    const before = upstream.requests.length;
    for (const headers of [device.headers, { ...device.headers, 'Tollgate-Request-Time': String(Date.now()), 'Tollgate-Assertion': 'AAAA' }]) {
      const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers });
      expect(response.status).to.equal(403);
      const body = (await response.json()) as ErrorBody;
      expect(body.error).to.include({ type: 'attestationFailed', reason: 'assertion_method_unsupported' });
      expect(body.error.message).to.match(/"development" cannot give/);
    }
    expect(upstream.requests.length).to.equal(before);
  });
});

describe('a production gateway and development device tokens', function () {
  this.timeout(60_000);

  it('refuses a development device token at the device-token check, even one it signed itself', async () => {
    const upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    const production = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_ENV: 'production' } });
    try {
      const app = await production.createApp({ allowDevelopmentAttestation: false });
      await production.setSecret(app.appId, 'openai', 'sk-production-0000000000000');
      // The attest route refuses development attestation in production, so the token is minted with the gateway's own
      // signing key: only the device-token check stands between it and the provider.
      const development = await production.gateway.deviceTokens.issue({ appId: app.appId, deviceId: 'simulator-1', method: 'development', ttlSeconds: 600 });
      const response = await fetch(`${production.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': development.token } });
      expect(response.status).to.equal(403);
      expect(((await response.json()) as ErrorBody).error.reason).to.equal('development_in_production');
      expect(upstream.requests.length).to.equal(0);
      // The same gateway accepts a token of another method signed the same way (the refusal is the method, not the key).
      const other = await production.gateway.deviceTokens.issue({ appId: app.appId, deviceId: 'device-2', method: 'android-key-attestation', ttlSeconds: 600 });
      expect((await fetch(`${production.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': other.token } })).status).to.equal(200);
    } finally {
      await production.close();
      await upstream.close();
    }
  });
});
