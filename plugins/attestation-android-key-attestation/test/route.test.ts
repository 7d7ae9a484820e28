/**
 * `POST /v1/attest/android-key-attestation` and `tollgate attest verify`: the route consumes a single-use challenge bound
 * to the app and answers `attestationFailed` with a reason for every rejected chain; the CLI verifies offline at a given
 * instant and exits 1 with the reason.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { KeyObject, createHash, generateKeyPairSync, sign } from 'node:crypto';
import { requestDigest } from '../../../core/pipeline/verify-device';
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
