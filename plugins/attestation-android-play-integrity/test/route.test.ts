/**
 * `POST /v1/attest/android-play-integrity` through a real gateway: the app's Play Console keys and service account are
 * stored through the management API as write-only attestation secrets; a classic token is verified locally, a standard
 * one through a fake Google endpoint on loopback; then the device token opens the proxy.
 */
import { expect } from 'chai';
import { FakeUpstream, respondJson } from '../../../test/support/fake-upstream';
import { TestGateway } from '../../../test/support/gateway';
import { FakeGoogle, serviceAccount } from './fake-google';
import { CERTIFICATE_DIGEST, PACKAGE, buildClassicToken, generatePlayConsoleKeys, verdictPayload } from './token-builder';
import { PlayIntegrityVerifier, exchangeBinding } from '../index';
import { GatewayError, type AppIdentity, type AttestationInput } from '../../../core/contract';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { requestDigest } from '../../../core/pipeline/verify-device';

describe('android-play-integrity route', () => {
  let upstream: FakeUpstream;
  let google: FakeGoogle;
  let gateway: TestGateway;
  let adminKey: string;
  const account = serviceAccount();

  before(async () => {
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    google = await new FakeGoogle(account).start();
    gateway = await TestGateway.start({
      upstreams: { openai: upstream.url },
      env: { TOLLGATE_PLAY_INTEGRITY_API_URL: google.baseUrl, TOLLGATE_PLAY_INTEGRITY_TOKEN_URL: google.tokenUrl },
    });
    adminKey = (await gateway.gateway.management.createAdminKey({ name: 'play' })).adminKey;
  });
  after(async () => {
    await gateway.close();
    await google.stop();
    await upstream.close();
  });

  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${gateway.url}/v1/admin${path}`, { method, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });

  async function configuredApp(settings: Record<string, unknown> = {}) {
    const keys = generatePlayConsoleKeys();
    const app = await gateway.createApp({ androidPackage: PACKAGE, androidCertSha256: Buffer.from(CERTIFICATE_DIGEST, 'base64url').toString('hex'), ...settings });
    await gateway.setSecret(app.appId, 'openai', 'sk-play-route-0000');
    for (const [name, value] of [['play-integrity-decryption-key', keys.decryptionKey], ['play-integrity-verification-key', keys.verificationKey], ['play-integrity-service-account', account.json]] as const) {
      const stored = await admin('PUT', `/apps/${app.appId}/attestation-secrets/${name}`, { value });
      expect(stored.status).to.equal(200);
      expect(JSON.stringify(await stored.json())).to.not.include(value.slice(0, 20));
    }
    return { ...app, keys };
  }
  const challengeFor = async (appToken: string) => ((await (await fetch(`${gateway.url}/v1/attest/challenge`, { method: 'POST', headers: { 'tollgate-app-token': appToken } })).json()) as { challenge: string }).challenge;
  const attest = async (appToken: string, body: unknown) => {
    const response = await fetch(`${gateway.url}/v1/attest/android-play-integrity`, { method: 'POST', headers: { 'content-type': 'application/json', 'tollgate-app-token': appToken }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as { deviceToken?: string; deviceId?: string; error?: { type: string; message: string } } };
  };

  it('verifies a classic token locally and issues a device token the proxy accepts; the keys are listed masked only', async () => {
    const app = await configuredApp();
    const challenge = await challengeFor(app.appToken);
    const token = await buildClassicToken(verdictPayload({ nonce: exchangeBinding(challenge, 'installation-0001'), timestampMillis: Date.now() }), app.keys);
    const result = await attest(app.appToken, { challenge, integrityToken: token, deviceId: 'installation-0001' });
    expect(result.status, JSON.stringify(result.body)).to.equal(200);
    expect(result.body.deviceId).to.equal('pi:installation-0001');
    const proxied = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': result.body.deviceToken! } });
    expect(proxied.status).to.equal(200);
    const listed = await (await admin('GET', `/apps/${app.appId}/attestation-secrets`)).text();
    expect(listed).to.not.include(app.keys.decryptionKey).and.not.include(app.keys.verificationKey.slice(0, 40)).and.not.include('PRIVATE KEY');
    expect(await (await admin('GET', `/apps/${app.appId}/secrets`)).json()).to.have.length(1); // provider keys only
  });

  it('refuses a wrong package, a failing device verdict, a stale verdict, another nonce, another installation’s binding and a replayed challenge', async () => {
    const app = await configuredApp();
    const cases: Array<(challenge: string) => Record<string, unknown>> = [
      (challenge) => ({ ...verdictPayload({ nonce: exchangeBinding(challenge, 'installation-0002'), timestampMillis: Date.now() }), appIntegrity: { appRecognitionVerdict: 'PLAY_RECOGNIZED', packageName: 'com.example.impostor', certificateSha256Digest: [CERTIFICATE_DIGEST] } }),
      (challenge) => ({ ...verdictPayload({ nonce: exchangeBinding(challenge, 'installation-0002'), timestampMillis: Date.now() }), deviceIntegrity: { deviceRecognitionVerdict: ['MEETS_BASIC_INTEGRITY'] } }),
      (challenge) => verdictPayload({ nonce: exchangeBinding(challenge, 'installation-0002'), timestampMillis: Date.now() - 10 * 60 * 1000 }),
      // The challenge alone (the binding before the device id was bound) and the binding of another installation.
      (challenge) => verdictPayload({ nonce: challenge, timestampMillis: Date.now() }),
      (challenge) => verdictPayload({ nonce: exchangeBinding(challenge, 'installation-9999'), timestampMillis: Date.now() }),
      () => verdictPayload({ nonce: 'c29tZSBvdGhlciBub25jZSB2YWx1ZQ', timestampMillis: Date.now() }),
    ];
    for (const make of cases) {
      const challenge = await challengeFor(app.appToken);
      const result = await attest(app.appToken, { challenge, integrityToken: await buildClassicToken(make(challenge), app.keys), deviceId: 'installation-0002' });
      expect(result.status, JSON.stringify(result.body)).to.equal(403);
      expect(result.body.error!.type).to.equal('attestationFailed');
    }
    const challenge = await challengeFor(app.appToken);
    const token = await buildClassicToken(verdictPayload({ nonce: exchangeBinding(challenge, 'installation-0003'), timestampMillis: Date.now() }), app.keys);
    expect((await attest(app.appToken, { challenge, integrityToken: token, deviceId: 'installation-0003' })).status).to.equal(200);
    expect((await attest(app.appToken, { challenge, integrityToken: token, deviceId: 'installation-0003' })).status).to.equal(403);
  });

  it('verifies a standard token through Google’s decodeIntegrityToken (a fake on loopback)', async () => {
    const app = await configuredApp();
    const challenge = await challengeFor(app.appToken);
    google.payloads.set('standard-token-1', verdictPayload({ requestHash: exchangeBinding(challenge, 'installation-0004'), timestampMillis: Date.now() }));
    const result = await attest(app.appToken, { challenge, integrityToken: 'standard-token-1', deviceId: 'installation-0004', type: 'standard' });
    expect(result.status, JSON.stringify(result.body)).to.equal(200);
    const other = await challengeFor(app.appToken);
    const unknown = await attest(app.appToken, { challenge: other, integrityToken: 'unknown-token', deviceId: 'installation-0004', type: 'standard' });
    expect(unknown.status).to.equal(403);
  });

  it('refuses an app without its Play Integrity keys, and bad input', async () => {
    const bare = await gateway.createApp({ androidPackage: PACKAGE });
    const challenge = await challengeFor(bare.appToken);
    const refused = await attest(bare.appToken, { challenge, integrityToken: 'x.y.z.w.v', deviceId: 'installation-0005' });
    expect(refused.status).to.equal(403);
    expect(refused.body.error!.message).to.match(/no Play Integrity keys/);
    expect((await attest(bare.appToken, { challenge: 'c', integrityToken: 1, deviceId: 'x' })).status).to.equal(400);
    expect((await admin('PUT', `/apps/${bare.appId}/attestation-secrets/not-a-name`, { value: 'x' })).status).to.equal(400);
  });

  it('binds the installation id to the verdict: the binding is the conformance vector’s, another installation’s verdict is refused, ids differing in case are one device', async () => {
    // sdk/conformance/client-behaviour.json, rule attestation-request: what the SDKs compute.
    const vectors = (JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', '..', '..', 'sdk', 'conformance', 'client-behaviour.json'), 'utf8')) as { vectors: Array<{ name: string; input: { fields: Record<string, string> }; expected: Record<string, string> }> }).vectors;
    for (const name of ['attestation-request-play-integrity-standard', 'attestation-request-play-integrity-classic']) {
      const vector = vectors.find((entry) => entry.name === name)!;
      expect(exchangeBinding(vector.input.fields.challenge!, vector.input.fields.deviceId!)).to.equal(vector.expected.requestHash ?? vector.expected.nonce);
    }
    const app = await configuredApp();
    const challenge = await challengeFor(app.appToken);
    google.payloads.set('standard-token-other-installation', verdictPayload({ requestHash: exchangeBinding(challenge, 'installation-aaaa'), timestampMillis: Date.now() }));
    const stolen = await attest(app.appToken, { challenge, integrityToken: 'standard-token-other-installation', deviceId: 'installation-bbbb', type: 'standard' });
    expect(stolen.status, JSON.stringify(stolen.body)).to.equal(403);
    expect((stolen.body.error as { reason?: string }).reason).to.equal('request_hash_mismatch');

    const first = await challengeFor(app.appToken);
    const upper = await attest(app.appToken, { challenge: first, integrityToken: await buildClassicToken(verdictPayload({ nonce: exchangeBinding(first, 'Installation-CASE'), timestampMillis: Date.now() }), app.keys), deviceId: 'Installation-CASE' });
    expect(upper.status, JSON.stringify(upper.body)).to.equal(200);
    expect(upper.body.deviceId).to.equal('pi:installation-case');
    await gateway.gateway.management.revokeDevice(app.appId, 'pi:INSTALLATION-case');
    const second = await challengeFor(app.appToken);
    const lower = await attest(app.appToken, { challenge: second, integrityToken: await buildClassicToken(verdictPayload({ nonce: exchangeBinding(second, 'installation-case'), timestampMillis: Date.now() }), app.keys), deviceId: 'installation-case' });
    expect(lower.status).to.equal(403);
    expect((lower.body.error as { reason?: string }).reason).to.equal('device_revoked');
  });

  it('every-request mode: each proxied call carries a standard token whose requestHash is the request digest; anything else never reaches the provider', async () => {
    const app = await configuredApp({ assertionMode: 'every-request', allowDevelopmentAttestation: false });
    const challenge = await challengeFor(app.appToken);
    google.payloads.set('standard-exchange', verdictPayload({ requestHash: exchangeBinding(challenge, 'installation-0100'), timestampMillis: Date.now() }));
    const exchanged = await attest(app.appToken, { challenge, integrityToken: 'standard-exchange', deviceId: 'installation-0100', type: 'standard' });
    expect(exchanged.status, JSON.stringify(exchanged.body)).to.equal(200);
    const pathWithQuery = '/v1/proxy/openai/v1/chat/completions?n=1';
    const body = '{"model":"gpt-4o-mini","messages":[]}';
    let sequence = 0;
    const call = async (options: { requestHash?: (digest: Buffer) => string; assertion?: string; body?: string; payload?: (hash: string) => Record<string, unknown> } = {}) => {
      const time = String(Date.now());
      const digest = requestDigest('POST', pathWithQuery, time, Buffer.from(body));
      const token = options.assertion ?? `standard-request-${(sequence += 1)}`;
      const hash = (options.requestHash ?? ((value: Buffer) => value.toString('base64url')))(digest);
      if (!options.assertion) google.payloads.set(token, (options.payload ?? ((requestHash: string) => verdictPayload({ requestHash, timestampMillis: Date.now() })))(hash));
      const before = upstream.requests.length;
      const response = await fetch(`${gateway.url}${pathWithQuery}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken, 'tollgate-device-token': exchanged.body.deviceToken!, 'tollgate-request-time': time, 'tollgate-assertion': token },
        body: options.body ?? body,
      });
      const answer = (await response.json()) as { error?: { reason: string } };
      return { status: response.status, reason: answer.error?.reason, reached: upstream.requests.length > before, token };
    };
    const good = await call();
    expect(good.status).to.equal(200);
    expect(good.reached).to.equal(true);
    const refusals = [
      await call({ assertion: good.token }), // the same proof again
      await call({ requestHash: (digest) => digest.toString('hex') }), // the digest, not base64url
      await call({ body: '{"model":"gpt-4o","messages":[]}' }), // another body than the one proven
      await call({ payload: (requestHash) => ({ ...verdictPayload({ requestHash, timestampMillis: Date.now() }), deviceIntegrity: { deviceRecognitionVerdict: [] } }) }),
      await call({ assertion: 'a-token-google-never-issued' }),
    ];
    expect(refusals.map((refusal) => [refusal.status, refusal.reached])).to.deep.equal(refusals.map(() => [403, false]));
    expect(refusals.map((refusal) => refusal.reason)).to.deep.equal(['assertion_replayed', 'request_hash_mismatch', 'request_hash_mismatch', 'device_integrity_insufficient', 'google_rejected']);
    const missing = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': exchanged.body.deviceToken! } });
    expect(missing.status).to.equal(403);
    expect(((await missing.json()) as { error: { reason: string } }).error.reason).to.equal('assertion_required');
  });
});

