/**
 * The management API behind a signed-in user's page, over HTTP (supertest) against a real gateway on SQLite: requests
 * made through a fake OpenAI by two users on two devices (ID tokens of a sign-in provider faked on loopback, a JWKS as
 * RFC 7517 describes) are found by user in the request log and the usage summary; the user's devices are the ones the
 * requests came from; the user's limits are the same counters `/v1/me` reads for that user, with the user's profile
 * applied and no per-device limit; bad ids are refused with a reason and a read-only key reads but cannot block.
 */
import { expect } from 'chai';
import request from 'supertest';
import { FakeUpstream, chatCompletion, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { FakeSignInProvider, signingKey, type SigningKey } from '../support/sign-in-provider';

interface LimitEntry {
  name: string;
  scope: string;
  unit: string;
  limit: number;
  remaining: number;
}

describe('admin API: one signed-in user (limits, devices, usage and requests by user)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let signIn: FakeSignInProvider;
  let key: SigningKey;
  let gateway: TestGateway;
  let adminKey: string;
  let readKey: string;
  let phone: Provisioned;
  let tablet: Provisioned;

  const admin = (path: string, bearer = adminKey) => request(gateway.url).get(`/v1/admin${path}`).set('authorization', `Bearer ${bearer}`);

  const chat = async (device: Provisioned, sub?: string, claims: Record<string, unknown> = {}) => {
    const headers: Record<string, string> = { ...device.headers, 'content-type': 'application/json' };
    if (sub !== undefined) headers['Tollgate-User-Token'] = await signIn.token(key, sub, claims);
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers, body: '{"model":"gpt-4o-mini","messages":[]}' });
    expect(response.status).to.equal(200);
    await response.text();
  };

  const me = async (device: Provisioned, sub: string, claims: Record<string, unknown>): Promise<LimitEntry[]> => {
    const response = await fetch(`${gateway.url}/v1/me`, { headers: { ...device.headers, 'Tollgate-User-Token': await signIn.token(key, sub, claims) } });
    expect(response.status).to.equal(200);
    return ((await response.json()) as { limits: LimitEntry[] }).limits;
  };

  before(async () => {
    upstream = await FakeUpstream.start();
    // An OpenAI chat completion reporting 300 + 300 tokens (https://platform.openai.com/docs/api-reference/chat/object).
    upstream.respond(respondJson(200, chatCompletion('Hi', { prompt: 300, completion: 300 })));
    signIn = await FakeSignInProvider.start();
    key = await signingKey('user-page');
    signIn.publish([key]);
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'user-page' }));
    ({ adminKey: readKey } = await gateway.gateway.management.createAdminKey({ name: 'user-page-read', scopes: ['read'] }));
    await gateway.gateway.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 0.15, outputUsdPerMillion: 0.6 });
    phone = await gateway.provision(
      { openai: 'sk-user-page-0123456789abcdef' },
      {
        userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test', tierClaim: 'tier' },
        userTokenMode: 'optional',
        userLimitPerMinute: 50,
        userDailyQuota: 100,
        userDailyTokens: 10_000,
        profiles: { pro: { userDailyTokens: 50_000 } },
        deviceDailyQuota: 500,
        appDailyQuota: 1000,
      },
    );
    const deviceToken = await gateway.deviceToken(phone.appId, phone.appToken, 'tablet-of-ada');
    tablet = { ...phone, deviceId: 'tablet-of-ada', deviceToken, headers: { 'Tollgate-App-Token': phone.appToken, 'Tollgate-Device-Token': deviceToken } };
    const from = Date.now() - 1000;
    await chat(phone, 'auth0|ada', { tier: 'pro' });
    await chat(phone, 'auth0|ada', { tier: 'pro' });
    await chat(tablet, 'auth0|ada', { tier: 'pro' });
    await chat(phone, 'bob');
    await chat(phone);
    await gateway.recordedUsage(phone.appId, from, (events) => events.length === 5);
    // Users are recorded as seen in a batch of their own, just after their first request.
    for (let attempt = 0; attempt < 200 && (await admin(`/apps/${phone.appId}/users/${encodeURIComponent('auth0|ada')}`)).status !== 200; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
    await signIn?.close();
  });

  it('finds the user\'s requests in the request log (and its CSV) and the user\'s usage, with the spend per minute', async () => {
    const ada = encodeURIComponent('auth0|ada');
    const log = await admin(`/apps/${phone.appId}/requests?user=${ada}`).expect(200);
    const rows = log.body.requests as Array<{ userId: string | null; deviceId: string; model: string; inputTokens: number }>;
    expect(rows.map((row) => [row.userId, row.deviceId])).to.deep.equal([
      ['auth0|ada', 'tablet-of-ada'],
      ['auth0|ada', phone.deviceId],
      ['auth0|ada', phone.deviceId],
    ]);
    expect(rows.every((row) => row.model === 'gpt-4o-mini-2024-07-18' && row.inputTokens === 300)).to.equal(true);
    const all = (await admin(`/apps/${phone.appId}/requests`).expect(200)).body.requests as Array<{ userId: string | null }>;
    expect(all.map((row) => row.userId)).to.deep.equal([null, 'bob', 'auth0|ada', 'auth0|ada', 'auth0|ada']);
    const csv = await admin(`/apps/${phone.appId}/requests.csv?user=${ada}`).expect(200);
    const [header, ...lines] = csv.text.trim().split('\r\n');
    expect(header!.split(',').at(-1), 'a new column goes last').to.equal('userId');
    expect(lines).to.have.length(3);
    expect(lines.every((line) => line.includes('auth0|ada'))).to.equal(true);

    const usage = (await admin(`/apps/${phone.appId}/usage?minutes=60&user=${ada}`).expect(200)).body;
    expect(usage.totalRequests).to.equal(3);
    expect(usage.tokens).to.include({ inputTokens: 900, outputTokens: 900 });
    expect(usage.spend.totalUsd).to.be.closeTo((900 * 0.15 + 900 * 0.6) / 1e6, 1e-12);
    const perMinute = usage.spend.perMinute as Array<{ minute: number; usd: number }>;
    expect(perMinute.reduce((sum, entry) => sum + entry.usd, 0)).to.be.closeTo(usage.spend.totalUsd, 1e-12);
    expect((await admin(`/apps/${phone.appId}/usage?minutes=60&user=bob`).expect(200)).body.totalRequests).to.equal(1);
  });

  it('lists the devices the user\'s requests came from, most recent first, with their platform and revocation', async () => {
    const path = `/apps/${phone.appId}/users/${encodeURIComponent('auth0|ada')}/devices`;
    const devices = (await admin(path).expect(200)).body as Array<Record<string, unknown>>;
    expect(devices.map((device) => [device.deviceId, device.requests, device.platform, device.revokedAt])).to.deep.equal([
      ['tablet-of-ada', 1, 'development', null],
      [phone.deviceId, 2, 'development', null],
    ]);
    expect((await admin(`/apps/${phone.appId}/users/bob/devices`).expect(200)).body.map((device: { deviceId: string }) => device.deviceId)).to.deep.equal([phone.deviceId]);
    await request(gateway.url).post(`/v1/admin/apps/${phone.appId}/devices/tablet-of-ada/revoke`).set('authorization', `Bearer ${adminKey}`).expect(200);
    const after = (await admin(path).expect(200)).body as Array<Record<string, unknown>>;
    expect(after[0]!.deviceId).to.equal('tablet-of-ada');
    expect(after[0]!.revokedAt).to.be.a('string');
  });

  it('answers the user\'s limits from the counters /v1/me reads: the profile applied, no per-device limit, nothing charged', async () => {
    const ada = encodeURIComponent('auth0|ada');
    // Tokens are charged when each answer ends: /v1/me shows them once they have landed.
    let fromMe = await me(phone, 'auth0|ada', { tier: 'pro' });
    for (let attempt = 0; attempt < 200 && fromMe.find((limit) => limit.name === 'user-tokens-day')?.remaining !== 50_000 - 1800; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      fromMe = await me(phone, 'auth0|ada', { tier: 'pro' });
    }
    const answer = (await admin(`/apps/${phone.appId}/users/${ada}/limits`).expect(200)).body as { id: string; profile: string; profileApplies: boolean; limits: LimitEntry[] };
    expect(answer).to.include({ id: 'auth0|ada', profile: 'pro', profileApplies: true });
    // Request limits refill continuously (GCRA): a per-minute one by a request every 60 s / limit, so only the daily ones
    // (one request back every 864 s here) are compared to the unit; per-minute ones by their size.
    const shape = (limits: LimitEntry[]) => limits.map(({ name, scope, unit, limit, remaining }) => ({ name, scope, unit, limit, ...(name.endsWith('-minute') ? {} : { remaining }) }));
    expect(shape(answer.limits)).to.deep.equal([
      { name: 'app-requests-minute', scope: 'app', unit: 'requests', limit: 600 },
      { name: 'app-requests-day', scope: 'app', unit: 'requests', limit: 1000, remaining: 995 },
      { name: 'user-requests-minute', scope: 'user', unit: 'requests', limit: 50 },
      { name: 'user-requests-day', scope: 'user', unit: 'requests', limit: 100, remaining: 97 },
      { name: 'user-tokens-day', scope: 'user', unit: 'tokens', limit: 50_000, remaining: 48_200 },
    ]);
    // The same amounts as the device's /v1/me for this user, less its per-device limits.
    expect(shape(fromMe.filter((limit) => limit.scope !== 'device'))).to.deep.equal(shape(answer.limits));
    expect(fromMe.some((limit) => limit.scope === 'device')).to.equal(true);
    // Reading charged nothing.
    expect(shape((await admin(`/apps/${phone.appId}/users/${ada}/limits`).expect(200)).body.limits)).to.deep.equal(shape(answer.limits));
    // Bob has no profile: the app's own token budget.
    const bob = (await admin(`/apps/${phone.appId}/users/bob/limits`).expect(200)).body as { profile: null; limits: LimitEntry[] };
    expect(bob.profile).to.equal(null);
    expect(bob.limits.find((limit) => limit.name === 'user-tokens-day')).to.include({ limit: 10_000, remaining: 10_000 - 600 });
  });

  it('refuses an unknown user, a malformed id and an app without sign-in with a reason; a read key reads but cannot block', async () => {
    const unknown = await admin(`/apps/${phone.appId}/users/nobody/limits`).expect(404);
    expect(unknown.body.error.type).to.equal('notFound');
    expect((await admin(`/apps/${phone.appId}/users/nobody/devices`).expect(404)).body.error.type).to.equal('notFound');
    const malformed = await admin(`/apps/${phone.appId}/users/${encodeURIComponent('ada\u0001')}/limits`).expect(400);
    expect(malformed.body.error.reason).to.equal('validation');
    expect((await admin(`/apps/${phone.appId}/requests?user=${encodeURIComponent('x\u0007')}`).expect(400)).body.error).to.include({ reason: 'validation' });
    expect((await admin(`/apps/${phone.appId}/usage?user=${'u'.repeat(256)}`).expect(400)).body.error).to.include({ reason: 'validation' });
    const plain = await gateway.gateway.management.createApp({ name: 'No sign-in' });
    expect((await admin(`/apps/${plain.id}/users/ada/devices`).expect(409)).body.error.type).to.equal('conflict');

    const ada = encodeURIComponent('auth0|ada');
    await admin(`/apps/${phone.appId}/users/${ada}/limits`, readKey).expect(200);
    await admin(`/apps/${phone.appId}/users/${ada}/devices`, readKey).expect(200);
    const refused = await request(gateway.url).post(`/v1/admin/apps/${phone.appId}/users/${ada}/block`).set('authorization', `Bearer ${readKey}`).expect(403);
    expect(refused.body.error.reason).to.equal('scope_insufficient');
    expect((await admin(`/apps/${phone.appId}/users/${ada}`).expect(200)).body.blocked).to.equal(false);
  });

  it('documents the routes in the OpenAPI document with the read scope', async () => {
    const document = (await admin('/openapi.json').expect(200)).body as { paths: Record<string, Record<string, Record<string, unknown>>>; components: { schemas: Record<string, unknown> } };
    for (const path of ['/apps/{appId}/users/{userId}/limits', '/apps/{appId}/users/{userId}/devices']) {
      expect(document.paths[path]?.get?.['x-tollgate-scope'], path).to.equal('read');
    }
    const parameters = (path: string) => (document.paths[path]!.get!.parameters as Array<{ name: string }>).map((parameter) => parameter.name);
    expect(parameters('/apps/{appId}/requests')).to.include('user');
    expect(parameters('/apps/{appId}/usage')).to.include('user');
    expect(document.components.schemas).to.have.property('EndUserLimits');
    expect(document.components.schemas).to.have.property('EndUserDevice');
  });
});
