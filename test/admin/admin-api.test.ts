/**
 * The management API over real HTTP: the OpenAPI document validates and matches the mounted routes; every route
 * refuses missing and wrong credentials; inputs are validated (400 naming the fields, nothing changed); secrets are
 * write-only; device revocation reaches the proxy; sign-in is rate-limited; cookie sessions need their CSRF token; and
 * a canary secret appears in no response of any route.
 */
import { expect } from 'chai';
import { AuditRepository } from '../../core/storage/repositories';
import net from 'node:net';
import { FakeUpstream, respondJson, type RecordedRequest } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest } from '../support/http';

const CANARY = 'sk-CANARY-admin-5e1f0c3b9a7d42e8b6c4a2f0e1d3c5b7';

/** A loopback port nothing listens on (an unreachable provider). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

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
    // Anthropic shares the recording fake upstream; Groq points at a closed port (an unreachable provider).
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, anthropic: upstream.url, groq: `http://127.0.0.1:${await closedPort()}` } });
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
    expect(list.json).to.deep.equal([{ appId: device.appId, provider: 'openai', masked: put.json.masked, baseUrl: null, updatedAt: put.json.updatedAt, lastUsedAt: null }]);
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
    expect(devices.json.devices.map((entry: { deviceId: string }) => entry.deviceId)).to.include(device.deviceId);
    expect((await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: device.headers })).status).to.equal(200);
    const revoked = await call('POST', `/apps/${device.appId}/devices/${device.deviceId}/revoke`);
    expect(revoked.json).to.deep.equal({ appId: device.appId, deviceId: device.deviceId, revoked: true });
    const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: device.headers });
    expect(refused.status).to.equal(403);
    expect(refused.headers.get('tollgate-error')).to.equal('attestationFailed');
    expect((await call('POST', `/apps/${device.appId}/devices/unknown-device/revoke`)).status).to.equal(404);
  });

  /** Waits until the app's `count` usage events are written (TestGateway.recordedUsage), then for the key marks of the batch. */
  const settle = async (appId: string, count: number) => {
    await gateway.recordedUsage(appId, 0, (events) => events.length === count);
    await gateway.gateway.usage.flush();
  };

  it('shows when each provider key was last used (written with the usage batches), moved only by forwarded requests, reset when the key is replaced', async () => {
    const app = await gateway.provision({ openai: 'sk-last-used-0123456789abcdef0123' });
    const secrets = async () => (await call('GET', `/apps/${app.appId}/secrets`)).json as Array<{ provider: string; lastUsedAt: string | null; masked: string }>;
    expect((await secrets())[0]!.lastUsedAt).to.equal(null);
    for (let index = 0; index < 2; index += 1) expect((await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: app.headers }).then(async (response) => (await response.text(), response.status)))).to.equal(200);
    await settle(app.appId, 2);
    const log = (await call('GET', `/apps/${app.appId}/requests?limit=1`)).json.requests[0];
    const used = (await secrets())[0]!;
    // The time of the newest forwarded request, as the request log has it; no value, only the mask.
    expect(used.lastUsedAt).to.equal(log.createdAt);
    expect(used.masked).to.equal('sk-…0123');
    // A request the gateway refused never reached the provider with the key: "last used" stays.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { ...app.headers, 'Tollgate-Device-Token': 'bogus' } }).then(async (response) => (await response.text(), response.status)))).to.equal(403);
    await settle(app.appId, 3);
    expect((await secrets())[0]!.lastUsedAt).to.equal(log.createdAt);
    // A new value has not been used yet.
    await call('PUT', `/apps/${app.appId}/secrets/openai`, { value: 'sk-last-used-replaced-0123456789ab' });
    expect((await secrets())[0]!.lastUsedAt).to.equal(null);
  });

  describe('test this key (POST /apps/{appId}/secrets/{provider}/test)', () => {
    const GOOD = 'sk-keycheck-good-0123456789abcdef';
    const REVOKED = 'sk-keycheck-revoked-0123456789abcd';
    const MARKER = 'UPSTREAM-BODY-MARKER';
    let app: Provisioned;
    let checks: RecordedRequest[] = [];

    before(async () => {
      app = await gateway.provision({ openai: GOOD });
      // OpenAI "List models" (https://platform.openai.com/docs/api-reference/models/list) with the key it was given, and
      // its 401 for a wrong key (https://platform.openai.com/docs/guides/error-codes/api-errors); Anthropic "List Models"
      // (https://docs.anthropic.com/en/api/models-list). Every request is recorded, with the key it carried.
      upstream.on(/^\/v1\/models$/, (request, response) => {
        checks.push(request);
        const key = request.headers.authorization ?? request.headers['x-api-key'];
        if (key === `Bearer ${GOOD}` || key === GOOD) {
          respondJson(200, { object: 'list', data: [{ id: 'gpt-4o-mini', object: 'model', created: 1686935002, owned_by: MARKER }] })(request, response, undefined as never);
        } else if (key === `Bearer ${REVOKED}`) {
          respondJson(401, { error: { message: `Incorrect API key provided: ${REVOKED.slice(0, 8)}****. ${MARKER}`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } })(request, response, undefined as never);
        } else {
          respondJson(500, { error: { message: `The server had an error. ${MARKER}`, type: 'server_error', param: null, code: null } })(request, response, undefined as never);
        }
      });
    });
    beforeEach(() => {
      checks = [];
    });

    it('answers ok for a key the provider accepts: one GET v1/models with the stored key, on the manifest host, nothing of the key or the body returned', async () => {
      const reply = await call('POST', `/apps/${app.appId}/secrets/openai/test`);
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.json).to.include({ appId: app.appId, provider: 'openai', outcome: 'ok', status: 200, request: 'GET v1/models' });
      expect(reply.json.latencyMs).to.be.a('number').and.at.least(0);
      expect(Object.keys(reply.json).sort()).to.deep.equal(['appId', 'checkedAt', 'latencyMs', 'outcome', 'provider', 'request', 'status']);
      expect(checks).to.have.length(1);
      expect(checks[0]).to.deep.include({ method: 'GET', url: '/v1/models' });
      expect(checks[0]!.headers.authorization).to.equal(`Bearer ${GOOD}`);
      expect(checks[0]!.headers['tollgate-app-token']).to.equal(undefined);
      expect(reply.text).to.not.include(GOOD).and.not.include(MARKER);
      // The client cannot pick the host or the path: a body and a query are not read.
      const steered = await call('POST', `/apps/${app.appId}/secrets/openai/test?url=http://attacker.example/&path=files`, { baseUrl: 'http://attacker.example', path: 'files' });
      expect(steered.json.outcome).to.equal('ok');
      expect(checks.map((request) => request.url)).to.deep.equal(['/v1/models', '/v1/models']);
    });

    it('answers rejected (the upstream 401) for a key the provider refuses, unexpected for another status, never the provider body', async () => {
      await gateway.setSecret(app.appId, 'openai', REVOKED);
      const rejected = await call('POST', `/apps/${app.appId}/secrets/openai/test`);
      expect(rejected.json).to.include({ outcome: 'rejected', status: 401 });
      expect(checks[0]!.headers.authorization).to.equal(`Bearer ${REVOKED}`);
      expect(rejected.text).to.not.include(REVOKED.slice(0, 8)).and.not.include(MARKER).and.not.include('Incorrect API key');
      await gateway.setSecret(app.appId, 'openai', 'sk-keycheck-other-0123456789abcdef');
      const unexpected = await call('POST', `/apps/${app.appId}/secrets/openai/test`);
      expect(unexpected.json).to.include({ outcome: 'unexpected', status: 500 });
      expect(unexpected.text).to.not.include(MARKER);
      await gateway.setSecret(app.appId, 'openai', GOOD);
    });

    it('sends a header-style key as the manifest says (Anthropic x-api-key with its version header)', async () => {
      await gateway.setSecret(app.appId, 'anthropic', GOOD);
      const reply = await call('POST', `/apps/${app.appId}/secrets/anthropic/test`);
      expect(reply.json).to.include({ outcome: 'ok', status: 200 });
      expect(checks[0]!.headers['x-api-key']).to.equal(GOOD);
      expect(checks[0]!.headers['anthropic-version']).to.equal('2023-06-01');
      expect(checks[0]!.headers.authorization).to.equal(undefined);
    });

    it('answers unreachable when the provider does not answer', async () => {
      await gateway.setSecret(app.appId, 'groq', 'gsk_keycheck_0123456789abcdefghij');
      const reply = await call('POST', `/apps/${app.appId}/secrets/groq/test`);
      expect(reply.status).to.equal(200);
      expect(reply.json).to.include({ outcome: 'unreachable', status: null, request: 'GET v1/models' });
    });

    it('refuses a provider without a key check (key_check_unsupported) and an app without the key (404); writes each test to the audit log', async () => {
      await gateway.setSecret(app.appId, 'cohere', 'cohere-keycheck-0123456789abcdefgh');
      const unsupported = await call('POST', `/apps/${app.appId}/secrets/cohere/test`);
      expect(unsupported.status).to.equal(400);
      expect(unsupported.json.error).to.include({ type: 'invalidRequest', reason: 'key_check_unsupported' });
      expect(checks).to.have.length(0);
      const missing = await call('POST', `/apps/${app.appId}/secrets/mistral/test`);
      expect(missing.status).to.equal(404);
      expect((await call('POST', `/apps/${app.appId}/secrets/not-a-provider/test`)).status).to.equal(404);
      const audit = (await call('GET', `/audit?action=admin.secret.test`)).json as Array<{ actor: string; target: string; details: { outcome: string; status: number | null } }>;
      const mine = audit.filter((entry) => entry.target.startsWith(`${app.appId}/`)).map((entry) => `${entry.actor} ${entry.target.split('/')[1]} ${entry.details.outcome} ${entry.details.status}`);
      expect(mine).to.include.members(['key:tests openai ok 200', 'key:tests openai rejected 401', 'key:tests openai unexpected 500', 'key:tests anthropic ok 200', 'key:tests groq unreachable null']);
      expect(JSON.stringify(audit)).to.not.include(GOOD).and.not.include(REVOKED);
    });
  });

  it('lists devices searched by id prefix and platform, paged with a total; shows one device with its last request and its own traffic', async () => {
    const { appId, appToken } = await gateway.createApp();
    await gateway.setSecret(appId, 'openai', 'sk-devices-page-0123456789abcdef');
    const tokens: Record<string, string> = {};
    for (const id of ['pager-a-1', 'pager-a-2', 'pager-a-3', 'pager-b-1', 'pager-b-2']) tokens[id] = await gateway.deviceToken(appId, appToken, id);
    const page = async (query: string) => call('GET', `/apps/${appId}/devices${query}`);
    const ids = (reply: Reply) => reply.json.devices.map((entry: { deviceId: string }) => entry.deviceId) as string[];
    const first = await page('?limit=2');
    expect(first.json).to.deep.include({ total: 5, limit: 2, offset: 0, nextOffset: 2 });
    const second = await page('?limit=2&offset=2');
    expect(second.json).to.deep.include({ total: 5, offset: 2, nextOffset: 4 });
    const third = await page('?limit=2&offset=4');
    expect(third.json).to.deep.include({ total: 5, offset: 4, nextOffset: null });
    expect([...ids(first), ...ids(second), ...ids(third)].sort()).to.deep.equal(['pager-a-1', 'pager-a-2', 'pager-a-3', 'pager-b-1', 'pager-b-2']);
    expect(first.json.devices[0]).to.include({ method: 'development', platform: 'development' });
    // The start of the id, any case; LIKE wildcards are literal.
    expect(ids(await page('?q=pager-b')).sort()).to.deep.equal(['pager-b-1', 'pager-b-2']);
    expect((await page('?q=PAGER-B')).json.total).to.equal(2);
    expect((await page('?q=a-1')).json.total).to.equal(0);
    expect((await page('?q=pager%25')).json.total).to.equal(0);
    expect((await page('?q=pager_a')).json.total).to.equal(0);
    expect((await page('?platform=development')).json.total).to.equal(5);
    expect((await page('?platform=ios&q=pager')).json).to.deep.include({ total: 0, devices: [], nextOffset: null });
    expect((await page('?platform=windows')).json.error.fields).to.have.key('platform');
    expect((await page('?limit=0')).json.error.fields).to.have.key('limit');
    expect((await page('?limit=501')).status).to.equal(400);

    // One device: status and its last request; its traffic alone in the usage summary.
    const headers = (id: string) => ({ 'Tollgate-App-Token': appToken, 'Tollgate-Device-Token': tokens[id]! });
    for (const id of ['pager-a-1', 'pager-a-1', 'pager-b-1']) await (await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...headers(id), 'content-type': 'application/json' }, body: '{}' })).text();
    await settle(appId, 3);
    const detail = await call('GET', `/apps/${appId}/devices/pager-a-1`);
    expect(detail.status).to.equal(200);
    const newest = (await call('GET', `/apps/${appId}/requests?device=pager-a-1&limit=1`)).json.requests[0];
    expect(detail.json).to.include({ deviceId: 'pager-a-1', method: 'development', platform: 'development', revokedAt: null, lastSeenAt: newest.createdAt });
    expect((await call('GET', `/apps/${appId}/devices/pager-a-2`)).json.lastSeenAt).to.equal(null);
    expect((await call('GET', `/apps/${appId}/devices/no-such-device`)).status).to.equal(404);
    const traffic = await call('GET', `/apps/${appId}/usage?minutes=60&device=pager-a-1`);
    expect(traffic.json.totalRequests).to.equal(2);
    expect(traffic.json.topDevices).to.deep.equal([{ deviceId: 'pager-a-1', requests: 2 }]);
    expect((await call('GET', `/apps/${appId}/usage?minutes=60`)).json.totalRequests).to.equal(3);
    // Revoked: the detail says so.
    await call('POST', `/apps/${appId}/devices/pager-a-1/revoke`);
    expect((await call('GET', `/apps/${appId}/devices/pager-a-1`)).json.revokedAt).to.be.a('string');
  });

  it('summarizes usage: requests per minute, errors by type, latency per provider, top devices', async () => {
    const other = await gateway.provision({ openai: 'sk-other-key-000000000000' });
    for (let index = 0; index < 4; index += 1) await (await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: other.headers })).text();
    await (await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { ...other.headers, 'Tollgate-Device-Token': 'bogus' } })).text();
    await gateway.recordedUsage(other.appId, 0, (events) => events.length === 5);
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

  it('pages the whole audit log by id (before), newest first, with no time window unless one is asked for', async () => {
    const all = (await call('GET', '/audit?limit=1000')).json as Array<{ id: number; createdAt: string }>;
    expect(all.length).to.be.at.least(4);
    const ids = all.map((entry) => entry.id);
    expect(ids).to.deep.equal([...ids].sort((a, b) => b - a));
    const first = (await call('GET', '/audit?limit=2')).json as Array<{ id: number }>;
    expect(first.map((entry) => entry.id)).to.deep.equal(ids.slice(0, 2));
    const second = (await call('GET', `/audit?limit=2&before=${first[1]!.id}`)).json as Array<{ id: number }>;
    expect(second.map((entry) => entry.id)).to.deep.equal(ids.slice(2, 4));
    // An entry older than any window: only the unbounded log (the default) shows it.
    await new AuditRepository(gateway.gateway.database).append({ actor: 'key:tests', action: 'test.ancient', target: null, details: null, createdAt: Date.now() - 30 * 86_400_000 });
    expect(((await call('GET', '/audit?action=test.ancient')).json as unknown[]).length).to.equal(1);
    expect(((await call('GET', '/audit?action=test.ancient&minutes=10080')).json as unknown[]).length).to.equal(0);
    const bad = await call('GET', '/audit?before=abc');
    expect(bad.status).to.equal(400);
    expect(bad.json.error.reason).to.equal('validation');
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
