/**
 * Every gateway-made error has the status, the `Tollgate-Error` header and the body shape of protocol.md, and a refused
 * request sends nothing upstream.
 */
import { expect } from 'chai';
import net from 'node:net';
import { FakeUpstream, respondNever, respondReset } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest, type ErrorBody, type RawResponse } from '../support/http';

function expectError(response: RawResponse, status: number, type: string, reason?: string): ErrorBody {
  expect(response.status, response.text()).to.equal(status);
  expect(response.headers['tollgate-error']).to.equal(type);
  expect(response.headers['content-type']).to.match(/^application\/json/);
  const body = response.json<ErrorBody>();
  expect(Object.keys(body)).to.deep.equal(['error']);
  expect(Object.keys(body.error).sort()).to.deep.equal(['message', 'reason', 'requestId', 'type']);
  expect(body.error.type).to.equal(type);
  // protocol.md: a stable snake_case reason in every gateway-made error (docs/reference/errors.md lists them).
  expect(body.error.reason).to.match(/^[a-z][a-z0-9_]*$/);
  if (reason !== undefined) expect(body.error.reason).to.equal(reason);
  expect(body.error.message).to.be.a('string').and.not.be.empty;
  expect(body.error.requestId).to.equal(response.headers['tollgate-request-id']);
  return body;
}

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('protocol errors', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let now = Date.now();
  let device: Provisioned;
  const chat = '/v1/proxy/openai/v1/chat/completions';

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({
      upstreams: { openai: upstream.url, anthropic: `http://127.0.0.1:${await closedPort()}` },
      env: { TOLLGATE_UPSTREAM_TIMEOUT_MS: '300', TOLLGATE_MAX_BODY_BYTES: '1024' },
      clock: () => now,
    });
    device = await gateway.provision({ openai: 'sk-errors-0123456789abcdef', anthropic: 'sk-ant-errors-0123456789' });
  });
  beforeEach(() => {
    now = Date.now();
    upstream.reset();
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const post = (headers: Record<string, string>, path = chat, body = '{}') =>
    rawRequest(gateway.url, { method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body });

  describe('unauthorized (401)', () => {
    it('when the app token is missing', async () => {
      expectError(await post({ 'Tollgate-Device-Token': device.deviceToken }), 401, 'unauthorized', 'app_token_missing');
      expect(upstream.requests).to.have.length(0);
    });
    it('when the app token is malformed', async () => {
      expectError(await post({ 'Tollgate-App-Token': 'at_short', 'Tollgate-Device-Token': device.deviceToken }), 401, 'unauthorized');
    });
    it('when the app token is unknown', async () => {
      expectError(await post({ 'Tollgate-App-Token': `at_${'A'.repeat(32)}`, 'Tollgate-Device-Token': device.deviceToken }), 401, 'unauthorized');
      expect(upstream.requests).to.have.length(0);
    });
    it('when the app is disabled, and again after it is enabled it works', async () => {
      const other = await gateway.provision({ openai: 'sk-disabled-0123456789abcdef' });
      await gateway.gateway.management.setAppStatus(other.appId, 'disabled');
      expectError(await post(other.headers), 401, 'unauthorized');
      await gateway.gateway.management.setAppStatus(other.appId, 'active');
      expect((await post(other.headers)).status).to.equal(200);
    });
    it('when the app token was rotated without grace (the old one stops working at once)', async () => {
      const other = await gateway.provision({ openai: 'sk-rotated-0123456789abcdef' });
      const rotated = await gateway.gateway.management.rotateAppToken(other.appId, 0);
      expectError(await post(other.headers), 401, 'unauthorized', 'app_token_unknown');
      expect((await post({ ...other.headers, 'Tollgate-App-Token': rotated.appToken })).status).to.equal(200);
    });
    it('when the grace period of a rotated app token has ended; until then both tokens work', async () => {
      const other = await gateway.provision({ openai: 'sk-grace-0123456789abcdef' }, { deviceTokenTtlSeconds: 86_400 });
      const rotated = await gateway.gateway.management.rotateAppToken(other.appId, 2);
      expect(rotated.previousToken).to.deep.equal({ tokenHint: (await gateway.gateway.management.getApp(other.appId)).previousToken!.tokenHint, expiresAt: new Date(now + 2 * 3_600_000).toISOString() });
      const fresh = { ...other.headers, 'Tollgate-App-Token': rotated.appToken };
      expect((await post(other.headers)).status).to.equal(200);
      expect((await post(fresh)).status).to.equal(200);
      now += 2 * 3_600_000 - 1000;
      expect((await post(other.headers)).status).to.equal(200);
      now += 2000;
      expectError(await post(other.headers), 401, 'unauthorized', 'app_token_rotated');
      // A second rotation drops the first token for good: only the current and the previous token ever work.
      const again = await gateway.gateway.management.rotateAppToken(other.appId);
      expectError(await post(other.headers), 401, 'unauthorized');
      expect((await post(fresh)).status).to.equal(200);
      expect((await post({ ...other.headers, 'Tollgate-App-Token': again.appToken })).status).to.equal(200);
    });
  });

  describe('attestationFailed (403)', () => {
    it('when the device token is missing', async () => {
      expectError(await post({ 'Tollgate-App-Token': device.appToken }), 403, 'attestationFailed', 'device_token_missing');
      expect(upstream.requests).to.have.length(0);
    });
    it('when the device token is not one the gateway signed', async () => {
      const [header, payload] = device.deviceToken.split('.');
      const forged = `${header}.${payload}.${Buffer.alloc(64, 1).toString('base64url')}`;
      expectError(await post({ ...device.headers, 'Tollgate-Device-Token': forged }), 403, 'attestationFailed', 'device_token_invalid');
      expectError(await post({ ...device.headers, 'Tollgate-Device-Token': 'not-a-jws' }), 403, 'attestationFailed', 'device_token_invalid');
    });
    it("when app A's device token is used with app B's app token", async () => {
      const other = await gateway.provision({ openai: 'sk-other-0123456789abcdef' });
      expectError(await post({ 'Tollgate-App-Token': other.appToken, 'Tollgate-Device-Token': device.deviceToken }), 403, 'attestationFailed');
      expect(upstream.requests).to.have.length(0);
    });
    it('when the device token has expired', async () => {
      const other = await gateway.provision({ openai: 'sk-expiring-0123456789abcdef' });
      expect((await post(other.headers)).status).to.equal(200);
      now += 3601 * 1000;
      expectError(await post(other.headers), 403, 'attestationFailed', 'device_token_expired');
    });
    it('when the device was revoked, even though its token is unexpired', async () => {
      const other = await gateway.provision({ openai: 'sk-revoked-0123456789abcdef' });
      expect((await post(other.headers)).status).to.equal(200);
      await gateway.gateway.management.revokeDevice(other.appId, other.deviceId);
      expectError(await post(other.headers), 403, 'attestationFailed', 'device_revoked');
    });
    it('when every device of the app was revoked', async () => {
      const other = await gateway.provision({ openai: 'sk-revoke-all-0123456789abcdef' });
      await gateway.gateway.management.revokeAllDevices(other.appId);
      expectError(await post(other.headers), 403, 'attestationFailed', 'device_revoked');
    });
    it('when development attestation uses an unknown token or an app that does not allow it', async () => {
      const attest = (appToken: string, developmentToken: string) =>
        rawRequest(gateway.url, {
          method: 'POST',
          path: '/v1/attest/development',
          headers: { 'content-type': 'application/json', 'Tollgate-App-Token': appToken },
          body: JSON.stringify({ developmentToken, deviceId: 'sim-1' }),
        });
      expectError(await attest(device.appToken, `dt_${'B'.repeat(32)}`), 403, 'attestationFailed');
      const strict = await gateway.createApp({ allowDevelopmentAttestation: false });
      const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(strict.appId);
      expectError(await attest(strict.appToken, developmentToken), 403, 'attestationFailed');
      const another = await gateway.createApp();
      expectError(await attest(another.appToken, developmentToken), 403, 'attestationFailed');
    });
  });

  describe('rateLimited (429)', () => {
    it('refuses the request past the per-device limit with Retry-After and RateLimit headers, sending nothing upstream', async () => {
      const limited = await gateway.provision({ openai: 'sk-limited-0123456789abcdef' }, { deviceLimitPerMinute: 2 });
      const first = await post(limited.headers);
      expect(first.status).to.equal(200);
      expect(first.headers['ratelimit-policy']).to.equal('"device";q=2;w=60, "app";q=600;w=60');
      expect(first.headers.ratelimit).to.match(/^"device";r=1;t=\d+, "app";r=599;t=\d+$/);
      expect((await post(limited.headers)).status).to.equal(200);
      upstream.reset();
      const refused = await post(limited.headers);
      expectError(refused, 429, 'rateLimited', 'rate_limited_device');
      expect(Number(refused.headers['retry-after'])).to.be.within(1, 30);
      expect(refused.headers.ratelimit).to.match(/^"device";r=0;/);
      expect(upstream.requests).to.have.length(0);
      now += 30_000;
      expect((await post(limited.headers)).status).to.equal(200);
    });
    it('applies the per-app limit across devices', async () => {
      const app = await gateway.provision({ openai: 'sk-applimit-0123456789abcdef' }, { appLimitPerMinute: 1 });
      const second = await gateway.deviceToken(app.appId, app.appToken, 'second-device');
      expect((await post(app.headers)).status).to.equal(200);
      expectError(await post({ ...app.headers, 'Tollgate-Device-Token': second }), 429, 'rateLimited');
    });
  });

  describe('secretNotFound (424)', () => {
    it('when the app has no secret for the provider', async () => {
      expectError(await post(device.headers, '/v1/proxy/gemini/v1beta/models/gemini-pro:generateContent'), 424, 'secretNotFound', 'secret_not_found');
      expect(upstream.requests).to.have.length(0);
    });
  });

  describe('providerNotFound (404)', () => {
    it('for an unknown slug and an unknown version', async () => {
      expectError(await post(device.headers, '/v1/proxy/nosuchprovider/v1/chat'), 404, 'providerNotFound', 'unknown_provider');
      expectError(await post(device.headers, '/v1/proxy/openai/v9/chat/completions'), 404, 'providerNotFound');
      expectError(await post(device.headers, '/v1/proxy/Open_AI/v1/chat'), 404, 'providerNotFound');
      expect(upstream.requests).to.have.length(0);
    });
  });

  describe('invalidRequest (400, 405, 413)', () => {
    it('405 for a method the provider does not allow', async () => {
      expectError(await rawRequest(gateway.url, { method: 'PUT', path: chat, headers: device.headers, body: '{}' }), 405, 'invalidRequest', 'method_not_allowed');
      expect(upstream.requests).to.have.length(0);
    });
    it('400 for a route outside the provider allow-list (account and key management)', async () => {
      expectError(await rawRequest(gateway.url, { method: 'GET', path: '/v1/proxy/openai/v1/organization/admin_api_keys', headers: device.headers }), 400, 'invalidRequest', 'route_not_allowed');
      expect(upstream.requests).to.have.length(0);
    });
    it('413 for a declared body over the limit, before reading it', async () => {
      expectError(await post(device.headers, chat, 'x'.repeat(2048)), 413, 'invalidRequest', 'body_too_large');
      expect(upstream.requests).to.have.length(0);
    });
    it('413 for a declared body too long to be read whole (over 64 KiB), before any of it goes upstream', async () => {
      expectError(await post(device.headers, chat, 'x'.repeat(70 * 1024)), 413, 'invalidRequest', 'body_too_large');
      // Not a head, not a byte: a streamed body would have reached the provider before the gateway counted past the limit.
      expect(upstream.requests).to.have.length(0);
    });
    it('413 for a chunked body that grows over the limit while streaming', async () => {
      const response = await rawRequest(gateway.url, {
        method: 'POST',
        path: chat,
        headers: { ...device.headers, 'transfer-encoding': 'chunked' },
        body: 'y'.repeat(4096),
      });
      expectError(response, 413, 'invalidRequest');
    });
    it('400 for an attestation body that is not JSON', async () => {
      const response = await rawRequest(gateway.url, {
        method: 'POST',
        path: '/v1/attest/development',
        headers: { 'content-type': 'application/json', 'Tollgate-App-Token': device.appToken },
        body: '{"developmentToken":',
      });
      expectError(response, 400, 'invalidRequest');
    });
  });

  describe('upstreamUnavailable (502) and upstreamTimeout (504)', () => {
    it('502 when the provider refuses the connection', async () => {
      expectError(await post(device.headers, '/v1/proxy/anthropic/v1/messages'), 502, 'upstreamUnavailable');
    });
    it('502 when the provider resets the connection before answering', async () => {
      upstream.respond(respondReset());
      expectError(await post(device.headers), 502, 'upstreamUnavailable');
    });
    it('504 when the provider sends no response head in time, and the upstream request is abandoned', async () => {
      upstream.respond(respondNever());
      expectError(await post(device.headers), 504, 'upstreamTimeout', 'first_byte_timeout');
      await upstream.last().closed;
      expect(upstream.last().aborted).to.equal(true);
    });
  });

  it('a provider error passes through unchanged, without Tollgate-Error', async () => {
    upstream.respond((_request, response) => {
      response.writeHead(429, { 'content-type': 'application/json', 'x-ratelimit-remaining-requests': '0' });
      response.end('{"error":{"message":"Rate limit reached","type":"requests"}}');
    });
    const response = await post(device.headers);
    expect(response.status).to.equal(429);
    expect(response.headers['tollgate-error']).to.equal(undefined);
    expect(response.headers['x-ratelimit-remaining-requests']).to.equal('0');
    expect(response.text()).to.equal('{"error":{"message":"Rate limit reached","type":"requests"}}');
  });

  it('unknown routes answer a typed 404 and every response carries Tollgate-Request-Id', async () => {
    const response = await rawRequest(gateway.url, { path: '/nope' });
    expectError(response, 404, 'invalidRequest');
    expect((await rawRequest(gateway.url, { path: '/healthz' })).headers['tollgate-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });
});
