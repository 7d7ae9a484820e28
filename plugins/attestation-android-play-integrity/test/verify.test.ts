/**
 * Play Integrity verification: classic tokens built the way Google builds them (./token-builder.ts) with fresh Play
 * Console keys, and standard tokens decoded through a fake of Google's token endpoint and Play Integrity API on loopback
 * (./fake-google.ts).
 */
import { expect } from 'chai';
import { createSecretKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { CompactSign } from 'jose';
import {
  GoogleIntegrityDecoder,
  PlayIntegrityError,
  checkIntegrityPayload,
  verifyClassicIntegrityToken,
  verifyStandardIntegrityToken,
  type IntegrityPolicy,
} from '../verify';
import { CERTIFICATE_DIGEST, PACKAGE, buildClassicToken, generatePlayConsoleKeys, verdictPayload, type PlayConsoleTestKeys } from './token-builder';
import { FakeGoogle, serviceAccount, type ServiceAccount } from './fake-google';

const NOW = new Date('2026-01-15T12:00:00Z');
const ISSUED = NOW.getTime() - 10_000;
/** Bytes whose base64 needs '+', '/' and padding, so the alphabet and padding differences are exercised. */
const NONCE_BYTES = Buffer.from('fbeffffeff3e3f0001020304050607080910fbff', 'hex');
/** What the app passes to Play: base64url, no padding, no wrapping. */
const NONCE = NONCE_BYTES.toString('base64url');

async function rejection(promise: Promise<unknown> | (() => unknown)): Promise<PlayIntegrityError> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    expect(error).to.be.instanceOf(PlayIntegrityError);
    return error as PlayIntegrityError;
  }
  throw new Error('the integrity token was accepted');
}

const reasonOf = async (promise: Promise<unknown> | (() => unknown)) => (await rejection(promise)).reason;

type Payload = ReturnType<typeof verdictPayload> & {
  requestDetails: Record<string, unknown>;
  appIntegrity: Record<string, unknown>;
  deviceIntegrity: Record<string, unknown>;
};

const payload = (edit: (payload: Payload) => void = () => {}, options: { nonce?: string; requestHash?: string; timestampMillis?: number } = { nonce: NONCE }) => {
  const value = verdictPayload({ timestampMillis: ISSUED, ...options }) as Payload;
  edit(value);
  return value;
};

