/**
 * End users on one node: ID tokens of a sign-in provider faked on loopback (a JWKS as RFC 7517 and the providers'
 * "verify ID tokens with a third-party JWT library" pages describe), checked locally by the verifyUser stage. Missing,
 * wrongly signed, wrong-audience, expired and rotated-key tokens get their documented answers; the key set is fetched
 * once for 1,000 requests and keeps serving cached users while the provider is down; per-user limits hold across two
 * devices, a profile lifts them, a blocked user is refused on every device; `/v1/me` reports what the next requests
 * meet. The user token never reaches the provider nor the logs. Two nodes on Redis: test/scale/end-users.test.ts.
 */
import { expect } from 'chai';
import { SignJWT } from 'jose';
import { FakeUpstream, chatCompletion, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { FakeSignInProvider, signingKey, type SigningKey } from '../support/sign-in-provider';

interface Answer {
  status: number;
  reason?: string;
  json: Record<string, unknown>;
}

describe('end users (one node)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let signIn: FakeSignInProvider;
  let gateway: TestGateway;
  let keyA: SigningKey;
  let keyB: SigningKey;
  let stranger: SigningKey;
  let adminKey: string;

  before(async () => {
    upstream = await FakeUpstream.start();
    signIn = await FakeSignInProvider.start();
    [keyA, keyB, stranger] = await Promise.all([signingKey('key-a'), signingKey('key-b'), signingKey('key-a')]);
    signIn.publish([keyA]);
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'end-users' }));
  });
  beforeEach(() => {
    upstream.reset();
    // An OpenAI chat completion reporting 300 + 300 tokens (https://platform.openai.com/docs/api-reference/chat/object).
    upstream.respond(respondJson(200, chatCompletion('Hi', { prompt: 300, completion: 300 })));
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
    await signIn.close();
  });

  /** An app whose users sign in with the fake provider (its key set at `path`), and one attested device. */
  const provision = async (settings: Record<string, unknown> = {}, path = '/.well-known/jwks.json'): Promise<Provisioned> =>
    gateway.provision({ openai: 'sk-end-users-0123456789abcdef' }, { userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(path), audience: 'tollgate-test', tierClaim: 'tier' }, userTokenMode: 'required', ...settings });

  const secondDevice = async (device: Provisioned, deviceId: string): Promise<Provisioned> => {
    const deviceToken = await gateway.deviceToken(device.appId, device.appToken, deviceId);
    return { ...device, deviceId, deviceToken, headers: { 'Tollgate-App-Token': device.appToken, 'Tollgate-Device-Token': deviceToken } };
  };

  const chat = async (device: Provisioned, userToken?: string, body = '{"model":"gpt-4o-mini","messages":[]}'): Promise<Answer> => {
    const headers: Record<string, string> = { ...device.headers, 'content-type': 'application/json' };
    if (userToken !== undefined) headers['Tollgate-User-Token'] = userToken;
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers, body });
    const json = (await response.json()) as Record<string, unknown>;
    // Token budgets are charged when the answer ends: let the charge land before the next request.
    await new Promise((resolve) => setImmediate(resolve));
    return { status: response.status, reason: (json.error as { reason?: string } | undefined)?.reason, json };
  };

  const me = async (device: Provisioned, userToken?: string): Promise<Answer> => {
    const headers: Record<string, string> = { ...device.headers };
    if (userToken !== undefined) headers['Tollgate-User-Token'] = userToken;
    const response = await fetch(`${gateway.url}/v1/me`, { headers });
    const json = (await response.json()) as Record<string, unknown>;
    return { status: response.status, reason: (json.error as { reason?: string } | undefined)?.reason, json };
  };

  const admin = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}/v1/admin${route}`, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  const remaining = (answer: Answer, name: string): number | undefined => (answer.json.limits as Array<{ name: string; remaining: number }>).find((limit) => limit.name === name)?.remaining;

  /** `/v1/me` once the tokens of the last answer were charged (the charge lands when the gateway's response closes). */
  const meOnceCharged = async (device: Provisioned, userToken: string, name: string, expected: number): Promise<Answer> => {
    let answer = await me(device, userToken);
    for (let attempt = 0; attempt < 200 && remaining(answer, name) !== expected; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      answer = await me(device, userToken);
    }
    return answer;
  };

  it('answers a missing, wrongly signed, wrong-audience or expired token as protocol.md says, and never forwards or logs one', async () => {
    const device = await provision();
    expect(await chat(device)).to.include({ status: 401, reason: 'user_token_required' });
    expect(await chat(device, await signIn.token(stranger, 'ada'))).to.include({ status: 401, reason: 'user_token_invalid' });
    expect(await chat(device, await signIn.token(keyA, 'ada', {}, { audience: 'another-app' }))).to.include({ status: 401, reason: 'user_token_invalid' });
    expect(await chat(device, await signIn.token(keyA, 'ada', {}, { issuer: 'https://elsewhere.example/' }))).to.include({ status: 401, reason: 'user_token_invalid' });
    const expired = await signIn.token(keyA, 'ada', {}, { expiresAt: Math.floor(Date.now() / 1000) - 120 });
    expect(await chat(device, expired)).to.include({ status: 401, reason: 'user_token_expired' });
    expect(await chat(device, 'not-a-jwt')).to.include({ status: 401, reason: 'user_token_invalid' });
    expect(upstream.requests).to.have.length(0);

    const token = await signIn.token(keyA, 'ada');
    expect((await chat(device, token)).status).to.equal(200);
    expect(upstream.requests).to.have.length(1);
    const forwarded = upstream.requests[0]!;
    expect(forwarded.headers['tollgate-user-token']).to.equal(undefined);
    expect(forwarded.rawHeaders.join('\n')).not.to.include(token);
    expect(forwarded.body.toString()).not.to.include(token);
    expect(gateway.logText()).not.to.include(token);
    expect(gateway.logText()).not.to.include(token.split('.')[2]!);
  });

  it('refuses a token without sub or exp, with an empty or over-long subject, or over the size limit; admits a 255-character subject', async () => {
    const device = await provision();
    const now = Math.floor(Date.now() / 1000);
    // Signed by the published key, issuer and audience right: only the claims differ.
    const signed = (claims: Record<string, unknown>) =>
      new SignJWT({ iss: signIn.issuer, aud: 'tollgate-test', iat: now, ...claims }).setProtectedHeader({ alg: 'RS256', kid: keyA.kid, typ: 'JWT' }).sign(keyA.privateKey);
    expect(await chat(device, await signed({ sub: 'ada' })), 'no exp').to.include({ status: 401, reason: 'user_token_invalid' });
    expect(await chat(device, await signed({ exp: now + 3600 })), 'no sub').to.include({ status: 401, reason: 'user_token_invalid' });
    expect(await chat(device, await signed({ sub: '', exp: now + 3600 })), 'empty sub').to.include({ status: 401, reason: 'user_token_invalid' });
    expect(await chat(device, await signed({ sub: 'a'.repeat(256), exp: now + 3600 })), '256 characters').to.include({ status: 401, reason: 'user_token_invalid' });
    // Over 16,384 characters: refused before any signature check (a valid token padded with a large claim).
    expect(await chat(device, await signIn.token(keyA, 'ada', { pad: 'x'.repeat(16_384) })), 'too long').to.include({ status: 401, reason: 'user_token_invalid' });
    expect(upstream.requests).to.have.length(0);
    expect((await chat(device, await signed({ sub: 'b'.repeat(255), exp: now + 3600 }))).status).to.equal(200);
  });

  it('trusts a verified token again only until its exp: once it passes, the same token is user_token_expired', async () => {
    const device = await provision();
    // exp is whole seconds: one to two seconds from now (the gateway allows 60 s of skew on exp: set it 61 s back).
    const exp = Math.floor(Date.now() / 1000) + 2 - 60;
    const token = await signIn.token(keyA, 'ada-expiring', {}, { expiresAt: exp });
    expect((await chat(device, token)).status).to.equal(200);
    // Still cached as verified: a second request within its life passes without a key fetch.
    expect((await chat(device, token)).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, (exp + 60) * 1000 - Date.now()) + 50));
    expect(await chat(device, token)).to.include({ status: 401, reason: 'user_token_expired' });
  });

  it('an app that does not sign users in ignores a user token header, whatever it holds', async () => {
    const device = await gateway.provision({ openai: 'sk-end-users-0123456789abcdef' });
    expect((await chat(device, 'not-a-jwt')).status).to.equal(200);
    expect(upstream.last().headers['tollgate-user-token']).to.equal(undefined);
    // A sign-in provider configured but the mode off: the header is ignored too.
    const off = await provision({ userTokenMode: 'off' });
    expect((await chat(off, 'not-a-jwt')).status).to.equal(200);
    expect((await chat(off)).status).to.equal(200);
  });

  it('an empty user token header is no token: refused where one is required, served where it is optional', async () => {
    expect(await chat(await provision(), '')).to.include({ status: 401, reason: 'user_token_required' });
    expect((await chat(await provision({ userTokenMode: 'optional' }), '')).status).to.equal(200);
  });

  it('optional mode serves a request without a user token and checks one that is sent', async () => {
    const device = await provision({ userTokenMode: 'optional' });
    expect((await chat(device)).status).to.equal(200);
    expect(await chat(device, await signIn.token(stranger, 'ada'))).to.include({ status: 401, reason: 'user_token_invalid' });
    expect((await chat(device, await signIn.token(keyA, 'ada'))).status).to.equal(200);
  });

  it('fetches the key set once for 1,000 requests, keeps serving cached users while the provider is down, and picks up a rotated key at most once a minute', async () => {
    const path = '/thousand/jwks.json';
    signIn.publish([keyA], path);
    const device = await provision({}, path);
    const tokens = await Promise.all(Array.from({ length: 1000 }, (_, index) => signIn.token(keyA, `user-${index % 50}`, { n: index })));
    for (let start = 0; start < tokens.length; start += 50) {
      const answers = await Promise.all(tokens.slice(start, start + 50).map((token) => me(device, token)));
      expect(answers.map((answer) => answer.status)).to.deep.equal(Array(answers.length).fill(200));
    }
    expect(signIn.fetchCount(path)).to.equal(1);

    // The provider goes down: users whose key is cached are still served, with new tokens too.
    signIn.down = true;
    expect((await chat(device, await signIn.token(keyA, 'grace'))).status).to.equal(200);
    // A key the gateway has not seen cannot be fetched now: refused as invalid, and the provider is not asked again
    // within the minute.
    signIn.down = false;
    signIn.publish([keyA, keyB], path);
    const rotated = await signIn.token(keyB, 'grace');
    expect(await chat(device, rotated)).to.include({ status: 401, reason: 'user_token_invalid' });
    const fetchesBefore = signIn.fetchCount(path);
    expect(fetchesBefore).to.be.at.most(2);
    expect(await chat(device, rotated)).to.include({ status: 401, reason: 'user_token_invalid' });
    expect(signIn.fetchCount(path)).to.equal(fetchesBefore);
    // A minute later (the process clock moved on), the unknown kid fetches the set once more and the new key works.
    const realNow = Date.now;
    const skew = 61_000;
    Date.now = () => realNow() + skew;
    try {
      expect((await chat(device, await signIn.token(keyB, 'grace'))).status).to.equal(200);
      expect(signIn.fetchCount(path)).to.equal(fetchesBefore + 1);
      expect((await chat(device, await signIn.token(keyA, 'grace'))).status).to.equal(200);
    } finally {
      Date.now = realNow;
    }
  });

  it('holds a user limit across two devices, lifts it with the profile the tier claim names, and reports it on /v1/me', async () => {
    const first = await provision({ userLimitPerMinute: 3, deviceLimitPerMinute: 100, profiles: { pro: { userLimitPerMinute: 6 } } });
    const second = await secondDevice(first, 'second-device');
    const ada = await signIn.token(keyA, 'ada');
    const before = await me(first, ada);
    expect(before.status).to.equal(200);
    expect(before.json.user).to.deep.include({ id: 'ada', profile: null });
    expect(remaining(before, 'user-requests-minute')).to.equal(3);
    expect((await chat(first, ada)).status).to.equal(200);
    expect((await chat(second, ada)).status).to.equal(200);
    expect(remaining(await me(second, ada), 'user-requests-minute')).to.equal(1);
    expect((await chat(first, ada)).status).to.equal(200);
    expect(remaining(await me(first, ada), 'user-requests-minute')).to.equal(0);
    expect(await chat(second, ada)).to.include({ status: 429, reason: 'rate_limited_user' });
    expect(await chat(first, ada)).to.include({ status: 429, reason: 'rate_limited_user' });
    // Another user on the same devices has their own allowance.
    expect((await chat(first, await signIn.token(keyA, 'bob'))).status).to.equal(200);
    // A "pro" user gets the profile's six.
    const pro = await signIn.token(keyA, 'carol', { tier: 'pro' });
    expect((await me(first, pro)).json.user).to.deep.include({ id: 'carol', profile: 'pro' });
    for (let index = 0; index < 6; index += 1) expect((await chat(index % 2 ? first : second, pro)).status).to.equal(200);
    expect(await chat(first, pro)).to.include({ status: 429, reason: 'rate_limited_user' });
  });

  it('/v1/me lists the realtime session seconds left today per device, app and user (the profile applied)', async () => {
    const device = await provision({ userTokenMode: 'optional', deviceDailySessionSeconds: 600, appDailySessionSeconds: 3600, userDailySessionSeconds: 300, profiles: { pro: { userDailySessionSeconds: 1200 } } });
    const seconds = (answer: Answer) =>
      (answer.json.limits as Array<Record<string, unknown>>).filter((entry) => entry.unit === 'seconds').map((entry) => [entry.name, entry.scope, entry.limit, entry.remaining, entry.window]);
    expect(seconds(await me(device, await signIn.token(keyA, 'erin')))).to.deep.equal([
      ['device-session-seconds-day', 'device', 600, 600, 'day'],
      ['app-session-seconds-day', 'app', 3600, 3600, 'day'],
      ['user-session-seconds-day', 'user', 300, 300, 'day'],
    ]);
    expect(seconds(await me(device, await signIn.token(keyA, 'fay', { tier: 'pro' })))).to.deep.include(['user-session-seconds-day', 'user', 1200, 1200, 'day']);
    // Without a signed-in user there is no user entry.
    expect(seconds(await me(device)).map(([name]) => name)).to.deep.equal(['device-session-seconds-day', 'app-session-seconds-day']);
  });

  it('/v1/me reports the daily request quota and token budget that the next requests then meet, and charges nothing', async () => {
    const device = await provision({ userDailyQuota: 4, userDailyTokens: 1000 });
    const dan = await signIn.token(keyA, 'dan');
    for (let index = 0; index < 5; index += 1) expect((await me(device, dan)).status).to.equal(200);
    const fresh = await me(device, dan);
    expect(remaining(fresh, 'user-requests-day')).to.equal(4);
    expect(remaining(fresh, 'user-tokens-day')).to.equal(1000);
    const limit = (fresh.json.limits as Array<Record<string, unknown>>).find((entry) => entry.name === 'user-tokens-day')!;
    expect(limit).to.include({ scope: 'user', unit: 'tokens', limit: 1000, window: 'day' });
    expect(Date.parse(limit.resetsAt as string)).to.be.greaterThan(Date.now());
    // Budgets reserve the request's input and its output limit before forwarding: a small max_tokens fits.
    const small = '{"model":"gpt-4o-mini","messages":[],"max_tokens":50}';
    expect((await chat(device, dan, small)).status).to.equal(200); // 600 tokens
    const after = await meOnceCharged(device, dan, 'user-tokens-day', 400);
    expect(remaining(after, 'user-requests-day')).to.equal(3);
    expect(remaining(after, 'user-tokens-day')).to.equal(400);
    expect((await chat(device, dan, small)).status).to.equal(200); // its reservation fits in the 400 left; charged 600: 1,200
    expect(remaining(await meOnceCharged(device, dan, 'user-tokens-day', 0), 'user-tokens-day')).to.equal(0);
    expect(await chat(device, dan, small)).to.include({ status: 429, reason: 'token_budget' });
    expect(upstream.requests).to.have.length(2);
  });

  it('refuses a blocked user on every device with user_blocked, lists users, and serves them again once unblocked', async () => {
    const first = await provision();
    const second = await secondDevice(first, 'blocked-second');
    const eve = await signIn.token(keyA, 'eve|42');
    expect((await chat(first, eve)).status).to.equal(200);
    const blocked = await admin('POST', `/apps/${first.appId}/users/${encodeURIComponent('eve|42')}/block`);
    expect(blocked.status).to.equal(200);
    expect(blocked.json).to.include({ id: 'eve|42', blocked: true });
    expect(await chat(first, eve)).to.include({ status: 403, reason: 'user_blocked' });
    expect(await chat(second, eve)).to.include({ status: 403, reason: 'user_blocked' });
    expect((await me(second, eve)).reason).to.equal('user_blocked');
    expect((await chat(second, await signIn.token(keyA, 'frank'))).status).to.equal(200);
    // The users seen are listed (written off the request path), searchable by the start of their id.
    let listed: Array<Record<string, unknown>> = [];
    for (let attempt = 0; attempt < 100 && listed.length < 1; attempt += 1) {
      listed = (await admin('GET', `/apps/${first.appId}/users?search=fr`)).json as unknown as Array<Record<string, unknown>>;
      if (listed.length < 1) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(listed.map((user) => user.id)).to.deep.equal(['frank']);
    expect((await admin('POST', `/apps/${first.appId}/users/${encodeURIComponent('eve|42')}/unblock`)).json).to.include({ blocked: false });
    expect((await chat(second, eve)).status).to.equal(200);
  });

  it('refuses settings it could not enforce', async () => {
    const { appId } = await gateway.createApp();
    const noProvider = await admin('PATCH', `/apps/${appId}`, { userTokenMode: 'required' });
    expect(noProvider.status).to.equal(400);
    const badPreset = await admin('PATCH', `/apps/${appId}`, { userAuth: { preset: 'firebase' } });
    expect(badPreset.status).to.equal(400);
    const preset = await admin('PATCH', `/apps/${appId}`, { userAuth: { preset: 'firebase', projectId: 'my-project', tierClaim: 'plan' }, userTokenMode: 'optional' });
    expect(preset.status).to.equal(200);
    const badProfile = await admin('PATCH', `/apps/${appId}`, { profiles: { pro: { appLimitPerMinute: 5 } } });
    expect(badProfile.status).to.equal(400);
    const badPolicy = await admin('PATCH', `/apps/${appId}`, { modelPolicy: { openai: { allow: 'gpt-4o' } } });
    expect(badPolicy.status).to.equal(400);
  });
});
