/**
 * The management API over real HTTP: the OpenAPI document validates and matches the mounted routes; every route
 * refuses missing and wrong credentials; inputs are validated (400 naming the fields, nothing changed); secrets are
 * write-only; device revocation reaches the proxy; sign-in is rate-limited; cookie sessions need their CSRF token; and
 * a canary secret appears in no response of any route.
 */
import { expect } from 'chai';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest } from '../support/http';

const CANARY = 'sk-CANARY-admin-5e1f0c3b9a7d42e8b6c4a2f0e1d3c5b7';

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

describe('management API /v1/admin', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let adminKey: string;
  let device: Provisioned;
  const bodies: string[] = [];

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${adminKey}` }): Promise<Reply> => {
    const response = await fetch(`${gateway.url}/v1/admin${path}`, {
      method,
      headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    bodies.push(text, JSON.stringify([...response.headers]));
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: response.status, headers: response.headers, text, json };
  };

  before(async () => {
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    adminKey = (await gateway.gateway.management.createAdminKey({ name: 'tests' })).adminKey;
    device = await gateway.provision({ openai: CANARY });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('serves an OpenAPI 3.1 document that validates, and every documented route is mounted', async () => {
    const reply = await call('GET', '/openapi.json', undefined, {});
    expect(reply.status).to.equal(200);
    expect(reply.json.openapi).to.equal('3.1.0');
    const { Validator } = await import('@seriousme/openapi-schema-validator');
    const result = await new Validator().validate(reply.json);
    expect(result.errors ?? [], JSON.stringify(result.errors)).to.deep.equal([]);
    expect(result.valid).to.equal(true);
    const operations = Object.values(reply.json.paths as Record<string, Record<string, unknown>>).flatMap((item) => Object.keys(item));
    expect(operations.length).to.be.greaterThan(25);
    // The DTO schemas come from the class-validator decorators.
    expect(reply.json.components.schemas.CreateAppInput.properties.name).to.include({ type: 'string', minLength: 1, maxLength: 200 });
    expect(reply.json.components.schemas.CreateAppInput.required).to.deep.equal(['name']);
  });

  it('refuses missing, malformed, unknown and revoked credentials on every non-public route', async () => {
    const document = (await call('GET', '/openapi.json', undefined, {})).json;
    const revoked = await gateway.gateway.management.createAdminKey({ name: 'revoked' });
    await gateway.gateway.management.revokeAdminKey(revoked.id);
    const wrongCredentials: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer ak_00000000000000000000000000000000' },
      { authorization: 'Bearer not-a-key' },
      { authorization: `Bearer ${revoked.adminKey}` },
      { authorization: `Bearer ${device.appToken}` },
      { cookie: 'tollgate_session=ss_0000000000000000000000000000000000000000000' },
    ];
    let checked = 0;
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, { security?: unknown[] }>>)) {
      for (const [method, operation] of Object.entries(item)) {
        if (Array.isArray(operation.security) && operation.security.length === 0) continue;
        const concrete = path.replace(/\{appId\}/g, device.appId).replace(/\{\w+\}/g, 'x');
        for (const headers of wrongCredentials) {
          const reply = await call(method.toUpperCase(), concrete, method === 'get' ? undefined : {}, headers);
          expect(reply.status, `${method} ${path} with ${JSON.stringify(headers)}`).to.equal(401);
          expect(reply.headers.get('tollgate-error')).to.equal('unauthorized');
          expect(reply.json.error.type).to.equal('unauthorized');
          checked += 1;
        }
      }
    }
    expect(checked).to.be.greaterThan(150);
  });

  it('creates, reads, updates, disables and deletes apps; a token is shown at creation and rotation only', async () => {
    const created = await call('POST', '/apps', { name: 'Admin API app', allowDevelopmentAttestation: true, deviceLimitPerMinute: 30 });
    expect(created.status).to.equal(201);
    expect(created.json.appToken).to.match(/^at_[0-9A-Za-z]{32}$/);
    const appId = created.json.id as string;
    const read = await call('GET', `/apps/${appId}`);
    expect(read.json).to.not.have.property('appToken');
    expect(read.json.settings.deviceLimitPerMinute).to.equal(30);
    const updated = await call('PATCH', `/apps/${appId}`, { appLimitPerMinute: 900, providerLimitsPerMinute: { openai: 10 }, allowedProviders: ['openai'] });
    expect(updated.status).to.equal(200);
    expect(updated.json.settings).to.deep.include({ appLimitPerMinute: 900, deviceLimitPerMinute: 30, providerLimitsPerMinute: { openai: 10 }, allowedProviders: ['openai'] });
    const rotated = await call('POST', `/apps/${appId}/rotate-token`);
    expect(rotated.json.appToken).to.match(/^at_/).and.not.equal(created.json.appToken);
    expect((await call('POST', `/apps/${appId}/disable`)).json.status).to.equal('disabled');
    expect((await call('POST', `/apps/${appId}/enable`)).json.status).to.equal('active');
    expect((await call('GET', '/apps')).json.map((app: { id: string }) => app.id)).to.include(appId);
    expect((await call('DELETE', `/apps/${appId}`)).json).to.deep.equal({ id: appId, deleted: true });
    const gone = await call('GET', `/apps/${appId}`);
    expect(gone.status).to.equal(404);
    expect(gone.json.error.type).to.equal('notFound');
  });

  it('answers invalid input with 400 naming each failing field, and changes nothing', async () => {
    const before = (await call('GET', `/apps/${device.appId}`)).json;
    const invalid = await call('PATCH', `/apps/${device.appId}`, { deviceLimitPerMinute: 0, appleAppId: 'nope', name: 'changed', surprise: true });
    expect(invalid.status).to.equal(400);
    expect(invalid.headers.get('tollgate-error')).to.equal('invalidRequest');
    expect(invalid.json.error.fields).to.have.keys('deviceLimitPerMinute', 'appleAppId', 'surprise');
    expect((await call('GET', `/apps/${device.appId}`)).json).to.deep.equal(before);

    const malformed = await call('POST', '/apps', '{"name": "x",');
    expect(malformed.status).to.equal(400);
    expect(malformed.json.error.message).to.match(/not valid JSON/);
    const latin1 = await rawRequest(gateway.url, { method: 'POST', path: '/v1/admin/apps', headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, body: Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]) });
    expect(latin1.status).to.equal(400);
    expect(JSON.parse(latin1.body.toString()).error.message).to.match(/UTF-8/);
    expect((await call('POST', '/apps', [1, 2])).status).to.equal(400);
    expect((await call('GET', `/apps/${device.appId}/usage?minutes=abc`)).json.error.fields).to.have.key('minutes');
    expect((await call('PUT', `/apps/${device.appId}/secrets/openai`, { value: 'line\nbreak' })).json.error.fields).to.have.key('value');
    expect((await call('GET', '/no-such-route')).status).to.equal(404);
    const wrongMethod = await call('PUT', '/apps');
    expect(wrongMethod.status).to.equal(405);
    expect(wrongMethod.headers.get('allow')).to.equal('GET, POST');
    expect((await call('GET', '/apps')).json).to.have.length(1);
  });

  it('keeps secrets write-only: masked in every answer, the value never returned', async () => {
    const put = await call('PUT', `/apps/${device.appId}/secrets/openai`, { value: CANARY });
    expect(put.status).to.equal(200);
    expect(put.json.masked).to.equal(`sk-…${CANARY.slice(-4)}`);
    const list = await call('GET', `/apps/${device.appId}/secrets`);
    expect(list.json).to.deep.equal([{ appId: device.appId, provider: 'openai', masked: put.json.masked, baseUrl: null, updatedAt: put.json.updatedAt }]);
    expect((await call('PUT', `/apps/${device.appId}/secrets/not-a-provider`, { value: 'x' })).status).to.equal(400);
    // The injected key is the one that was set.
    const proxied = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: device.headers });
    expect(proxied.status).to.equal(200);
    expect(upstream.last().headers.authorization).to.equal(`Bearer ${CANARY}`);
  });

  it('creates development tokens and revokes devices: a revoked device gets attestationFailed on its next request', async () => {
    const token = await call('POST', `/apps/${device.appId}/development-tokens`, { label: 'simulator' });
    expect(token.status).to.equal(201);
    expect(token.json.developmentToken).to.match(/^dt_/);
    const tokens = await call('GET', `/apps/${device.appId}/development-tokens`);
    expect(tokens.json.map((entry: { label: string | null }) => entry.label)).to.include('simulator');
    expect(JSON.stringify(tokens.json)).to.not.include(token.json.developmentToken);
    expect((await call('POST', `/apps/${device.appId}/development-tokens/${token.json.id}/revoke`)).json.revoked).to.equal(true);

    const devices = await call('GET', `/apps/${device.appId}/devices`);
    expect(devices.json.map((entry: { deviceId: string }) => entry.deviceId)).to.include(device.deviceId);
    expect((await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: device.headers })).status).to.equal(200);
    const revoked = await call('POST', `/apps/${device.appId}/devices/${device.deviceId}/revoke`);
    expect(revoked.json).to.deep.equal({ appId: device.appId, deviceId: device.deviceId, revoked: true });
    const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: device.headers });
    expect(refused.status).to.equal(403);
    expect(refused.headers.get('tollgate-error')).to.equal('attestationFailed');
    expect((await call('POST', `/apps/${device.appId}/devices/unknown-device/revoke`)).status).to.equal(404);
  });

  it('summarizes usage: requests per minute, errors by type, latency per provider, top devices', async () => {
    const other = await gateway.provision({ openai: 'sk-other-key-000000000000' });
    for (let index = 0; index < 4; index += 1) await (await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: other.headers })).text();
    await (await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { ...other.headers, 'Tollgate-Device-Token': 'bogus' } })).text();
    // Usage is recorded when each response closes, then written in batches.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await gateway.gateway.usage.flush();
    await gateway.gateway.usage.flush();
    const usage = await call('GET', `/apps/${other.appId}/usage?minutes=60`);
    expect(usage.status).to.equal(200);
    expect(usage.json.totalRequests).to.equal(5);
    expect(usage.json.requestsPerMinute.reduce((sum: number, entry: { requests: number }) => sum + entry.requests, 0)).to.equal(5);
    expect(usage.json.errorsByType).to.deep.equal([{ type: 'attestationFailed', count: 1 }]);
    expect(usage.json.latencyByProvider).to.have.length(1);
    // Latency is the provider's: the request the gateway refused (attestationFailed) never reached it.
    expect(usage.json.latencyByProvider[0]).to.include({ provider: 'openai', requests: 4 });
    expect(usage.json.topDevices).to.deep.equal([{ deviceId: other.deviceId, requests: 4 }]);
    const all = await call('GET', '/usage');
    expect(all.json.totalRequests).to.be.at.least(5);
  });

  it('generates integration code for each platform with the shared generator', async () => {
    for (const platform of ['ios', 'android', 'flutter', 'react-native']) {
      const reply = await call('GET', `/apps/${device.appId}/integration?platform=${platform}&provider=openai&capability=chat`);
      expect(reply.status).to.equal(200);
      expect(reply.json.platform).to.equal(platform);
      expect(reply.json.code).to.include('at_YOUR_APP_TOKEN');
      expect(reply.json.code).to.not.include(CANARY);
    }
    expect((await call('GET', `/apps/${device.appId}/integration?platform=windows`)).status).to.equal(400);
  });

  it('manages admin keys: a revoked key is refused at once; every change is in the audit log with its actor', async () => {
    const created = await call('POST', '/admin-keys', { name: 'ci' });
    expect(created.status).to.equal(201);
    const key = created.json.adminKey as string;
    expect((await call('GET', '/apps', undefined, { authorization: `Bearer ${key}` })).status).to.equal(200);
    expect(JSON.stringify((await call('GET', '/admin-keys')).json)).to.not.include(key);
    await call('DELETE', `/admin-keys/${created.json.id}`);
    expect((await call('GET', '/apps', undefined, { authorization: `Bearer ${key}` })).status).to.equal(401);
    const audit = await call('GET', '/audit?limit=500');
    const actions = audit.json.map((entry: { action: string; actor: string }) => `${entry.actor} ${entry.action}`);
    expect(actions).to.include.members(['key:tests admin.app.create', 'key:tests admin.secret.set', 'key:tests admin.device.revoke', 'key:tests admin.admin_key.revoke']);
    const secretsOnly = await call('GET', '/audit?action=admin.secret.');
    expect(secretsOnly.json.every((entry: { action: string }) => entry.action.startsWith('admin.secret.'))).to.equal(true);
  });

  describe('dashboard sessions', () => {
    const origin = () => gateway.url;
    let cookie = '';
    let csrf = '';

    it('creates the first administrator once with the set-up token', async () => {
      const setupToken = gateway.gateway.setupToken;
      expect(setupToken).to.match(/^su_/);
      const weak = await call('POST', '/setup', { setupToken, username: 'admin', password: 'short' }, {});
      expect(weak.status).to.equal(400);
      expect(weak.json.error.fields).to.have.key('password');
      const reply = await call('POST', '/setup', { setupToken, username: 'admin', password: 'correct horse battery' }, {});
      expect(reply.status).to.equal(201);
      const setCookie = reply.headers.get('set-cookie') ?? '';
      expect(setCookie).to.match(/^tollgate_session=ss_[0-9A-Za-z]{43};/);
      expect(setCookie).to.match(/HttpOnly/).and.match(/SameSite=Strict/);
      cookie = setCookie.split(';')[0]!;
      csrf = reply.json.csrfToken;
      const again = await call('POST', '/setup', { setupToken, username: 'second', password: 'correct horse battery' }, {});
      expect(again.status).to.equal(401);
      expect((await gateway.gateway.management.listApps()).length).to.be.greaterThan(0);
    });

    it('needs the CSRF token (and the same origin) for changes made with the cookie', async () => {
      expect((await call('GET', '/apps', undefined, { cookie })).status).to.equal(200);
      const noToken = await call('POST', '/apps', { name: 'csrf' }, { cookie });
      expect(noToken.status).to.equal(403);
      expect(noToken.json.error.type).to.equal('forbidden');
      expect((await call('POST', '/apps', { name: 'csrf' }, { cookie, 'x-csrf-token': 'wrong' })).status).to.equal(403);
      expect((await call('POST', '/apps', { name: 'csrf' }, { cookie, 'x-csrf-token': csrf, origin: 'https://evil.example' })).status).to.equal(403);
      expect((await gateway.gateway.management.listApps()).map((app) => app.name)).to.not.include('csrf');
      const ok = await call('POST', '/apps', { name: 'csrf' }, { cookie, 'x-csrf-token': csrf, origin: origin() });
      expect(ok.status).to.equal(201);
      const audit = await call('GET', '/audit?action=admin.app.create');
      expect(audit.json[0].actor).to.equal('user:admin');
    });

    it('rate-limits sign-in attempts and answers a wrong name and a wrong password alike', async () => {
      const wrongName = await call('POST', '/session', { username: 'nobody', password: 'x' }, {});
      const wrongPassword = await call('POST', '/session', { username: 'admin', password: 'x' }, {});
      expect(wrongName.status).to.equal(401);
      expect(wrongPassword.status).to.equal(401);
      expect(wrongName.json.error.message).to.equal(wrongPassword.json.error.message);
      let limited: Reply | undefined;
      for (let attempt = 0; attempt < 6 && !limited; attempt += 1) {
        const reply = await call('POST', '/session', { username: 'admin', password: 'wrong' }, {});
        if (reply.status === 429) limited = reply;
      }
      expect(limited?.json.error.type).to.equal('rateLimited');
      expect(Number(limited?.headers.get('retry-after'))).to.be.greaterThan(0);
    });

    it('signs out: the session cookie stops working', async () => {
      expect((await call('DELETE', '/session', undefined, { cookie, 'x-csrf-token': csrf })).status).to.equal(200);
      expect((await call('GET', '/apps', undefined, { cookie })).status).to.equal(401);
    });
  });

  it('never returns the canary secret: not in any answer above, nor on any GET route, nor in the logs', async () => {
    const document = (await call('GET', '/openapi.json', undefined, {})).json;
    for (const path of Object.keys(document.paths)) {
      if (!document.paths[path].get) continue;
      await call('GET', path.replace(/\{appId\}/g, device.appId).replace(/\{provider\}/g, 'openai').replace(/\{\w+\}/g, 'x'));
    }
    expect(bodies.length).to.be.greaterThan(100);
    for (const body of bodies) expect(body).to.not.include(CANARY);
    expect(gateway.logText()).to.not.include(CANARY);
  });

  it('sends security headers on the API and the dashboard', async () => {
    const reply = await call('GET', '/apps');
    expect(reply.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(reply.headers.get('x-frame-options')).to.equal('SAMEORIGIN');
    expect(reply.headers.get('cache-control')).to.equal('no-store');
    const page = await fetch(`${gateway.url}/dashboard/`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-security-policy')).to.include("script-src 'self'").and.include("frame-ancestors 'none'");
    expect(await page.text()).to.include('<main id="main"');
  });
});