describe('Play Integrity, classic requests (decrypted and verified locally)', () => {
  let keys: PlayConsoleTestKeys;
  const policy: IntegrityPolicy = { packageName: PACKAGE, certificateSha256Digests: [CERTIFICATE_DIGEST], now: NOW };
  const verify = (token: string, overrides: Partial<IntegrityPolicy> = {}, nonce = NONCE) =>
    verifyClassicIntegrityToken({ token, decryptionKey: keys.decryptionKey, verificationKey: keys.verificationKey, policy: { ...policy, ...overrides }, nonce });
  const classic = (edit?: (payload: Payload) => void) => buildClassicToken(payload(edit), keys);

  before(() => {
    keys = generatePlayConsoleKeys();
  });

  it('accepts a genuine token and reports the verdict', async () => {
    const verdict = await verify(await classic());
    expect(verdict).to.deep.equal({
      valid: true,
      packageName: PACKAGE,
      deviceRecognitionVerdict: ['MEETS_DEVICE_INTEGRITY'],
      appRecognitionVerdict: 'PLAY_RECOGNIZED',
      timestampMillis: ISSUED,
      appLicensingVerdict: 'LICENSED',
      versionCode: '42',
    });
  });

  it('accepts the nonce echoed in standard base64 with padding, and a timestamp sent as a number', async () => {
    const echoed = NONCE_BYTES.toString('base64');
    expect(echoed).to.not.equal(NONCE);
    expect(echoed).to.match(/[+/].*=$/);
    const token = await classic((p) => {
      p.requestDetails.nonce = echoed;
      p.requestDetails.timestampMillis = ISSUED;
    });
    expect((await verify(token)).timestampMillis).to.equal(ISSUED);
  });

  it('lets a stronger device label satisfy a weaker requirement', async () => {
    const withLabels = (labels: string[]) => classic((p) => (p.deviceIntegrity.deviceRecognitionVerdict = labels));
    const all = ['MEETS_BASIC_INTEGRITY', 'MEETS_DEVICE_INTEGRITY', 'MEETS_STRONG_INTEGRITY'];
    expect((await verify(await withLabels(all), { requiredDeviceVerdict: 'MEETS_STRONG_INTEGRITY' })).deviceRecognitionVerdict).to.deep.equal(all);
    await verify(await withLabels(['MEETS_STRONG_INTEGRITY'])); // default requirement: MEETS_DEVICE_INTEGRITY
    await verify(await withLabels(['MEETS_STRONG_INTEGRITY']), { requiredDeviceVerdict: 'MEETS_BASIC_INTEGRITY' });
    await verify(await withLabels(['MEETS_DEVICE_INTEGRITY']), { requiredDeviceVerdict: 'MEETS_BASIC_INTEGRITY' });
    await verify(await withLabels(['MEETS_BASIC_INTEGRITY']), { requiredDeviceVerdict: 'MEETS_BASIC_INTEGRITY' });
  });

  it('accepts a certificate digest pinned as hex with colons, as Play Console shows it, or as padded base64', async () => {
    const token = await classic();
    const hex = Buffer.from(CERTIFICATE_DIGEST, 'base64url').toString('hex').toUpperCase().match(/../g)!.join(':');
    await verify(token, { certificateSha256Digests: [hex] });
    await verify(token, { certificateSha256Digests: [Buffer.from(CERTIFICATE_DIGEST, 'base64url').toString('base64')] });
    await verify(token, { certificateSha256Digests: undefined });
  });

  it('accepts an app Play did not evaluate only when the policy does not require Play recognition', async () => {
    const token = await classic((p) => (p.appIntegrity = { appRecognitionVerdict: 'UNEVALUATED' }));
    expect(await reasonOf(verify(token))).to.equal('app_not_recognized');
    expect((await verify(token, { requirePlayRecognized: false, certificateSha256Digests: undefined })).appRecognitionVerdict).to.equal('UNEVALUATED');
  });

  it('rejects another package, in the request details or in the evaluated app', async () => {
    expect(await reasonOf(verify(await classic((p) => (p.requestDetails.requestPackageName = 'com.example.other'))))).to.equal('package_mismatch');
    expect(await reasonOf(verify(await classic((p) => (p.appIntegrity.packageName = 'com.example.other'))))).to.equal('package_mismatch');
    expect(await reasonOf(verify(await classic(), { packageName: 'com.example.other' }))).to.equal('package_mismatch');
  });

  it('rejects another nonce, a nonce that differs in one byte, and a verdict without a nonce', async () => {
    const token = await classic();
    expect(await reasonOf(verify(token, {}, randomBytes(20).toString('base64url')))).to.equal('nonce_mismatch');
    const oneOff = Buffer.from(NONCE_BYTES);
    oneOff[oneOff.length - 1] ^= 0x01;
    expect(await reasonOf(verify(token, {}, oneOff.toString('base64url')))).to.equal('nonce_mismatch');
    expect(await reasonOf(verify(await classic((p) => delete p.requestDetails.nonce)))).to.equal('nonce_mismatch');
  });

  it('rejects a device verdict below the requirement', async () => {
    const withLabels = (labels: string[] | undefined) => classic((p) => (p.deviceIntegrity.deviceRecognitionVerdict = labels));
    expect(await reasonOf(verify(await withLabels([])))).to.equal('device_integrity_insufficient');
    expect(await reasonOf(verify(await withLabels(undefined)))).to.equal('device_integrity_insufficient');
    expect(await reasonOf(verify(await withLabels(['MEETS_BASIC_INTEGRITY'])))).to.equal('device_integrity_insufficient');
    expect(await reasonOf(verify(await withLabels(['MEETS_VIRTUAL_INTEGRITY'])))).to.equal('device_integrity_insufficient');
    expect(await reasonOf(verify(await withLabels(['MEETS_BASIC_INTEGRITY', 'MEETS_DEVICE_INTEGRITY']), { requiredDeviceVerdict: 'MEETS_STRONG_INTEGRITY' }))).to.equal(
      'device_integrity_insufficient',
    );
  });

  it('rejects an app Play does not recognize', async () => {
    expect(await reasonOf(verify(await classic((p) => (p.appIntegrity.appRecognitionVerdict = 'UNRECOGNIZED_VERSION'))))).to.equal('app_not_recognized');
  });

  it('rejects an app signed with another certificate, or with an extra one', async () => {
    const other = Buffer.alloc(32, 0xcd).toString('base64url');
    expect(await reasonOf(verify(await classic((p) => (p.appIntegrity.certificateSha256Digest = [other]))))).to.equal('certificate_mismatch');
    expect(await reasonOf(verify(await classic((p) => (p.appIntegrity.certificateSha256Digest = [CERTIFICATE_DIGEST, other]))))).to.equal('certificate_mismatch');
    expect(await reasonOf(verify(await classic((p) => (p.appIntegrity.certificateSha256Digest = []))))).to.equal('certificate_mismatch');
  });

  it('rejects a stale token and a token from the future, tolerating a minute of clock skew', async () => {
    const at = (millis: number) => classic((p) => (p.requestDetails.timestampMillis = String(millis)));
    expect(await reasonOf(verify(await at(NOW.getTime() - 5 * 60_000 - 1)))).to.equal('stale_timestamp');
    expect(await reasonOf(verify(await at(NOW.getTime() - 60_000), { maxAgeMs: 30_000 }))).to.equal('stale_timestamp');
    expect(await reasonOf(verify(await at(NOW.getTime() + 60_001)))).to.equal('future_timestamp');
    await verify(await at(NOW.getTime() + 30_000));
    await verify(await at(NOW.getTime() - 5 * 60_000));
  });

  it('rejects a token encrypted with another key', async () => {
    const token = await buildClassicToken(payload(), keys, { aesKey: createSecretKey(randomBytes(32)) });
    expect(await reasonOf(verify(token))).to.equal('decryption_failed');
  });

  it('rejects a verdict signed with another key, or with an algorithm other than ES256', async () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(await reasonOf(verify(await buildClassicToken(payload(), keys, { signingKey: privateKey })))).to.equal('signature_invalid');
    const hs256 = await new CompactSign(Buffer.from(JSON.stringify(payload()))).setProtectedHeader({ alg: 'HS256' }).sign(keys.aesKey);
    expect(await reasonOf(verify(await buildClassicToken(undefined, keys, { inner: hs256 })))).to.equal('signature_invalid');
  });

  it('rejects a tampered wrapped key, initialization vector, ciphertext or tag', async () => {
    const parts = (await classic()).split('.');
    for (const index of [1, 2, 3, 4]) {
      const bytes = Buffer.from(parts[index]!, 'base64url');
      bytes[0] ^= 0x01;
      const tampered = parts.map((part, i) => (i === index ? bytes.toString('base64url') : part)).join('.');
      expect(await reasonOf(verify(tampered))).to.equal('decryption_failed');
    }
  });

  it('refuses envelopes Google does not make: alg dir, or another content encryption', async () => {
    expect(await reasonOf(verify(await buildClassicToken(payload(), keys, { alg: 'dir' })))).to.equal('decryption_failed');
    expect(await reasonOf(verify(await buildClassicToken(payload(), keys, { enc: 'A128GCM' })))).to.equal('decryption_failed');
    expect(await reasonOf(verify(await buildClassicToken(payload(), keys, { enc: 'A256CBC-HS512' })))).to.equal('decryption_failed');
  });

  it('rejects garbage: not a JWE, a JWS, an encrypted non-JWS, a verdict that is not JSON', async () => {
    for (const garbage of ['', 'not a token', 'a.b.c.d.e', '....', '%%%.%%%.%%%.%%%.%%%', await (async () => (await classic()).split('.').slice(0, 3).join('.'))()]) {
      expect(await reasonOf(verify(garbage)), JSON.stringify(garbage)).to.equal('malformed_token');
    }
    expect(await reasonOf(verify(undefined as unknown as string))).to.equal('malformed_token');
    expect(await reasonOf(verify(await buildClassicToken(undefined, keys, { inner: JSON.stringify(payload()) })))).to.equal('malformed_token');
    const notJson = await new CompactSign(Buffer.from('not json')).setProtectedHeader({ alg: 'ES256' }).sign(keys.signingKey);
    expect(await reasonOf(verify(await buildClassicToken(undefined, keys, { inner: notJson })))).to.equal('malformed_token');
  });

  it('rejects verdicts of the wrong shape', async () => {
    for (const bad of [null, [], 'verdict', payload((p) => delete (p as Partial<Payload>).requestDetails), payload((p) => (p.appIntegrity = 'yes' as unknown as Record<string, unknown>))]) {
      expect(await reasonOf(verify(await buildClassicToken(bad, keys)))).to.equal('malformed_token');
    }
    expect(await reasonOf(verify(await classic((p) => (p.requestDetails.timestampMillis = 'yesterday'))))).to.equal('malformed_token');
    expect(await reasonOf(verify(await classic((p) => (p.deviceIntegrity.deviceRecognitionVerdict = 'MEETS_DEVICE_INTEGRITY'))))).to.equal('malformed_token');
  });

  it('treats unusable Play Console keys as a configuration error, without echoing them', async () => {
    const token = await classic();
    for (const bad of [
      { decryptionKey: Buffer.alloc(16).toString('base64'), verificationKey: keys.verificationKey },
      { decryptionKey: keys.decryptionKey, verificationKey: 'bm90IGEga2V5' },
      { decryptionKey: keys.decryptionKey, verificationKey: generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64') },
    ]) {
      try {
        await verifyClassicIntegrityToken({ token, ...bad, policy, nonce: NONCE });
        expect.fail('accepted');
      } catch (error) {
        expect(error).to.not.be.instanceOf(PlayIntegrityError);
        expect((error as Error).message).to.not.include(bad.verificationKey).and.not.include(bad.decryptionKey);
      }
    }
  });
});

