/**
 * `POST /v1/attest/android-key-attestation` and `tollgate attest verify`: the route consumes a single-use challenge bound
 * to the app and answers `attestationFailed` with a reason for every rejected chain; the CLI verifies offline at a given
 * instant and exits 1 with the reason.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { KeyObject, createHash, generateKeyPairSync, sign } from 'node:crypto';
import { requestDigest } from '../../../core/pipeline/verify-device';
import { GatewayError, type AppIdentity, type AttestationInput } from '../../../core/contract';
import { AndroidKeyAttestationVerifier } from '../index';
import { DeviceRepository } from '../../../core/storage/repositories';
import { createTestKeyAuthority } from './test-chain';
import { FakeUpstream, respondJson } from '../../../test/support/fake-upstream';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as x509 from '@peculiar/x509';
import { TestGateway } from '../../../test/support/gateway';

/** The real chains, copied into the project with their provenance (test/fixtures/README.md); read from the source tree. */
const TESTDATA = path.resolve(__dirname, '..', '..', '..', '..', 'plugins', 'attestation-android-key-attestation', 'test', 'fixtures');
const CLI = path.resolve(__dirname, '..', '..', '..', 'bin', 'tollgate.js');
const derChain = (name: string) =>
  readFileSync(path.join(TESTDATA, name), 'utf8')
    .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!
    .map((block) => Buffer.from(new x509.X509Certificate(block).rawData).toString('base64'));

