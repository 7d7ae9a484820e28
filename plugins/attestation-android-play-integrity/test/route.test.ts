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
    const token = await buildClassicToken(verdictPayload({ nonce: challenge, timestampMillis: Date.now() }), app.keys);
    const result = await attest(app.appToken, { challenge, integrityToken: token, deviceId: 'installation-0001' });
    expect(result.status, JSON.stringify(result.body)).to.equal(200);
    expect(result.body.deviceId).to.equal('pi:installation-0001');
    const proxied = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': result.body.deviceToken! } });
    expect(proxied.status).to.equal(200);
    const listed = await (await admin('GET', `/apps/${app.appId}/attestation-secrets`)).text();
    expect(listed).to.not.include(app.keys.decryptionKey).and.not.include(app.keys.verificationKey.slice(0, 40)).and.not.include('PRIVATE KEY');
    expect(await (await admin('GET', `/apps/${app.appId}/secrets`)).json()).to.have.length(1); // provider keys only
  });

  it('refuses a wrong package, a failing device verdict, a stale verdict, another nonce and a replayed challenge', async () => {
    const app = await configuredApp();
    const cases: Array<(challenge: string) => Record<string, unknown>> = [
      (nonce) => ({ ...verdictPayload({ nonce, timestampMillis: Date.now() }), appIntegrity: { appRecognitionVerdict: 'PLAY_RECOGNIZED', packageName: 'com.example.impostor', certificateSha256Digest: [CERTIFICATE_DIGEST] } }),
      (nonce) => ({ ...verdictPayload({ nonce, timestampMillis: Date.now() }), deviceIntegrity: { deviceRecognitionVerdict: ['MEETS_BASIC_INTEGRITY'] } }),
      (nonce) => verdictPayload({ nonce, timestampMillis: Date.now() - 10 * 60 * 1000 }),
      () => verdictPayload({ nonce: 'c29tZSBvdGhlciBub25jZSB2YWx1ZQ', timestampMillis: Date.now() }),
    ];
    for (const make of cases) {
      const challenge = await challengeFor(app.appToken);
      const result = await attest(app.appToken, { challenge, integrityToken: await buildClassicToken(make(challenge), app.keys), deviceId: 'installation-0002' });
      expect(result.status, JSON.stringify(result.body)).to.equal(403);
      expect(result.body.error!.type).to.equal('attestationFailed');
    }
    const challenge = await challengeFor(app.appToken);
    const token = await buildClassicToken(verdictPayload({ nonce: challenge, timestampMillis: Date.now() }), app.keys);
    expect((await attest(app.appToken, { challenge, integrityToken: token, deviceId: 'installation-0003' })).status).to.equal(200);
    expect((await attest(app.appToken, { challenge, integrityToken: token, deviceId: 'installation-0003' })).status).to.equal(403);
  });

  it('verifies a standard token through Google’s decodeIntegrityToken (a fake on loopback)', async () => {
    const app = await configuredApp();
    const challenge = await challengeFor(app.appToken);
    google.payloads.set('standard-token-1', verdictPayload({ requestHash: challenge, timestampMillis: Date.now() }));
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
});