describe('Play Integrity, verdict checks', () => {
  const policy: IntegrityPolicy = { packageName: PACKAGE, now: NOW };

  it('checks the request hash of a standard verdict exactly, and a classic nonce against a standard verdict', () => {
    const standard = payload(undefined, { requestHash: 'aGVsbG8gd29ybGQ' });
    expect(checkIntegrityPayload(standard, policy, { requestHash: 'aGVsbG8gd29ybGQ' }).valid).to.equal(true);
    expect(() => checkIntegrityPayload(standard, policy, { requestHash: 'aGVsbG8gd29ybGQ=' })).to.throw(PlayIntegrityError).with.property('reason', 'request_hash_mismatch');
    expect(() => checkIntegrityPayload(standard, policy, { nonce: 'aGVsbG8gd29ybGQ' })).to.throw(PlayIntegrityError).with.property('reason', 'nonce_mismatch');
  });

  it('reads the timestamp as Play sends it (a string of digits, or a number) and refuses any other, at the skew boundary too', () => {
    const at = (timestampMillis: unknown) => payload((p) => (p.requestDetails.timestampMillis = timestampMillis));
    const check = (timestampMillis: unknown) => checkIntegrityPayload(at(timestampMillis), policy, { nonce: NONCE });
    expect(check(String(ISSUED)).timestampMillis).to.equal(ISSUED);
    expect(check(ISSUED).timestampMillis).to.equal(ISSUED);
    for (const bad of ['0', 0, -5, '-5', ISSUED + 0.5, `${ISSUED}.5`, ` ${ISSUED}`, '12345678901234567', 'soon', null, undefined, [ISSUED]]) {
      expect(() => check(bad), String(bad)).to.throw(PlayIntegrityError).with.property('reason', 'malformed_token');
    }
    // A minute of skew into the future is tolerated, not a millisecond more; five minutes of age, not a millisecond more.
    expect(check(NOW.getTime() + 60_000).valid).to.equal(true);
    expect(() => check(NOW.getTime() + 60_001)).to.throw(PlayIntegrityError).with.property('reason', 'future_timestamp');
    expect(check(NOW.getTime() - 5 * 60_000).valid).to.equal(true);
    expect(() => check(NOW.getTime() - 5 * 60_000 - 1)).to.throw(PlayIntegrityError).with.property('reason', 'stale_timestamp');
  });

  it('does not take non-canonical base64 for the same nonce', () => {
    // "QQ" and "QR" both decode to "A" in a lenient decoder: the unused bits differ.
    const classic = payload(undefined, { nonce: 'QUFBQUFBQUFBQUFBQUFBQQ' });
    expect(checkIntegrityPayload(classic, policy, { nonce: 'QUFBQUFBQUFBQUFBQUFBQQ==' }).valid).to.equal(true);
    expect(() => checkIntegrityPayload(classic, policy, { nonce: 'QUFBQUFBQUFBQUFBQUFBQR' })).to.throw(PlayIntegrityError).with.property('reason', 'nonce_mismatch');
    expect(() => checkIntegrityPayload(classic, policy, { nonce: 'QUFBQUFB QUFBQUFBQUFBQQ' })).to.throw(PlayIntegrityError).with.property('reason', 'nonce_mismatch');
  });
});