describe('android-key-attestation route and CLI', () => {
  let gateway: TestGateway;
  before(async () => {
    gateway = await TestGateway.start({});
  });
  after(() => gateway.close());

  async function challenge(appToken: string): Promise<string> {
    const response = await fetch(`${gateway.url}/v1/attest/challenge`, { method: 'POST', headers: { 'tollgate-app-token': appToken } });
    expect(response.status).to.equal(200);
    return ((await response.json()) as { challenge: string }).challenge;
  }
  const attest = (appToken: string, body: unknown) =>
    fetch(`${gateway.url}/v1/attest/android-key-attestation`, { method: 'POST', headers: { 'content-type': 'application/json', 'tollgate-app-token': appToken }, body: JSON.stringify(body) });

  it('refuses an app without an Android package, a replayed challenge, and a chain that does not verify now', async () => {
    const unconfigured = await gateway.createApp({});
    const refused = await attest(unconfigured.appToken, { challenge: await challenge(unconfigured.appToken), chain: derChain('pixel8a-2025-chain.pem') });
    expect(refused.status).to.equal(403);
    expect(refused.headers.get('tollgate-error')).to.equal('attestationFailed');

    const app = await gateway.createApp({ androidPackage: 'com.google.android.gsf' });
    const issued = await challenge(app.appToken);
    const first = await attest(app.appToken, { challenge: issued, chain: derChain('pixel8a-2025-chain.pem') });
    expect(first.status).to.equal(403);
    expect(((await first.json()) as { error: { message: string } }).error.message).to.match(/expired|challenge/);
    const replay = await attest(app.appToken, { challenge: issued, chain: derChain('pixel8a-2025-chain.pem') });
    expect(replay.status).to.equal(403);
    expect(((await replay.json()) as { error: { message: string } }).error.message).to.match(/already used|unknown/);

    const other = await gateway.createApp({ androidPackage: 'com.example.app' });
    const foreign = await attest(other.appToken, { challenge: await challenge(app.appToken), chain: derChain('pixel8a-2025-chain.pem') });
    expect(foreign.status).to.equal(403);
    const malformed = await attest(app.appToken, { challenge: 'x', chain: 'not-a-list' });
    expect(malformed.status).to.equal(400);
    expect(malformed.headers.get('tollgate-error')).to.equal('invalidRequest');
  });

  it('refreshes with a signature by the attested key, keeping the device id; refuses another key, a replay and a revoked device', async () => {
    const app = await gateway.createApp({ androidPackage: 'com.example.app' });
    // The attested key as the chain route would have stored it (its private half stays in the device's Keystore).
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyId = createHash('sha256').update(publicKey.export({ format: 'der', type: 'spki' })).digest('hex');
    await new DeviceRepository(gateway.gateway.database).recordAttestation({ appId: app.appId, deviceId: keyId, method: 'android-key-attestation', publicKey: publicKey.export({ format: 'pem', type: 'spki' }).toString(), now: Date.now() });
    const signed = (text: string, key = privateKey) => sign('sha256', Buffer.from(text, 'utf8'), key).toString('base64');

    const issued = await challenge(app.appToken);
    const refreshed = await attest(app.appToken, { challenge: issued, keyId, signature: signed(issued) });
    expect(refreshed.status).to.equal(200);
    expect(((await refreshed.json()) as { deviceId: string }).deviceId).to.equal(keyId);
    expect((await attest(app.appToken, { challenge: issued, keyId, signature: signed(issued) })).status).to.equal(403);

    const next = await challenge(app.appToken);
    const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const forged = await attest(app.appToken, { challenge: next, keyId, signature: signed(next, stranger) });
    expect(forged.status).to.equal(403);
    expect(((await forged.json()) as { error: { message: string } }).error.message).to.match(/signature/);

    await gateway.gateway.management.revokeDevice(app.appId, keyId);
    const afterRevoke = await challenge(app.appToken);
    expect((await attest(app.appToken, { challenge: afterRevoke, keyId, signature: signed(afterRevoke) })).status).to.equal(403);
  });

  it('attests a device on a test chain, proxies with its token, and refuses a foreign root, another package, another signer and software keys', async () => {
    const authority = await createTestKeyAuthority();
    const other = await createTestKeyAuthority();
    const upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    // A gateway that trusts the test root (production ignores the setting and keeps Google's key).
    const trusting = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_TEST_ANDROID_ROOT_SPKI_SHA256: authority.rootSpkiSha256 } });
    try {
      const app = await trusting.createApp({ androidPackage: 'com.example.attested', androidCertSha256: `${'AB:'.repeat(31)}AB` });
      await trusting.setSecret(app.appId, 'openai', 'sk-android-route-0000');
      const issue = async () => ((await (await fetch(`${trusting.url}/v1/attest/challenge`, { method: 'POST', headers: { 'tollgate-app-token': app.appToken } })).json()) as { challenge: string }).challenge;
      const post = (body: unknown) => fetch(`${trusting.url}/v1/attest/android-key-attestation`, { method: 'POST', headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken }, body: JSON.stringify(body) });
      const attempt = async (maker = authority, overrides: { packageName?: string; signatureDigestHex?: string; securityLevel?: number } = {}) => {
        const challenge = await issue();
        const { chain } = await maker.attest({ challenge: Buffer.from(challenge, 'base64url'), packageName: 'com.example.attested', signatureDigestHex: 'ab'.repeat(32), ...overrides });
        const response = await post({ challenge, chain });
        return { status: response.status, body: (await response.json()) as { deviceToken?: string; deviceId?: string; error?: { message: string } } };
      };

      const good = await attempt();
      expect(good.status, JSON.stringify(good.body)).to.equal(200);
      expect(good.body.deviceId).to.match(/^[0-9a-f]{64}$/);
      const proxied = await fetch(`${trusting.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': good.body.deviceToken! } });
      expect(proxied.status).to.equal(200);
      expect(upstream.last().headers.authorization).to.equal('Bearer sk-android-route-0000');

      const refusals = [
        await attempt(other),
        await attempt(authority, { packageName: 'com.example.impostor' }),
        await attempt(authority, { signatureDigestHex: 'cd'.repeat(32) }),
        await attempt(authority, { securityLevel: 0 }),
      ];
      expect(refusals.map((refusal) => refusal.status)).to.deep.equal([403, 403, 403, 403]);
      expect(refusals.map((refusal) => refusal.body.error!.message)).to.satisfy((messages: string[]) =>
        /root/.test(messages[0]!) && /com\.example\.attested/.test(messages[1]!) && /signed/.test(messages[2]!) && /software/.test(messages[3]!),
      );
    } finally {
      await trusting.close();
      await upstream.close();
    }
  });

  it('every-request mode: each proxied call carries the attested key’s signature over the request digest; anything else never reaches the provider', async () => {
    const authority = await createTestKeyAuthority();
    const upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    const trusting = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_TEST_ANDROID_ROOT_SPKI_SHA256: authority.rootSpkiSha256 } });
    try {
      const app = await trusting.createApp({ androidPackage: 'com.example.signed', assertionMode: 'every-request', allowDevelopmentAttestation: false });
      await trusting.setSecret(app.appId, 'openai', 'sk-android-every-request-0000');
      const issued = ((await (await fetch(`${trusting.url}/v1/attest/challenge`, { method: 'POST', headers: { 'tollgate-app-token': app.appToken } })).json()) as { challenge: string }).challenge;
      const { chain, leafPrivateKey } = await authority.attest({ challenge: Buffer.from(issued, 'base64url'), packageName: 'com.example.signed', signatureDigestHex: 'ab'.repeat(32) });
      const attested = await fetch(`${trusting.url}/v1/attest/android-key-attestation`, { method: 'POST', headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken }, body: JSON.stringify({ challenge: issued, chain }) });
      const { deviceToken } = (await attested.json()) as { deviceToken: string };
      expect(attested.status).to.equal(200);
      const key = KeyObject.from(leafPrivateKey);
      const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
      const pathWithQuery = '/v1/proxy/openai/v1/chat/completions?v=2';
      const body = '{"model":"gpt-4o-mini","messages":[]}';
      const call = async (options: { signer?: KeyObject; signedPath?: string; reuse?: string; sent?: string } = {}) => {
        const time = String(Date.now());
        // SHA256withECDSA over the 32 digest bytes, DER, base64url without padding (protocol.md, client-behaviour.json).
        const assertion = options.reuse ?? sign('sha256', requestDigest('POST', options.signedPath ?? pathWithQuery, time, Buffer.from(body)), options.signer ?? key).toString('base64url');
        const before = upstream.requests.length;
        const response = await fetch(`${trusting.url}${pathWithQuery}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken, 'tollgate-device-token': deviceToken, 'tollgate-request-time': time, 'tollgate-assertion': assertion },
          body: options.sent ?? body,
        });
        const answer = (await response.json()) as { error?: { reason: string } };
        return { status: response.status, reason: answer.error?.reason, reached: upstream.requests.length > before, assertion };
      };
      const good = await call();
      expect(good.status).to.equal(200);
      expect(upstream.last().headers.authorization).to.equal('Bearer sk-android-every-request-0000');
      const refusals = [await call({ reuse: good.assertion }), await call({ signer: stranger }), await call({ signedPath: '/v1/proxy/openai/v1/models' }), await call({ sent: '{"model":"gpt-4o"}' }), await call({ reuse: 'bm90IGEgc2lnbmF0dXJl' })];
      expect(refusals.map((refusal) => [refusal.status, refusal.reached])).to.deep.equal(refusals.map(() => [403, false]));
      expect(refusals.map((refusal) => refusal.reason)).to.deep.equal(['assertion_replayed', 'signature_invalid', 'signature_invalid', 'signature_invalid', 'signature_invalid']);
      const unsigned = await fetch(`${trusting.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': deviceToken } });
      expect(((await unsigned.json()) as { error: { reason: string } }).error.reason).to.equal('assertion_required');
    } finally {
      await trusting.close();
      await upstream.close();
    }
  });

  it('tollgate attest verify accepts the real chains at their instants and rejects the foreign root with a reason', async () => {
    const ok = spawnSync(process.execPath, [CLI, 'attest', 'verify', '--method', 'android-key-attestation', '--chain', path.join(TESTDATA, 'pixel8a-2025-chain.pem'), '--challenge', '5652e2dc45549a96f96afa225502f87fadc08a60bc021392c0be8c5062fd5f5e', '--package', 'com.google.android.gsf', '--at', '2025-01-08T00:00:00Z'], { encoding: 'utf8' });
    expect(ok.status, ok.stderr).to.equal(0);
    expect(JSON.parse(ok.stdout)).to.deep.include({ valid: true, attestationVersion: 300 });
    const bad = spawnSync(process.execPath, [CLI, 'attest', 'verify', '--method', 'android-key-attestation', '--chain', path.join(TESTDATA, 'selfsigned-strongbox-chain.pem'), '--challenge', '616263', '--at', '2019-01-01T00:00:00Z'], { encoding: 'utf8' });
    expect(bad.status).to.equal(1);
    expect(bad.stdout).to.equal('');
    expect(bad.stderr).to.match(/invalid \(broken_chain\)/);
    // A well-formed chain under another root reaches the pin of Google's root key.
    const authority = await createTestKeyAuthority();
    const { chain } = await authority.attest({ challenge: Buffer.from('abc'), packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32) });
    const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-foreign-root-'));
    try {
      const file = path.join(directory, 'chain.pem');
      writeFileSync(file, chain.map((der) => new x509.X509Certificate(Buffer.from(der, 'base64')).toString('pem')).join('\n'));
      const foreign = spawnSync(process.execPath, [CLI, 'attest', 'verify', '--method', 'android-key-attestation', '--chain', file, '--challenge', '616263'], { encoding: 'utf8' });
      expect(foreign.status).to.equal(1);
      expect(foreign.stderr).to.match(/invalid \(untrusted_root\)/);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('android-key-attestation verifier: bodies, the operator’s revocation list and refreshes', () => {
  const challenge = 'Y2hhbGxlbmdl';
  const app = (settings: Record<string, unknown> = { androidPackage: 'com.example.app' }): AppIdentity =>
    ({ id: 'app_1', name: 'App', settings, devicesRevokedBefore: 0 }) as unknown as AppIdentity;
  /** The route's input around a body: records the challenges it consumed; `keys` are the app's attested keys. */
  function input(body: Record<string, unknown>, options: { settings?: Record<string, unknown>; keys?: Record<string, string> } = {}) {
    const used: string[] = [];
    const value: AttestationInput = {
      app: app(options.settings),
      body,
      production: false,
      consumeChallenge: async () => true,
      useChallenge: async (text) => {
        used.push(text);
      },
      devices: {
        find: async (_appId, deviceId) => (options.keys?.[deviceId] ? { publicKey: options.keys[deviceId]!, counter: 0, revoked: false } : null),
        advanceCounter: async () => true,
      },
      readAttestationSecret: async () => null,
    };
    return { value, used };
  }
  const outcome = async (verifier: AndroidKeyAttestationVerifier, attestation: ReturnType<typeof input>) => {
    try {
      return { ...(await verifier.verify(attestation.value)), used: attestation.used };
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      return { type: error.type, reason: error.reason, used: attestation.used };
    }
  };

  it('refuses a malformed chain body before consuming the challenge, and passes on the shapes it allows', async () => {
    const verifier = new AndroidKeyAttestationVerifier(undefined, ['00'.repeat(32)]);
    const der = Buffer.from('not a certificate').toString('base64');
    const refused = [
      { challenge: 7, chain: [der, der] },
      { challenge, chain: [der] },
      { challenge, chain: Array.from({ length: 11 }, () => der) },
      { challenge, chain: [der, 5] },
      { challenge, chain: [5, der] },
      { challenge, chain: [der, 'A'.repeat(16_384)] },
      { challenge, chain: [der, [der]] },
      { challenge, chain: der },
    ];
    for (const body of refused) {
      expect(await outcome(verifier, input(body)), JSON.stringify(body).slice(0, 80)).to.deep.equal({ type: 'invalidRequest', reason: 'attestation_body_invalid', used: [] });
    }
    // Two to ten entries of fewer than 16,384 characters reach the chain check (and consume the challenge first).
    for (const chain of [[der, der], Array.from({ length: 10 }, () => der), [der, 'A'.repeat(16_383)]]) {
      expect(await outcome(verifier, input({ challenge, chain }))).to.deep.equal({ type: 'attestationFailed', reason: 'malformed_chain', used: [challenge] });
    }
    // An app without an Android package is refused before the challenge is spent.
    expect(await outcome(verifier, input({ challenge, chain: [der, der] }, { settings: {} }))).to.deep.equal({ type: 'attestationFailed', reason: 'android_app_not_configured', used: [] });
  });

  it('applies the operator’s revocation list (TOLLGATE_ANDROID_REVOCATION_LIST) to every chain, read at each attestation', async () => {
    const authority = await createTestKeyAuthority();
    const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-revocation-route-'));
    try {
      const file = path.join(directory, 'status.json');
      const verifier = new AndroidKeyAttestationVerifier(file, [authority.rootSpkiSha256]);
      const attest = async (listed: string) => {
        writeFileSync(file, JSON.stringify({ entries: { [listed]: { status: 'REVOKED', reason: 'KEY_COMPROMISE' } } }));
        const issued = Buffer.from(`revocation-${listed}`);
        const { chain } = await authority.attest({ challenge: issued, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), serialNumber: '5e' });
        return outcome(verifier, input({ challenge: issued.toString('base64url'), chain }));
      };
      expect(await attest('5e')).to.deep.include({ type: 'attestationFailed', reason: 'certificate_revoked' });
      expect(await attest('02')).to.deep.include({ type: 'attestationFailed', reason: 'certificate_revoked' });
      expect(await attest('5f')).to.have.property('deviceId').that.matches(/^[0-9a-f]{64}$/);
      // A list that cannot be read is the operator's fault, not a rejected device: the error goes up as it is.
      rmSync(file);
      const missing = await authority.attest({ challenge: Buffer.from('missing-list'), packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32) });
      const failure = await verifier.verify(input({ challenge: Buffer.from('missing-list').toString('base64url'), chain: missing.chain }).value).then(() => undefined, (error: unknown) => error);
      expect(failure).to.not.be.instanceOf(GatewayError);
      expect((failure as NodeJS.ErrnoException).code).to.equal('ENOENT');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('refreshes only with a well-formed body and a signature by the stored key', async () => {
    const verifier = new AndroidKeyAttestationVerifier(undefined);
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyId = createHash('sha256').update(publicKey.export({ format: 'der', type: 'spki' })).digest('hex');
    const keys = { [keyId]: publicKey.export({ format: 'pem', type: 'spki' }).toString() };
    const signature = sign('sha256', Buffer.from(challenge, 'utf8'), privateKey).toString('base64');
    const refused = [
      { challenge: 7, keyId, signature },
      { challenge, keyId: 7, signature },
      { challenge, keyId: [keyId], signature },
      { challenge, keyId: keyId.toUpperCase(), signature },
      { challenge, keyId: `0${keyId}`, signature },
      { challenge, keyId: `${keyId}0`, signature },
      { challenge, keyId: keyId.slice(1), signature },
      { challenge, keyId, signature: 'A'.repeat(2049) },
    ];
    for (const body of refused) {
      expect(await outcome(verifier, input(body, { keys })), JSON.stringify(body).slice(0, 80)).to.deep.equal({ type: 'invalidRequest', reason: 'attestation_body_invalid', used: [] });
    }
    // A signature field that is not a string is a chain body (which this one is not).
    expect(await outcome(verifier, input({ challenge, keyId, signature: 5 }, { keys }))).to.deep.equal({ type: 'invalidRequest', reason: 'attestation_body_invalid', used: [] });
    expect(await outcome(verifier, input({ challenge, keyId, signature }, { keys }))).to.deep.equal({ deviceId: keyId, used: [challenge] });
    // 2,048 characters are read (and are no signature of the challenge).
    expect(await outcome(verifier, input({ challenge, keyId, signature: 'A'.repeat(2048) }, { keys }))).to.deep.equal({ type: 'attestationFailed', reason: 'signature_invalid', used: [challenge] });
    expect(await outcome(verifier, input({ challenge, keyId, signature: '' }, { keys }))).to.deep.equal({ type: 'attestationFailed', reason: 'signature_invalid', used: [challenge] });
    expect(await outcome(verifier, input({ challenge, keyId, signature: sign('sha256', Buffer.from('another', 'utf8'), privateKey).toString('base64') }, { keys }))).to.deep.equal({ type: 'attestationFailed', reason: 'signature_invalid', used: [challenge] });
  });
});