describe('android-play-integrity verifier: bodies, the app’s settings and secrets, Google’s faults', () => {
  const account = serviceAccount();
  const keys = generatePlayConsoleKeys();
  let google: FakeGoogle;
  before(async () => {
    google = await new FakeGoogle(account).start();
  });
  after(() => google.stop());

  const app = (settings: Record<string, unknown>): AppIdentity => ({ id: 'app_1', name: 'App', settings, devicesRevokedBefore: 0 }) as unknown as AppIdentity;
  const allSecrets: Record<string, string> = { 'play-integrity-decryption-key': keys.decryptionKey, 'play-integrity-verification-key': keys.verificationKey, 'play-integrity-service-account': account.json };
  /** The route's input: the app's settings and attestation secrets; records the challenges consumed. */
  function input(body: Record<string, unknown>, options: { settings?: Record<string, unknown>; secrets?: Record<string, string> } = {}) {
    const used: string[] = [];
    const secrets = options.secrets ?? allSecrets;
    const value: AttestationInput = {
      app: app(options.settings ?? { androidPackage: PACKAGE }),
      body,
      production: false,
      consumeChallenge: async () => true,
      useChallenge: async (text) => {
        used.push(text);
      },
      devices: { find: async () => null, advanceCounter: async () => true },
      readAttestationSecret: async (name) => secrets[name] ?? null,
    };
    return { value, used };
  }
  const outcome = async (verifier: PlayIntegrityVerifier, attestation: ReturnType<typeof input>) => {
    try {
      return { ...(await verifier.verify(attestation.value)), used: attestation.used.length };
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      return { type: error.type, reason: error.reason, used: attestation.used.length };
    }
  };
  const verifier = () => new PlayIntegrityVerifier({ apiBaseUrl: google.baseUrl, tokenUrl: google.tokenUrl });
  const classic = async (challenge: string, deviceId: string, edit: (payload: Record<string, unknown>) => void = () => {}) => {
    const payload = verdictPayload({ nonce: exchangeBinding(challenge, deviceId), timestampMillis: Date.now() });
    edit(payload);
    return buildClassicToken(payload, keys);
  };

  it('refuses a malformed body before consuming the challenge', async () => {
    const token = 'a.b.c.d.e';
    const good = { challenge: 'Y2hhbGxlbmdl', integrityToken: token, deviceId: 'installation-0001' };
    const refused = [
      { ...good, challenge: 7 },
      { ...good, integrityToken: 7 },
      { ...good, integrityToken: 'A'.repeat(65_537) },
      { ...good, deviceId: 7 },
      { ...good, deviceId: ['installation-0001'] },
      { ...good, deviceId: 'short' },
      { ...good, deviceId: 'has space 0001' },
      { ...good, type: 'other' },
      { ...good, type: 7 },
    ];
    for (const body of refused) {
      expect(await outcome(verifier(), input(body)), JSON.stringify(body).slice(0, 80)).to.deep.equal({ type: 'invalidRequest', reason: 'attestation_body_invalid', used: 0 });
    }
    // 65,536 characters, and both types, are read (and consume the challenge before the token is checked).
    for (const body of [{ ...good, integrityToken: 'A'.repeat(65_536) }, { ...good, type: 'classic' }]) {
      expect(await outcome(verifier(), input(body))).to.deep.equal({ type: 'attestationFailed', reason: 'malformed_token', used: 1 });
    }
    expect(await outcome(verifier(), input({ ...good, type: 'standard' }))).to.deep.include({ type: 'attestationFailed', used: 1 });
  });

  it('refuses an app without a package, without both Play Console keys, or without a service account for standard requests', async () => {
    const challenge = 'Y2hhbGxlbmdl';
    const token = await classic(challenge, 'installation-0001');
    const body = { challenge, integrityToken: token, deviceId: 'installation-0001' };
    expect(await outcome(verifier(), input(body, { settings: {} }))).to.deep.equal({ type: 'attestationFailed', reason: 'android_app_not_configured', used: 0 });
    for (const missing of ['play-integrity-decryption-key', 'play-integrity-verification-key']) {
      const secrets = { ...allSecrets };
      delete secrets[missing];
      expect(await outcome(verifier(), input(body, { secrets }))).to.deep.equal({ type: 'attestationFailed', reason: 'play_integrity_not_configured', used: 1 });
    }
    expect(await outcome(verifier(), input({ ...body, type: 'standard' }, { secrets: { 'play-integrity-decryption-key': keys.decryptionKey } }))).to.deep.equal({ type: 'attestationFailed', reason: 'play_integrity_not_configured', used: 1 });
    expect(await outcome(verifier(), input(body))).to.deep.equal({ deviceId: 'pi:installation-0001', used: 1 });
    // Unusable stored keys are the operator's configuration error, not a device refused: the error goes up as it is.
    const misconfigured = await verifier()
      .verify(input(body, { secrets: { ...allSecrets, 'play-integrity-decryption-key': Buffer.alloc(16).toString('base64') } }).value)
      .then(() => undefined, (error: unknown) => error);
    expect(misconfigured).to.be.instanceOf(Error).and.not.be.instanceOf(GatewayError);
    expect((misconfigured as Error).message).to.equal('the Play Integrity decryption key must be the base64 of a 32-byte AES-256 key');
  });

  it('pins the app’s signing certificate (androidCertSha256) when it is set, and takes any when it is not', async () => {
    const challenge = 'Y2VydGlmaWNhdGU';
    const otherCertificate = Buffer.alloc(32, 0xcd).toString('base64url');
    const token = await classic(challenge, 'installation-0002', (payload) => {
      (payload.appIntegrity as Record<string, unknown>).certificateSha256Digest = [otherCertificate];
    });
    const body = { challenge, integrityToken: token, deviceId: 'installation-0002' };
    const pinned = await outcome(verifier(), input(body, { settings: { androidPackage: PACKAGE, androidCertSha256: Buffer.from(CERTIFICATE_DIGEST, 'base64url').toString('hex') } }));
    expect(pinned).to.deep.include({ type: 'attestationFailed', used: 1 });
    expect(pinned).to.have.property('reason').that.matches(/certificate/);
    expect(await outcome(verifier(), input(body))).to.deep.equal({ deviceId: 'pi:installation-0002', used: 1 });
  });

  it('answers Google unreachable as the upstream’s fault (upstreamUnavailable), a token Google refuses as the device’s', async () => {
    const challenge = 'Z29vZ2xl';
    const body = { challenge, integrityToken: 'standard-unknown', deviceId: 'installation-0003', type: 'standard' };
    expect(await outcome(verifier(), input(body))).to.deep.equal({ type: 'attestationFailed', reason: 'google_rejected', used: 1 });
    google.unavailable = true;
    try {
      google.payloads.set('standard-known', verdictPayload({ requestHash: exchangeBinding(challenge, 'installation-0003'), timestampMillis: Date.now() }));
      expect(await outcome(verifier(), input({ ...body, integrityToken: 'standard-known' }))).to.deep.equal({ type: 'upstreamUnavailable', reason: 'google_unavailable', used: 1 });
    } finally {
      google.unavailable = false;
    }
    expect(await outcome(verifier(), input({ ...body, integrityToken: 'standard-known' }))).to.deep.equal({ deviceId: 'pi:installation-0003', used: 1 });
  });

  it('keeps one decoder, and so one access token, per service account; the plugin’s clock drives its renewal', async () => {
    let now = Date.now();
    const shared = new PlayIntegrityVerifier({ apiBaseUrl: google.baseUrl, tokenUrl: google.tokenUrl, clock: () => now });
    const before = google.tokenRequests;
    for (const index of [1, 2, 3]) {
      const challenge = `c2hhcmVk${index}`;
      google.payloads.set(`standard-shared-${index}`, verdictPayload({ requestHash: exchangeBinding(challenge, 'installation-0004'), timestampMillis: now }));
      expect(await outcome(shared, input({ challenge, integrityToken: `standard-shared-${index}`, deviceId: 'installation-0004', type: 'standard' }))).to.deep.equal({ deviceId: 'pi:installation-0004', used: 1 });
    }
    expect(google.tokenRequests - before).to.equal(1);
    // An hour on (by the plugin's clock), the token is renewed.
    now += 3_600_000;
    google.payloads.set('standard-later', verdictPayload({ requestHash: exchangeBinding('bGF0ZXI', 'installation-0004'), timestampMillis: now }));
    expect(await outcome(shared, input({ challenge: 'bGF0ZXI', integrityToken: 'standard-later', deviceId: 'installation-0004', type: 'standard' }))).to.deep.equal({ deviceId: 'pi:installation-0004', used: 1 });
    expect(google.tokenRequests - before).to.equal(2);
  });
});