describe('Play Integrity, verdict checks (fields Play leaves out or sends otherwise)', () => {
  const policy: IntegrityPolicy = { packageName: PACKAGE, now: NOW };
  const reason = (value: unknown, expected: { nonce: string } | { requestHash: string } = { nonce: NONCE }, overrides: Partial<IntegrityPolicy> = {}) => {
    try {
      checkIntegrityPayload(value, { ...policy, ...overrides }, expected);
      return 'accepted';
    } catch (error) {
      expect(error).to.be.instanceOf(PlayIntegrityError);
      return (error as PlayIntegrityError).reason;
    }
  };

  it('refuses a verdict without the binding, or with a nonce or certificate digest that is not base64, as a mismatch', () => {
    expect(reason(payload(undefined, { requestHash: 'aGFzaA' }), { requestHash: 'aGFzaA' })).to.equal('accepted');
    expect(reason(payload(undefined, {}), { requestHash: 'aGFzaA' })).to.equal('request_hash_mismatch');
    expect(reason(payload(undefined, {}), { nonce: NONCE })).to.equal('nonce_mismatch');
    expect(reason(payload(undefined, { nonce: '!!not base64!!' }))).to.equal('nonce_mismatch');
    const certificate = (digest: string) => payload((p) => (p.appIntegrity.certificateSha256Digest = [digest]));
    expect(reason(certificate('!!not a digest!!'), { nonce: NONCE }, { certificateSha256Digests: [CERTIFICATE_DIGEST] })).to.equal('certificate_mismatch');
    expect(reason(certificate(Buffer.alloc(31, 0xab).toString('base64url')), { nonce: NONCE }, { certificateSha256Digests: [CERTIFICATE_DIGEST] })).to.equal('certificate_mismatch');
    expect(reason(certificate('ab'.repeat(32)), { nonce: NONCE }, { certificateSha256Digests: [CERTIFICATE_DIGEST] })).to.equal('accepted');
    expect(reason(payload((p) => delete p.appIntegrity.certificateSha256Digest), { nonce: NONCE }, { certificateSha256Digests: [CERTIFICATE_DIGEST] })).to.equal('certificate_mismatch');
    // A policy digest that is neither hex nor base64 of 32 bytes is the operator's mistake, not a device's.
    for (const digest of ['not a digest', `0${'ab'.repeat(32)}`, `${'ab'.repeat(32)}0`]) {
      expect(() => checkIntegrityPayload(payload(), { ...policy, certificateSha256Digests: [digest] }, { nonce: NONCE }), digest).to.throw(Error, /neither a hex nor a base64url SHA-256 digest/).and.not.be.instanceOf(PlayIntegrityError);
    }
  });

  it('reads null fields as absent, and refuses fields of another type as malformed', () => {
    expect(reason(payload((p) => (p.requestDetails.nonce = null)))).to.equal('nonce_mismatch');
    expect(reason(payload((p) => (p.deviceIntegrity.deviceRecognitionVerdict = null)))).to.equal('device_integrity_insufficient');
    expect(reason(payload((p) => (p.appIntegrity.appRecognitionVerdict = 7)))).to.equal('malformed_token');
    expect(reason(payload((p) => (p.requestDetails.requestPackageName = 7)))).to.equal('malformed_token');
    expect(reason(payload((p) => (p.deviceIntegrity.deviceRecognitionVerdict = ['MEETS_DEVICE_INTEGRITY', 7])))).to.equal('malformed_token');
  });

  it('refuses a recognized app whose evaluated package is absent; takes its absence only for an app Play did not evaluate', () => {
    expect(reason(payload((p) => delete p.appIntegrity.packageName))).to.equal('package_mismatch');
    const unevaluated = payload((p) => {
      p.appIntegrity = { appRecognitionVerdict: 'UNEVALUATED' };
    });
    expect(reason(unevaluated, { nonce: NONCE }, { requirePlayRecognized: false })).to.equal('accepted');
    // No appRecognitionVerdict at all is malformed, even when the policy does not require Play recognition.
    expect(reason(payload((p) => delete p.appIntegrity.appRecognitionVerdict), { nonce: NONCE }, { requirePlayRecognized: false })).to.equal('malformed_token');
    expect(reason(payload((p) => delete p.appIntegrity.appRecognitionVerdict))).to.equal('malformed_token');
  });

  it('reports the licensing verdict and the version code when Play sends them (a version code as a string or a number)', () => {
    expect(checkIntegrityPayload(payload(), policy, { nonce: NONCE })).to.deep.include({ appLicensingVerdict: 'LICENSED', versionCode: '42' });
    const numeric = checkIntegrityPayload(payload((p) => (p.appIntegrity.versionCode = 42)), policy, { nonce: NONCE });
    expect(numeric.versionCode).to.equal('42');
    const bare = checkIntegrityPayload(payload((p) => {
      delete p.appIntegrity.versionCode;
      delete (p as Partial<Payload>).accountDetails;
    }), policy, { nonce: NONCE });
    expect(bare).to.not.have.property('versionCode');
    expect(bare).to.not.have.property('appLicensingVerdict');
    expect(checkIntegrityPayload(payload((p) => (p.appIntegrity.versionCode = { code: 42 })), policy, { nonce: NONCE })).to.not.have.property('versionCode');
  });

  it('takes Play Console keys pasted with surrounding white space, and names which key is unusable', async () => {
    const keys = generatePlayConsoleKeys();
    const token = await buildClassicToken(payload(), keys);
    const policyWithCertificate = { ...policy, certificateSha256Digests: [CERTIFICATE_DIGEST] };
    const verdict = await verifyClassicIntegrityToken({ token, decryptionKey: `  ${keys.decryptionKey}\n`, verificationKey: `\n${keys.verificationKey}  \n`, policy: policyWithCertificate, nonce: NONCE });
    expect(verdict.valid).to.equal(true);
    const message = async (bad: { decryptionKey: string; verificationKey: string }) =>
      verifyClassicIntegrityToken({ token, ...bad, policy, nonce: NONCE }).then(() => 'accepted', (error: Error) => error.message);
    expect(await message({ decryptionKey: Buffer.alloc(16).toString('base64'), verificationKey: keys.verificationKey })).to.equal('the Play Integrity decryption key must be the base64 of a 32-byte AES-256 key');
    expect(await message({ decryptionKey: keys.decryptionKey, verificationKey: 'bm90IGEga2V5' })).to.equal('the Play Integrity verification key must be the base64 of a DER SubjectPublicKeyInfo');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    expect(await message({ decryptionKey: keys.decryptionKey, verificationKey: rsa })).to.equal('the Play Integrity verification key must be an EC P-256 public key');
  });
});

