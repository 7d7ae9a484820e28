/**
 * `POST /v1/attest/apple-app-attest` through a real gateway, with a test root standing in for Apple's (set by
 * TOLLGATE_TEST_APPLE_ROOT_FILE, which production ignores): attestation → device token → proxied call; assertion-based
 * refresh with a counter that must increase; the `every-request` mode, where each proxied call carries a
 * `Tollgate-Assertion` over the request digest, checked before anything reaches the provider.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeUpstream, respondJson } from '../../../test/support/fake-upstream';
import { TestGateway } from '../../../test/support/gateway';
import { requestDigest } from '../../../core/pipeline/verify-device';
import { createTestAssertion, createTestAttestation, createTestAuthority, type TestAttestation, type TestAuthority } from './test-chain';
import { GatewayError, type AppIdentity, type AttestationInput, type AttestationVerifier, type DeviceKeyStore } from '../../../core/contract';
import { createTestKeyAuthority } from '../../attestation-android-key-attestation/test/test-chain';
import { FakeGoogle, serviceAccount } from '../../attestation-android-play-integrity/test/fake-google';
import { PACKAGE, verdictPayload } from '../../attestation-android-play-integrity/test/token-builder';
import { exchangeBinding } from '../../attestation-android-play-integrity/index';
import { AppleAppAttestVerifier } from '../index';
import { tollgatePlugin as keyAttestationPlugin } from '../../attestation-android-key-attestation/index';
import { tollgatePlugin as playIntegrityPlugin } from '../../attestation-android-play-integrity/index';
import { tollgatePlugin as appAttestPlugin } from '../index';

const APP_ID = 'ABCDE12345.com.example.attest';

describe('apple-app-attest route and every-request assertions', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let authority: TestAuthority;
  let directory: string;

  before(async () => {
    authority = await createTestAuthority(new Date());
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-apple-'));
    writeFileSync(path.join(directory, 'root.pem'), authority.rootPem);
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_TEST_APPLE_ROOT_FILE: path.join(directory, 'root.pem') } });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
    rmSync(directory, { recursive: true, force: true });
  });

  async function challenge(appToken: string): Promise<string> {
    const response = await fetch(`${gateway.url}/v1/attest/challenge`, { method: 'POST', headers: { 'tollgate-app-token': appToken } });
    return ((await response.json()) as { challenge: string }).challenge;
  }
  const attest = (appToken: string, body: unknown) =>
    fetch(`${gateway.url}/v1/attest/apple-app-attest`, { method: 'POST', headers: { 'content-type': 'application/json', 'tollgate-app-token': appToken }, body: JSON.stringify(body) });
  const hashOf = (text: string) => createHash('sha256').update(text, 'utf8').digest();

  async function attestedDevice(settings: Record<string, unknown> = {}) {
    const app = await gateway.createApp({ appleAppId: APP_ID, ...settings });
    await gateway.setSecret(app.appId, 'openai', 'sk-apple-route-test-0000');
    const issued = await challenge(app.appToken);
    const key = await createTestAttestation({ authority, appId: APP_ID, clientDataHash: hashOf(issued), at: new Date() });
    const response = await attest(app.appToken, { keyId: key.keyId, attestation: key.attestation.toString('base64'), challenge: issued });
    const body = (await response.json()) as { deviceToken: string; deviceId: string; method: string };
    expect(response.status, JSON.stringify(body)).to.equal(200);
    return { ...app, key, deviceToken: body.deviceToken, deviceId: body.deviceId };
  }

  it('trades an attestation for a device token that the proxy accepts', async () => {
    const device = await attestedDevice();
    expect(device.deviceId).to.equal(device.key.keyId);
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': device.appToken, 'tollgate-device-token': device.deviceToken } });
    expect(response.status).to.equal(200);
    expect(upstream.last().headers.authorization).to.equal('Bearer sk-apple-route-test-0000');
  });

  it('refuses a replayed challenge, a wrong challenge, and a development key unless the app allows it', async () => {
    const app = await gateway.createApp({ appleAppId: APP_ID });
    const issued = await challenge(app.appToken);
    const wrong = await createTestAttestation({ authority, appId: APP_ID, clientDataHash: hashOf('another challenge'), at: new Date() });
    const refused = await attest(app.appToken, { keyId: wrong.keyId, attestation: wrong.attestation.toString('base64'), challenge: issued });
    expect(refused.status).to.equal(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).to.match(/nonce|challenge/i);
    const replay = await attest(app.appToken, { keyId: wrong.keyId, attestation: wrong.attestation.toString('base64'), challenge: issued });
    expect(((await replay.json()) as { error: { message: string } }).error.message).to.match(/already used|unknown/);

    const second = await challenge(app.appToken);
    const development = await createTestAttestation({ authority, appId: APP_ID, clientDataHash: hashOf(second), at: new Date(), aaguid: 'development' });
    const developmentRefused = await attest(app.appToken, { keyId: development.keyId, attestation: development.attestation.toString('base64'), challenge: second });
    expect(developmentRefused.status).to.equal(403);
    await gateway.gateway.management.updateApp(app.appId, { allowAppAttestDevelopment: true });
    const third = await challenge(app.appToken);
    const allowed = await createTestAttestation({ authority, appId: APP_ID, clientDataHash: hashOf(third), at: new Date(), aaguid: 'development' });
    expect((await attest(app.appToken, { keyId: allowed.keyId, attestation: allowed.attestation.toString('base64'), challenge: third })).status).to.equal(200);
  });

  it('refreshes with an assertion whose counter must increase (exchange mode)', async () => {
    const device = await attestedDevice();
    const refresh = async (counter: number) => {
      const issued = await challenge(device.appToken);
      const assertion = createTestAssertion({ privateKey: device.key.privateKey, appId: APP_ID, counter, clientDataHash: hashOf(issued) });
      return attest(device.appToken, { keyId: device.key.keyId, assertion: assertion.toString('base64'), challenge: issued });
    };
    expect((await refresh(1)).status).to.equal(200);
    expect((await refresh(5)).status).to.equal(200);
    const stale = await refresh(5);
    expect(stale.status).to.equal(403);
    expect(((await stale.json()) as { error: { message: string } }).error.message).to.match(/counter/);
    const unknown = await attest(device.appToken, { keyId: Buffer.alloc(32, 7).toString('base64'), assertion: createTestAssertion({ privateKey: device.key.privateKey, appId: APP_ID, counter: 9, clientDataHash: hashOf('x') }).toString('base64'), challenge: await challenge(device.appToken) });
    expect(unknown.status).to.equal(403);
  });

  describe('every-request mode', () => {
    let device: Awaited<ReturnType<typeof attestedDevice>>;
    let counter = 0;
    before(async () => {
      device = await attestedDevice({ assertionMode: 'every-request', allowDevelopmentAttestation: false });
    });

    /** A signed proxied call, as the SDK makes it; `change` tampers with what is sent after signing. */
    async function signedCall(options: { body?: string; key?: TestAttestation; time?: number; reuse?: string; change?: { body?: string; path?: string } } = {}) {
      const pathWithQuery = '/v1/proxy/openai/v1/chat/completions?trace=1';
      const body = options.body ?? '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}';
      const time = String(options.time ?? Date.now());
      counter += 1;
      const assertion = options.reuse ?? createTestAssertion({ privateKey: (options.key ?? device.key).privateKey, appId: APP_ID, counter, clientDataHash: requestDigest('POST', pathWithQuery, time, Buffer.from(body)) }).toString('base64url');
      const before = upstream.requests.length;
      const response = await fetch(`${gateway.url}${options.change?.path ?? pathWithQuery}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'tollgate-app-token': device.appToken, 'tollgate-device-token': device.deviceToken, 'tollgate-request-time': time, 'tollgate-assertion': assertion },
        body: options.change?.body ?? body,
      });
      const text = await response.text();
      return { status: response.status, error: response.headers.get('tollgate-error'), text, reached: upstream.requests.length > before, assertion };
    }

    it('forwards a call whose assertion covers its method, path, time and body, with the body intact and no Tollgate header', async () => {
      const call = await signedCall();
      expect(call.status, call.text).to.equal(200);
      const received = upstream.last();
      expect(received.body.toString()).to.equal('{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}');
      expect(received.url).to.equal('/v1/chat/completions?trace=1');
      expect(Object.keys(received.headers).filter((name) => name.startsWith('tollgate-'))).to.deep.equal([]);
    });

    it('refuses, before the provider sees anything: no assertion, a replayed one, a changed body, a changed path, a stale time, another key', async () => {
      const missing = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': device.appToken, 'tollgate-device-token': device.deviceToken } });
      expect(missing.status).to.equal(403);
      const first = await signedCall();
      expect(first.status).to.equal(200);
      const cases = [
        await signedCall({ reuse: first.assertion }),
        await signedCall({ change: { body: '{"model":"gpt-4o","messages":[]}' } }),
        await signedCall({ change: { path: '/v1/proxy/openai/v1/chat/completions?trace=2' } }),
        await signedCall({ time: Date.now() - 10 * 60 * 1000 }),
        await signedCall({ key: await createTestAttestation({ authority, appId: APP_ID, clientDataHash: hashOf('other'), at: new Date() }) }),
      ];
      for (const call of cases) {
        expect(call.status, call.text).to.equal(403);
        expect(call.error).to.equal('attestationFailed');
        expect(call.reached).to.equal(false);
      }
    });
  });
});

describe('apple-app-attest verifier: bodies, the app id, and a counter another request advanced first', () => {
  const at = new Date();
  let authority: TestAuthority;
  before(async () => {
    authority = await createTestAuthority(at);
  });
  const app = (settings: Record<string, unknown> = { appleAppId: APP_ID }): AppIdentity => ({ id: 'app_1', name: 'App', settings, devicesRevokedBefore: 0 }) as unknown as AppIdentity;
  function input(body: Record<string, unknown>, options: { settings?: Record<string, unknown>; devices?: DeviceKeyStore; secrets?: Record<string, string> } = {}) {
    const used: string[] = [];
    const value: AttestationInput = {
      app: app(options.settings),
      body,
      production: false,
      consumeChallenge: async () => true,
      useChallenge: async (text) => {
        used.push(text);
      },
      devices: options.devices ?? { find: async () => null, advanceCounter: async () => true },
      readAttestationSecret: async (name) => options.secrets?.[name] ?? null,
    };
    return { value, used };
  }
  const outcome = async (verifier: AppleAppAttestVerifier, attestation: ReturnType<typeof input>) => {
    try {
      return { ...(await verifier.verify(attestation.value)), used: attestation.used.length };
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      return { type: error.type, reason: error.reason, used: attestation.used.length };
    }
  };

  it('registers each method under its own name; the test trust anchors and Google endpoints come from the settings, and production ignores the test roots', async () => {
    const keyAuthority = await createTestKeyAuthority();
    const account = serviceAccount();
    const google = await new FakeGoogle(account).start();
    const rootDirectory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-register-'));
    const rootFile = path.join(rootDirectory, 'root.pem');
    writeFileSync(rootFile, authority.rootPem);
    try {
      const register = (production: boolean) => {
        const registered = new Map<string, AttestationVerifier>();
        const settings = { TOLLGATE_TEST_APPLE_ROOT_FILE: rootFile, TOLLGATE_TEST_ANDROID_ROOT_SPKI_SHA256: `${'00'.repeat(32)},${keyAuthority.rootSpkiSha256}`, TOLLGATE_PLAY_INTEGRITY_API_URL: google.baseUrl, TOLLGATE_PLAY_INTEGRITY_TOKEN_URL: google.tokenUrl };
        const host = { production, settings, registerAttestationVerifier: (verifier: AttestationVerifier) => registered.set(verifier.method, verifier) };
        for (const plugin of [appAttestPlugin, keyAttestationPlugin, playIntegrityPlugin]) plugin.register!(host as never);
        return registered;
      };
      const attestBoth = async (registered: Map<string, AttestationVerifier>) => {
        const challenge = 'cmVnaXN0ZXI';
        const apple = await createTestAttestation({ authority, appId: APP_ID, clientDataHash: createHash('sha256').update(challenge, 'utf8').digest(), at: new Date() });
        const android = await keyAuthority.attest({ challenge: Buffer.from(challenge, 'base64url'), packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32) });
        const results = [];
        for (const [method, body, settings] of [
          ['apple-app-attest', { keyId: apple.keyId, challenge, attestation: apple.attestation.toString('base64') }, { appleAppId: APP_ID }],
          ['android-key-attestation', { challenge, chain: android.chain }, { androidPackage: 'com.example.app' }],
        ] as const) {
          results.push(await outcome(registered.get(method)! as AppleAppAttestVerifier, input(body, { settings })).then((result) => ('reason' in result ? result.reason : 'attested')));
        }
        return results;
      };
      const development = register(false);
      expect([...development.keys()]).to.deep.equal(['apple-app-attest', 'android-key-attestation', 'android-play-integrity']);
      expect(await attestBoth(development)).to.deep.equal(['attested', 'attested']);
      expect(await attestBoth(register(true))).to.deep.equal(['untrusted_root', 'untrusted_root']);
      // The Play Integrity endpoints named in the settings (a fake Google on loopback) are the ones asked.
      google.payloads.set('standard-token', verdictPayload({ requestHash: exchangeBinding('cGxheQ', 'installation-0009'), timestampMillis: Date.now() }));
      const play = await outcome(development.get('android-play-integrity')! as AppleAppAttestVerifier, input({ challenge: 'cGxheQ', integrityToken: 'standard-token', deviceId: 'installation-0009', type: 'standard' }, { settings: { androidPackage: PACKAGE }, secrets: { 'play-integrity-service-account': account.json } }));
      expect(play).to.deep.equal({ deviceId: 'pi:installation-0009', used: 1 });
      expect(google.decodeRequests).to.equal(1);
    } finally {
      rmSync(rootDirectory, { recursive: true, force: true });
      await google.stop();
    }
  });

  it('refuses a malformed body before consuming the challenge', async () => {
    const verifier = new AppleAppAttestVerifier([authority.rootPem], () => at.getTime());
    const good = { keyId: 'a2V5LWlk', challenge: 'Y2hhbGxlbmdl', attestation: 'YXR0ZXN0YXRpb24=' };
    const refused = [
      { ...good, keyId: 7 },
      { ...good, keyId: 'not base64!' },
      { ...good, keyId: 'A'.repeat(101) },
      { ...good, challenge: 7 },
      { keyId: good.keyId, challenge: good.challenge },
      { ...good, attestation: 7 },
      { ...good, attestation: 'not base64!' },
      { ...good, attestation: 'A'.repeat(65_537) },
      { ...good, assertion: 'YXNzZXJ0aW9u' },
      { keyId: good.keyId, challenge: good.challenge, assertion: 'A'.repeat(65_537) },
    ];
    for (const body of refused) {
      expect(await outcome(verifier, input(body)), JSON.stringify(body).slice(0, 80)).to.deep.equal({ type: 'invalidRequest', reason: 'attestation_body_invalid', used: 0 });
    }
    // At the bounds the body is read: the challenge is spent, then the attestation itself is refused.
    for (const body of [{ ...good, keyId: 'A'.repeat(100) }, { ...good, attestation: 'A'.repeat(65_536) }]) {
      expect(await outcome(verifier, input(body))).to.deep.equal({ type: 'attestationFailed', reason: 'malformed_attestation', used: 1 });
    }
    expect(await outcome(verifier, input(good, { settings: {} }))).to.deep.equal({ type: 'attestationFailed', reason: 'apple_app_not_configured', used: 0 });
  });

  it('refuses a valid assertion whose counter another request advanced first (counter_not_increased), and refreshes otherwise', async () => {
    const verifier = new AppleAppAttestVerifier([authority.rootPem], () => at.getTime());
    const challenge = 'cmVmcmVzaA';
    const clientDataHash = createHash('sha256').update(challenge, 'utf8').digest();
    const attested = await createTestAttestation({ authority, appId: APP_ID, clientDataHash, at });
    const assertion = createTestAssertion({ privateKey: attested.privateKey, appId: APP_ID, counter: 5, clientDataHash }).toString('base64');
    const advanced: Array<[number, number]> = [];
    const devices = (wins: boolean): DeviceKeyStore => ({
      find: async () => ({ publicKey: attested.publicKeyPem, counter: 4, revoked: false }),
      advanceCounter: async (_appId, _deviceId, expected, next) => {
        advanced.push([expected, next]);
        return wins;
      },
    });
    expect(await outcome(verifier, input({ keyId: attested.keyId, challenge, assertion }, { devices: devices(false) }))).to.deep.equal({ type: 'attestationFailed', reason: 'counter_not_increased', used: 1 });
    expect(await outcome(verifier, input({ keyId: attested.keyId, challenge, assertion }, { devices: devices(true) }))).to.deep.equal({ deviceId: attested.keyId, used: 1 });
    expect(advanced).to.deep.equal([[4, 5], [4, 5]]);
    expect(await outcome(verifier, input({ keyId: attested.keyId, challenge, assertion }, { settings: {}, devices: devices(true) }))).to.deep.equal({ type: 'attestationFailed', reason: 'apple_app_not_configured', used: 0 });
  });
});