describe('Play Integrity, standard requests (decoded by Google)', () => {
  const REQUEST_HASH = 'k3f0Yq2Jc5n8v1mWfQ7rXx9s0eTg6hLbD4aKpZuV2yI';
  const INTEGRITY_TOKEN = `standard-${randomBytes(16).toString('hex')}`;
  const policy: IntegrityPolicy = { packageName: PACKAGE, certificateSha256Digests: [CERTIFICATE_DIGEST], now: NOW };
  let account: ServiceAccount;
  let google: FakeGoogle;
  const errors: unknown[] = [];

  const decoder = (options: Partial<ConstructorParameters<typeof GoogleIntegrityDecoder>[0]> = {}) =>
    new GoogleIntegrityDecoder({ serviceAccountJson: account.json, apiBaseUrl: google.baseUrl, tokenUrl: google.tokenUrl, ...options });
  const verify = (dec: GoogleIntegrityDecoder, token = INTEGRITY_TOKEN, requestHash = REQUEST_HASH) => verifyStandardIntegrityToken({ token, decoder: dec, policy, requestHash });
  const failure = async (promise: Promise<unknown>) => {
    const error = await rejection(promise);
    errors.push(error);
    return error.reason;
  };

  before(async () => {
    account = serviceAccount();
    google = await new FakeGoogle(account).start();
    google.payloads.set(INTEGRITY_TOKEN, payload(undefined, { requestHash: REQUEST_HASH }));
  });
  after(() => google.stop());
  beforeEach(() => {
    google.unavailable = false;
    google.tokenRequests = 0;
    google.expiresIn = 3599;
    google.tokenAnswer = undefined;
    google.decodeAnswer = undefined;
    google.assertions.length = 0;
  });

  it('accepts a token Google decodes, and reuses the access token for the next decode', async () => {
    const dec = decoder();
    const verdict = await verify(dec);
    expect(verdict).to.deep.include({ valid: true, packageName: PACKAGE, appRecognitionVerdict: 'PLAY_RECOGNIZED', timestampMillis: ISSUED });
    await verify(dec);
    expect(google.tokenRequests).to.equal(1);
  });

  it('shares one token exchange between concurrent decodes', async () => {
    const dec = decoder();
    await Promise.all([verify(dec), verify(dec), verify(dec)]);
    expect(google.tokenRequests).to.equal(1);
  });

  it('renews the access token a minute before it expires', async () => {
    let now = Date.now();
    const dec = decoder({ clock: () => now });
    await verify(dec);
    now += 3599_000 - 61_000;
    await verify(dec);
    expect(google.tokenRequests).to.equal(1);
    now += 2_000;
    await verify(dec);
    expect(google.tokenRequests).to.equal(2);
  });

  it('rejects a request hash that is not the expected one', async () => {
    expect(await failure(verify(decoder(), INTEGRITY_TOKEN, 'another-hash'))).to.equal('request_hash_mismatch');
  });

  it('maps a 400 to google_rejected, a 503 and a refused connection to google_unavailable', async () => {
    expect(await failure(verify(decoder(), 'unknown-token'))).to.equal('google_rejected');
    google.unavailable = true;
    expect(await failure(verify(decoder()))).to.equal('google_unavailable');
    google.unavailable = false;

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await failure(verify(decoder({ apiBaseUrl: `http://127.0.0.1:${port}` })))).to.equal('google_unavailable');
    expect(await failure(verify(decoder({ tokenUrl: `http://127.0.0.1:${port}/token` })))).to.equal('google_unavailable');
  });

  it('maps a refused assertion (a key Google does not know) to google_rejected, and does not cache the failure', async () => {
    const stranger = serviceAccount();
    expect(await failure(verify(decoder({ serviceAccountJson: stranger.json })))).to.equal('google_rejected');
    const dec = decoder({ fetch: async (...args) => (google.unavailable ? Promise.reject(new TypeError('fetch failed')) : fetch(...args)) });
    google.unavailable = true;
    expect(await failure(verify(dec))).to.equal('google_unavailable');
    google.unavailable = false;
    await verify(dec);
  });

  it("posts the assertion to Google's token endpoint, not to the key file's token_uri", async () => {
    const urls: string[] = [];
    const dec = new GoogleIntegrityDecoder({
      serviceAccountJson: serviceAccount(`${google.baseUrl}/token`).json,
      fetch: async (url) => {
        urls.push(String(url));
        throw new TypeError('fetch failed');
      },
    });
    expect(await failure(verify(dec))).to.equal('google_unavailable');
    expect(urls).to.deep.equal(['https://oauth2.googleapis.com/token']);
  });

  it('names what is wrong with an unusable service-account key', () => {
    const construct = (json: string) => {
      try {
        decoder({ serviceAccountJson: json });
        return 'accepted';
      } catch (error) {
        return (error as Error).message;
      }
    };
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const privateKey = (JSON.parse(account.json) as { private_key: string }).private_key;
    expect([
      construct('not json'),
      construct('null'),
      construct('["a"]'),
      construct(JSON.stringify({ private_key: privateKey })),
      construct(JSON.stringify({ client_email: 7, private_key: privateKey })),
      construct(JSON.stringify({ client_email: 'a@b' })),
      construct(JSON.stringify({ client_email: 'a@b', private_key: 7 })),
      construct(JSON.stringify({ client_email: 'a@b', private_key: 'not a key' })),
      construct(JSON.stringify({ client_email: 'a@b', private_key: ec })),
      construct(JSON.stringify({ client_email: 'a@b', private_key: privateKey })),
    ]).to.deep.equal([
      'the Play Integrity service-account key is not JSON',
      'the Play Integrity service-account key lacks client_email or private_key',
      'the Play Integrity service-account key lacks client_email or private_key',
      'the Play Integrity service-account key lacks client_email or private_key',
      'the Play Integrity service-account key lacks client_email or private_key',
      'the Play Integrity service-account key lacks client_email or private_key',
      'the Play Integrity service-account key lacks client_email or private_key',
      'the Play Integrity service-account private_key cannot be imported',
      'the Play Integrity service-account private_key is not an RSA key',
      'accepted',
    ]);
  });

  it('rejects an unusable service-account key at construction, without echoing it', () => {
    for (const json of ['not json', '{"client_email":"a@b"}', JSON.stringify({ client_email: 'a@b', private_key: 'not a key' })]) {
      try {
        decoder({ serviceAccountJson: json });
        expect.fail('accepted');
      } catch (error) {
        expect((error as Error).message).to.not.include(json);
      }
    }
  });

  // Google's OAuth 2.0 for server-to-server applications, "Preparing to make an authorized API call" (HTTP/REST):
  // https://developers.google.com/identity/protocols/oauth2/service-account#httprest — a JWT with header
  // {"alg":"RS256","typ":"JWT"} naming the key (`kid`, the key file's private_key_id), claims iss, scope, aud (the token
  // endpoint), iat and exp (at most an hour later), posted form-encoded with grant_type jwt-bearer; the answer carries
  // access_token and expires_in (seconds).
  it('signs the assertion as Google asks: kid from private_key_id, iss, scope, aud, iat now and exp an hour later, form-encoded', async () => {
    // Google checks iat and exp against its own clock: the decoder's clock is the real one, at a known millisecond.
    const now = Math.floor(Date.now() / 1000) * 1000 + 999;
    await verify(decoder({ clock: () => now }));
    expect(google.assertions).to.have.length(1);
    const [sent] = google.assertions;
    expect(sent!.header).to.deep.equal({ alg: 'RS256', typ: 'JWT', kid: 'test-key-1' });
    expect(sent!.claims).to.deep.equal({ scope: 'https://www.googleapis.com/auth/playintegrity', iss: account.json.match(/"client_email":"([^"]+)"/)![1], sub: account.json.match(/"client_email":"([^"]+)"/)![1], aud: google.tokenUrl, iat: (now - 999) / 1000, exp: (now - 999) / 1000 + 3600 });
    expect(sent!.contentType).to.equal('application/x-www-form-urlencoded');

    // A key file without a private_key_id (or with one that is not a string) names no key.
    const withoutId = JSON.parse(account.json) as Record<string, unknown>;
    delete withoutId.private_key_id;
    await verify(decoder({ serviceAccountJson: JSON.stringify(withoutId) }));
    await verify(decoder({ serviceAccountJson: JSON.stringify({ ...withoutId, private_key_id: 42 }) }));
    expect(google.assertions.slice(1).map((assertion) => assertion.header)).to.deep.equal([{ alg: 'RS256', typ: 'JWT' }, { alg: 'RS256', typ: 'JWT' }]);
  });

  it('reuses the access token until exactly a minute before expires_in runs out, and renews it from that millisecond', async () => {
    const start = Date.now();
    let now = start;
    const dec = decoder({ clock: () => now });
    await verify(dec);
    now = start + 3599_000 - 60_000 - 1;
    await verify(dec);
    expect(google.tokenRequests).to.equal(1);
    now = start + 3599_000 - 60_000;
    await verify(dec);
    expect(google.tokenRequests).to.equal(2);
  });

  it('takes an hour when expires_in is absent, zero, negative or not a number', async () => {
    const start = Date.now();
    const renewals: number[][] = [];
    for (const expiresIn of [undefined, 0, -5, '3599']) {
      google.expiresIn = expiresIn;
      google.tokenRequests = 0;
      let now = start;
      const dec = decoder({ clock: () => now });
      await verify(dec);
      now = start + 3600_000 - 60_000 - 1;
      await verify(dec);
      const reused = google.tokenRequests;
      now = start + 3600_000 - 60_000;
      await verify(dec);
      renewals.push([reused, google.tokenRequests]);
    }
    expect(renewals).to.deep.equal([[1, 2], [1, 2], [1, 2], [1, 2]]);
  });

  it('refuses a token answer without an access token, and asks again next time', async () => {
    const dec = decoder();
    for (const body of [{ expires_in: 3599 }, { access_token: '', expires_in: 3599 }, { access_token: 42, expires_in: 3599 }]) {
      google.tokenAnswer = { status: 200, body };
      expect(await failure(verify(dec))).to.equal('google_unavailable');
    }
    google.tokenAnswer = undefined;
    await verify(dec);
    expect(google.tokenRequests).to.equal(4);
  });

  it('after a failed exchange, concurrent decodes share the next one', async () => {
    const dec = decoder();
    google.tokenAnswer = { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } };
    expect(await failure(verify(dec))).to.equal('google_rejected');
    google.tokenAnswer = undefined;
    await Promise.all([verify(dec), verify(dec), verify(dec)]);
    expect(google.tokenRequests).to.equal(2);
  });

  it('drops an access token the API answers 401 to, and mints a new one for the next decode', async () => {
    const dec = decoder();
    await verify(dec);
    google.revokeAccessTokens();
    expect(await failure(verify(dec))).to.equal('google_rejected');
    expect(google.tokenRequests).to.equal(1);
    await verify(dec);
    expect(google.tokenRequests).to.equal(2);
  });

  it('maps the API’s statuses and answers: 429 and 5xx unavailable, other 4xx rejected, an answer without tokenPayloadExternal unavailable', async () => {
    const dec = decoder();
    const reasons: string[] = [];
    for (const answer of [
      { status: 429, body: { error: { code: 429, status: 'RESOURCE_EXHAUSTED' } } },
      { status: 500, body: { error: { code: 500, status: 'INTERNAL' } } },
      { status: 499, body: {} },
      { status: 403, body: { error: { code: 403, status: 'PERMISSION_DENIED' } } },
      { status: 200, body: {} },
      { status: 200, body: { tokenPayloadExternal: 'not an object' } },
      { status: 200, body: [] },
    ]) {
      google.decodeAnswer = answer;
      reasons.push(await failure(verify(dec)));
    }
    expect(reasons).to.deep.equal(['google_unavailable', 'google_unavailable', 'google_rejected', 'google_rejected', 'google_unavailable', 'google_unavailable', 'google_unavailable']);
    expect(await failure(verify(dec, ''))).to.equal('malformed_token');
    // The API base URL may end in slashes.
    google.decodeAnswer = undefined;
    expect(await verify(decoder({ apiBaseUrl: `${google.baseUrl}//` }))).to.include({ valid: true });
  });

  it('names Google’s error code in the message when it is a plain code, and nothing else of the answer', async () => {
    const message = async (promise: Promise<unknown>) => {
      const error = await rejection(promise);
      errors.push(error);
      return error.message;
    };
    google.tokenAnswer = { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } };
    expect(await message(verify(decoder()))).to.equal('the OAuth token endpoint answered 400 (invalid_grant)');
    google.tokenAnswer = { status: 400, body: { error: 'invalid grant for ya29.leaked' } };
    expect(await message(verify(decoder()))).to.equal('the OAuth token endpoint answered 400');
    google.tokenAnswer = { status: 400, body: { error: 'x'.repeat(65) } };
    expect(await message(verify(decoder()))).to.equal('the OAuth token endpoint answered 400');
    google.tokenAnswer = { status: 400, body: { error: 7 } };
    expect(await message(verify(decoder()))).to.equal('the OAuth token endpoint answered 400');
    google.tokenAnswer = undefined;
    google.decodeAnswer = { status: 503, body: { error: { code: 503, status: 'UNAVAILABLE' } } };
    expect(await message(verify(decoder()))).to.equal('the Play Integrity API answered 503 (UNAVAILABLE)');
    google.decodeAnswer = { status: 503, body: 'not json' };
    expect(await message(verify(decoder()))).to.equal('the Play Integrity API answered 503');
    google.decodeAnswer = { status: 503, body: '<html>Service Unavailable</html>', raw: true };
    expect(await message(verify(decoder()))).to.equal('the Play Integrity API answered 503');
    // A 200 whose body is not JSON: unavailable, from either endpoint.
    google.decodeAnswer = { status: 200, body: '<html>', raw: true };
    expect(await failure(verify(decoder()))).to.equal('google_unavailable');
    google.decodeAnswer = undefined;
    google.tokenAnswer = { status: 200, body: '<html>', raw: true };
    expect(await failure(verify(decoder()))).to.equal('google_unavailable');
    google.tokenAnswer = undefined;
    // The decode call is JSON, as the API reference gives it.
    google.decodeContentTypes.length = 0;
    await verify(decoder());
    expect(google.decodeContentTypes).to.deep.equal(['application/json']);
    // A network failure is named by its code, or by the error's name when it has no plain code.
    const failing = (error: Error) => decoder({ fetch: async () => Promise.reject(error) });
    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }) });
    expect(await message(verify(failing(refused)))).to.equal('the OAuth token endpoint cannot be reached (ECONNREFUSED)');
    expect(await message(verify(failing(new TypeError('fetch failed'))))).to.equal('the OAuth token endpoint cannot be reached (TypeError)');
    const odd = Object.assign(new TypeError('fetch failed'), { cause: { code: 'E 127.0.0.1' } });
    expect(await message(verify(failing(odd)))).to.equal('the OAuth token endpoint cannot be reached');
    const addressed = Object.assign(new TypeError('fetch failed'), { cause: { code: '10.0.0.1:ECONNREFUSED' } });
    expect(await message(verify(failing(addressed)))).to.equal('the OAuth token endpoint cannot be reached');
    const numeric = Object.assign(new TypeError('fetch failed'), { cause: { code: 7 } });
    expect(await message(verify(failing(numeric)))).to.equal('the OAuth token endpoint cannot be reached (TypeError)');
    // The API itself unreachable, once a token is at hand.
    const apiDown = decoder({ fetch: async (url, init) => (String(url).includes(':decodeIntegrityToken') ? Promise.reject(refused) : fetch(url, init)) });
    expect(await message(verify(apiDown))).to.equal('the Play Integrity API cannot be reached (ECONNREFUSED)');
  });

  it('never puts the service-account key or an access token in an error, nor shows them when the decoder is inspected', async () => {
    const used = decoder();
    await verify(used);
    expect(errors.length).to.be.greaterThan(5);
    const keyBody = account.privateKeyPem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
    const secrets = [account.privateKeyPem, keyBody.slice(0, 40), keyBody.slice(-40), ...google.issuedTokens];
    expect(google.issuedTokens.length).to.be.greaterThan(0);
    for (const error of errors) {
      const text = [String(error), (error as Error).stack ?? '', inspect(error, { depth: 5 }), JSON.stringify(error)].join('\n');
      for (const secret of secrets) expect(text).to.not.include(secret);
    }
    const shown = inspect(used, { depth: 5, showHidden: true });
    for (const secret of secrets) expect(shown).to.not.include(secret);
  });
});
