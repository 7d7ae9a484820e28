/**
 * Apple App Attest: real attestations and a real assertion (test/fixtures, provenance in its README.md) verified against
 * Apple's real root at instants inside their validity; then a test PKI (test-chain.ts) produces each rejection.
 */
import { expect } from 'chai';
import { createHash, verify as verifySignature, createPublicKey } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as x509 from '@peculiar/x509';
import {
  AAGUID_DEVELOPMENT,
  APPLE_APP_ATTESTATION_ROOT_CA_PEM,
  APPLE_APP_ATTESTATION_ROOT_CA_SHA256,
  AppAttestError,
  verifyAppAttestAssertion,
  verifyAppAttestAttestation,
  type AppAttestAttestationInput,
} from '../verify';
import { createTestAssertion, createTestAttestation, createTestAuthority, decodeCbor, reencodeAssertion, reencodeAttestation, type TestAttestation, type TestAuthority } from './test-chain';

/** The project root: the first directory above `from` holding package.json (tests run from dist/, which has no fixtures). */
function projectRoot(from: string): string | undefined {
  for (let directory = path.resolve(from); ; directory = path.dirname(directory)) {
    if (existsSync(path.join(directory, 'package.json'))) return directory;
    if (path.dirname(directory) === directory) return undefined;
  }
}

// From the compiled test; failing that (compiled to an outDir outside the checkout), from the working directory.
const FIXTURES = path.join(projectRoot(__dirname) ?? projectRoot(process.cwd()) ?? process.cwd(), 'plugins', 'attestation-apple-app-attest', 'test', 'fixtures');

interface RealFixture {
  appId: string;
  keyId: string;
  clientDataHash: string;
  environment: 'development' | 'production';
  leafNotBefore: string;
  leafNotAfter: string;
  validAt: string;
  attestation: string;
  expectedPublicKeyPem?: string;
  expectedNonce?: string;
  assertion?: { assertion: string; clientData: string; clientDataHash: string; previousCounter: number; expectedCounter: number };
}

const readFixture = (name: string) => JSON.parse(readFileSync(path.join(FIXTURES, name), 'utf8')) as RealFixture;

/** The verifier input a fixture describes, at its validity instant. */
function inputOf(fixture: RealFixture): AppAttestAttestationInput {
  return {
    attestation: Buffer.from(fixture.attestation, 'base64'),
    clientDataHash: Buffer.from(fixture.clientDataHash, 'base64'),
    keyId: fixture.keyId,
    appId: fixture.appId,
    allowDevelopment: fixture.environment === 'development',
    at: new Date(fixture.validAt),
  };
}

async function rejection(promise: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    expect(error).to.be.instanceOf(AppAttestError);
    return (error as AppAttestError).reason;
  }
  throw new Error('accepted');
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();

describe('Apple App Attest: the pinned root', () => {
  it('is Apple App Attestation Root CA with the fingerprint recorded in verify.ts', () => {
    const root = new x509.X509Certificate(APPLE_APP_ATTESTATION_ROOT_CA_PEM);
    expect(sha256(Buffer.from(root.rawData)).toString('hex')).to.equal(APPLE_APP_ATTESTATION_ROOT_CA_SHA256);
    expect(APPLE_APP_ATTESTATION_ROOT_CA_SHA256).to.equal('1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932');
    expect(root.subject).to.contain('CN=Apple App Attestation Root CA');
    expect(root.subject).to.equal(root.issuer);
    expect(root.notAfter.toISOString()).to.equal('2045-03-15T00:00:00.000Z');
  });
});

describe('Apple App Attest: real attestations against Apple’s root', () => {
  let development: RealFixture;
  let production: RealFixture;
  let appleSample: RealFixture;

  before(() => {
    development = readFixture('appattest-checker-node-development.json');
    production = readFixture('node-app-attest-production.json');
    appleSample = readFixture('apple-validation-guide-sample.json');
  });

  it('accepts a development attestation from an iPhone (iOS 17) at its validity instant', async () => {
    const result = await verifyAppAttestAttestation(inputOf(development));
    expect(result).to.deep.include({ valid: true, environment: 'development', keyId: development.keyId, counter: 0 });
    expect(result.publicKeyPem).to.equal(development.expectedPublicKeyPem);
    expect(result.receipt.length).to.be.greaterThan(1000);
    expect(result.receipt[0]).to.equal(0x30); // PKCS#7 SignedData
  });

  it('accepts a production attestation from an iPhone (iOS 17) at its validity instant', async () => {
    const result = await verifyAppAttestAttestation(inputOf(production));
    expect(result).to.deep.include({ valid: true, environment: 'production', keyId: production.keyId, counter: 0 });
  });

  it('accepts Apple’s validation-guide sample (OS 27), whose authData carries extension data after the COSE key without the ED flag', async () => {
    const input = inputOf(appleSample);
    const { authData } = decodeCbor<{ authData: Buffer }>(input.attestation);
    const coseKeyEnd = 55 + authData.readUInt16BE(53) + 77; // a P-256 COSE key is 77 bytes
    expect(authData[32]).to.equal(0x40); // AT set, ED (0x80) not set …
    expect(authData.length).to.be.greaterThan(coseKeyEnd); // … yet data follows the key:
    expect(authData.subarray(coseKeyEnd).includes(Buffer.from('apple_validation_category_01'))).to.equal(true);
    const result = await verifyAppAttestAttestation(input);
    expect(result).to.deep.include({ valid: true, environment: 'production', keyId: appleSample.keyId });
    expect(sha256(Buffer.concat([authData, input.clientDataHash])).toString('base64')).to.equal(appleSample.expectedNonce);
  });

  it('rejects real attestations outside their validity, for another app, key or challenge, or in a refused environment', async () => {
    const input = inputOf(development);
    expect(await rejection(verifyAppAttestAttestation({ ...input, at: new Date(new Date(development.leafNotAfter).getTime() + 1000) }))).to.equal('certificate_expired');
    expect(await rejection(verifyAppAttestAttestation({ ...input, at: new Date(new Date(development.leafNotBefore).getTime() - 1000) }))).to.equal('certificate_not_yet_valid');
    expect(await rejection(verifyAppAttestAttestation({ ...input, clientDataHash: sha256('another challenge') }))).to.equal('nonce_mismatch');
    expect(await rejection(verifyAppAttestAttestation({ ...input, keyId: production.keyId }))).to.equal('key_id_mismatch');
    expect(await rejection(verifyAppAttestAttestation({ ...input, appId: production.appId }))).to.equal('rp_id_mismatch');
    expect(await rejection(verifyAppAttestAttestation({ ...input, allowDevelopment: false }))).to.equal('aaguid_not_allowed');
    expect(await rejection(verifyAppAttestAttestation({ ...inputOf(production), allowProduction: false }))).to.equal('aaguid_not_allowed');
  });

  it('rejects a real attestation when only another root is trusted', async () => {
    const authority = await createTestAuthority(new Date(development.validAt));
    expect(await rejection(verifyAppAttestAttestation({ ...inputOf(development), trustedRoots: [authority.rootPem] }))).to.equal('untrusted_root');
  });
});

describe('Apple App Attest: a real assertion', () => {
  let development: RealFixture;
  let publicKeyPem: string;
  const assertionInput = () => ({
    assertion: Buffer.from(development.assertion!.assertion, 'base64'),
    clientDataHash: Buffer.from(development.assertion!.clientDataHash, 'base64'),
    publicKeyPem,
    appId: development.appId,
    previousCounter: development.assertion!.previousCounter,
  });

  before(async () => {
    development = readFixture('appattest-checker-node-development.json');
    publicKeyPem = (await verifyAppAttestAttestation(inputOf(development))).publicKeyPem;
  });

  it('verifies with the key its attestation certified, and returns the new counter', () => {
    expect(sha256(development.assertion!.clientData).toString('base64')).to.equal(development.assertion!.clientDataHash);
    expect(verifyAppAttestAssertion(assertionInput())).to.deep.equal({ valid: true, counter: development.assertion!.expectedCounter });
  });

  it('is signed over nonce = SHA-256(authenticatorData ‖ clientDataHash), not over authenticatorData ‖ clientDataHash', () => {
    const { signature, authenticatorData } = decodeCbor<{ signature: Buffer; authenticatorData: Buffer }>(Buffer.from(development.assertion!.assertion, 'base64'));
    const clientDataHash = Buffer.from(development.assertion!.clientDataHash, 'base64');
    const key = createPublicKey(publicKeyPem);
    const composite = Buffer.concat([authenticatorData, clientDataHash]);
    expect(verifySignature('sha256', sha256(composite), key, signature)).to.equal(true);
    expect(verifySignature('sha256', composite, key, signature)).to.equal(false);
  });

  it('rejects a replay, other client data, another app, and a signature that was altered', () => {
    expect(() => verifyAppAttestAssertion({ ...assertionInput(), previousCounter: 1 })).to.throw(AppAttestError).with.property('reason', 'counter_not_increased');
    expect(() => verifyAppAttestAssertion({ ...assertionInput(), clientDataHash: sha256('{"action":"getGameLevel","levelId":1235}') })).to.throw(AppAttestError).with.property('reason', 'signature_invalid');
    expect(() => verifyAppAttestAssertion({ ...assertionInput(), appId: 'V8H6LQ9448.io.uebelacker.AppAttestExample' })).to.throw(AppAttestError).with.property('reason', 'rp_id_mismatch');
    const altered = reencodeAssertion(assertionInput().assertion, (object) => {
      object.signature[object.signature.length - 3] ^= 0x01;
    });
    expect(() => verifyAppAttestAssertion({ ...assertionInput(), assertion: altered })).to.throw(AppAttestError).with.property('reason', 'signature_invalid');
  });
});

describe('Apple App Attest: every rejection, on a test PKI', () => {
  const at = new Date('2030-06-01T12:00:00Z');
  const appId = 'ABCDE12345.dev.tollgate.example';
  const clientDataHash = sha256('server challenge 1');
  let authority: TestAuthority;
  let good: TestAttestation;

  const inputFor = (attestation: TestAttestation, overrides: Partial<AppAttestAttestationInput> = {}): AppAttestAttestationInput => ({
    attestation: attestation.attestation,
    clientDataHash,
    keyId: attestation.keyId,
    appId,
    allowDevelopment: false,
    at,
    trustedRoots: [authority.rootPem],
    ...overrides,
  });

  before(async () => {
    authority = await createTestAuthority(at);
    good = await createTestAttestation({ authority, appId, clientDataHash, at });
  });

  it('accepts a well-formed test attestation (the control for the cases below)', async () => {
    const result = await verifyAppAttestAttestation(inputFor(good));
    expect(result).to.deep.include({ valid: true, environment: 'production', keyId: good.keyId, counter: 0 });
    expect(createPublicKey(result.publicKeyPem).equals(createPublicKey(good.publicKeyPem))).to.equal(true);
    expect(result.receipt.toString()).to.contain('test receipt');
  });

  it('rejects a foreign root when verified with the default (Apple) root', async () => {
    expect(await rejection(verifyAppAttestAttestation({ ...inputFor(good), trustedRoots: undefined }))).to.equal('untrusted_root');
  });

  it('rejects an intermediate that did not sign the credCert, and an intermediate named like the trusted one but issued by another root', async () => {
    const impostor = await createTestAuthority(at); // same names, other keys
    const mixed = await createTestAttestation({ authority, appId, clientDataHash, at, x5cIntermediate: impostor.intermediate });
    expect(await rejection(verifyAppAttestAttestation(inputFor(mixed)))).to.equal('chain_invalid');
    const foreign = await createTestAttestation({ authority: impostor, appId, clientDataHash, at });
    expect(await rejection(verifyAppAttestAttestation(inputFor(foreign)))).to.equal('untrusted_root');
  });

  it('rejects a credCert issued by a certificate that is not a CA, even when its signature and names chain to the root', async () => {
    const notCa = await createTestAuthority(at, undefined, false);
    const attestation = await createTestAttestation({ authority: notCa, appId, clientDataHash, at });
    expect(await rejection(verifyAppAttestAttestation(inputFor(attestation, { trustedRoots: [notCa.rootPem] })))).to.equal('chain_invalid');
  });

  it('checks the issuer names along the chain, not only the signatures: a credCert or an intermediate signed by the right key under another issuer name is refused', async () => {
    // Observable apart from the signature check: the signature verifies (the right key signed), only the name differs.
    const renamed = await createTestAttestation({ authority, appId, clientDataHash, at, leafIssuer: 'CN=Some Other CA, O=Tollgate Tests, ST=California' });
    expect(await rejection(verifyAppAttestAttestation(inputFor(renamed)))).to.equal('chain_invalid');
    // The intermediate, signed by the trusted root's key but naming another issuer, does not end in that root.
    const misnamed = await createTestAuthority(at, undefined, true, 'CN=Some Other Root, O=Tollgate Tests, ST=California');
    const underMisnamed = await createTestAttestation({ authority: misnamed, appId, clientDataHash, at });
    expect(await rejection(verifyAppAttestAttestation(inputFor(underMisnamed, { trustedRoots: [misnamed.rootPem] })))).to.equal('untrusted_root');
    // An intermediate without a BasicConstraints extension is no CA either.
    const unstated = await createTestAuthority(at, undefined, 'unstated');
    const underUnstated = await createTestAttestation({ authority: unstated, appId, clientDataHash, at });
    expect(await rejection(verifyAppAttestAttestation(inputFor(underUnstated, { trustedRoots: [unstated.rootPem] })))).to.equal('chain_invalid');
  });

  it('accepts a credCert at the first and the last instant of its validity (both included), and not a millisecond outside', async () => {
    const from = await createTestAttestation({ authority, appId, clientDataHash, at, leafNotBefore: at });
    expect((await verifyAppAttestAttestation(inputFor(from))).valid).to.equal(true);
    const until = await createTestAttestation({ authority, appId, clientDataHash, at, leafNotAfter: at });
    expect((await verifyAppAttestAttestation(inputFor(until))).valid).to.equal(true);
    expect(await rejection(verifyAppAttestAttestation(inputFor(from, { at: new Date(at.getTime() - 1000) })))).to.equal('certificate_not_yet_valid');
    expect(await rejection(verifyAppAttestAttestation(inputFor(until, { at: new Date(at.getTime() + 1000) })))).to.equal('certificate_expired');
  });

  it('rejects the wrong challenge (clientDataHash)', async () => {
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { clientDataHash: sha256('server challenge 2') })))).to.equal('nonce_mismatch');
  });

  it('rejects tampered authData (the nonce no longer matches)', async () => {
    const tampered = reencodeAttestation(good.attestation, (object) => {
      object.authData[40] ^= 0x01;
    });
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { attestation: tampered })))).to.equal('nonce_mismatch');
  });

  it('rejects the wrong app id', async () => {
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { appId: 'ABCDE12345.dev.tollgate.other' })))).to.equal('rp_id_mismatch');
  });

  it('rejects the wrong key id', async () => {
    const other = await createTestAttestation({ authority, appId, clientDataHash, at });
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { keyId: other.keyId })))).to.equal('key_id_mismatch');
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { keyId: 'bm90IGEga2V5IGlk' })))).to.equal('key_id_mismatch');
  });

  it('rejects a credCert expired, or not yet valid, at the verification instant', async () => {
    const expired = await createTestAttestation({ authority, appId, clientDataHash, at, leafNotBefore: new Date(at.getTime() - 5 * 86_400_000), leafNotAfter: new Date(at.getTime() - 1000) });
    expect(await rejection(verifyAppAttestAttestation(inputFor(expired)))).to.equal('certificate_expired');
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { at: new Date(at.getTime() - 2 * 86_400_000) })))).to.equal('certificate_not_yet_valid');
  });

  it('rejects a counter that is not 0', async () => {
    const used = await createTestAttestation({ authority, appId, clientDataHash, at, counter: 1 });
    expect(await rejection(verifyAppAttestAttestation(inputFor(used)))).to.equal('counter_not_zero');
  });

  it('accepts the development aaguid only when allowed, the production one unless refused, and no other', async () => {
    const development = await createTestAttestation({ authority, appId, clientDataHash, at, aaguid: 'development' });
    expect(await rejection(verifyAppAttestAttestation(inputFor(development)))).to.equal('aaguid_not_allowed');
    expect(await verifyAppAttestAttestation(inputFor(development, { allowDevelopment: true }))).to.deep.include({ environment: 'development' });
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { allowProduction: false, allowDevelopment: true })))).to.equal('aaguid_not_allowed');
    const foreign = await createTestAttestation({ authority, appId, clientDataHash, at, aaguid: Buffer.from('fido2-authentic8', 'ascii') });
    expect(await rejection(verifyAppAttestAttestation(inputFor(foreign, { allowDevelopment: true })))).to.equal('aaguid_not_allowed');
    expect(AAGUID_DEVELOPMENT.toString()).to.equal('appattestdevelop');
  });

  it('rejects a credential id that is not the key id', async () => {
    const mismatched = await createTestAttestation({ authority, appId, clientDataHash, at, credentialId: sha256('another key') });
    expect(await rejection(verifyAppAttestAttestation(inputFor(mismatched)))).to.equal('credential_id_mismatch');
  });

  it('accepts trailing extension data after the COSE key, with or without the ED flag', async () => {
    const trailing = Buffer.from('a1781c6170706c655f76616c69646174696f6e5f63617465676f72795f30314401000000', 'hex'); // {"apple_validation_category_01": h'01000000'}
    const withoutFlag = await createTestAttestation({ authority, appId, clientDataHash, at, trailing, flags: 0x40 });
    expect(await verifyAppAttestAttestation(inputFor(withoutFlag))).to.deep.include({ valid: true, keyId: withoutFlag.keyId });
    const withFlag = await createTestAttestation({ authority, appId, clientDataHash, at, trailing, flags: 0xc0 });
    expect(await verifyAppAttestAttestation(inputFor(withFlag))).to.deep.include({ valid: true, keyId: withFlag.keyId });
  });

  it('rejects another attestation format and malformed objects', async () => {
    const packed = await createTestAttestation({ authority, appId, clientDataHash, at, fmt: 'packed' });
    expect(await rejection(verifyAppAttestAttestation(inputFor(packed)))).to.equal('bad_format');
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { attestation: Buffer.from('not cbor at all') })))).to.equal('malformed_attestation');
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { attestation: Buffer.alloc(0) })))).to.equal('malformed_attestation');
    const oneCertificate = reencodeAttestation(good.attestation, (object) => {
      object.attStmt.x5c = object.attStmt.x5c.slice(0, 1);
    });
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { attestation: oneCertificate })))).to.equal('malformed_attestation');
    const notCertificates = reencodeAttestation(good.attestation, (object) => {
      object.attStmt.x5c = [Buffer.from('leaf'), Buffer.from('intermediate')];
    });
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { attestation: notCertificates })))).to.equal('malformed_attestation');
    const shortAuthData = reencodeAttestation(good.attestation, (object) => {
      object.authData = object.authData.subarray(0, 54);
    });
    expect(await rejection(verifyAppAttestAttestation(inputFor(good, { attestation: shortAuthData })))).to.equal('malformed_attestation');
  });

  it('refuses an attestation object without its receipt or its authData, or with them as other than byte strings (the object itself is not signed)', async () => {
    const edits: Array<(object: { attStmt: Record<string, unknown>; authData: unknown }) => void> = [
      (object) => delete object.attStmt.receipt,
      (object) => delete (object as Partial<typeof object>).authData,
      (object) => (object.attStmt.receipt = 'a receipt as text'),
      (object) => (object.authData = 'authData as text'),
      (object) => (object.attStmt.x5c = [...(object.attStmt.x5c as Buffer[]), 'a third entry as text']),
      (object) => delete (object as Partial<typeof object>).attStmt,
      (object) => ((object as { attStmt: unknown }).attStmt = null),
    ];
    const reasons = [];
    for (const edit of edits) {
      const changed = reencodeAttestation(good.attestation, edit as never);
      reasons.push(await rejection(verifyAppAttestAttestation(inputFor(good, { attestation: changed }))));
    }
    expect(reasons).to.deep.equal(edits.map(() => 'malformed_attestation'));
    // Trusted roots that are not certificates are the caller's mistake.
    const wrongRoots = await verifyAppAttestAttestation(inputFor(good, { trustedRoots: ['not a PEM certificate'] })).then(() => 'accepted', (error: Error) => error);
    expect(wrongRoots).to.be.instanceOf(Error).and.not.be.instanceOf(AppAttestError);
    expect((wrongRoots as Error).message).to.equal('trustedRoots[0] is not a PEM certificate');
  });
});

describe('Apple App Attest: assertions on a test key', () => {
  const at = new Date('2030-06-01T12:00:00Z');
  const appId = 'ABCDE12345.dev.tollgate.example';
  const requestHash = sha256('{"challenge":"c2","path":"/v1/chat"}');
  let key: TestAttestation;

  before(async () => {
    const authority = await createTestAuthority(at);
    key = await createTestAttestation({ authority, appId, clientDataHash: sha256('c1'), at });
  });

  const verifyWith = (assertion: Buffer, previousCounter: number, overrides: { clientDataHash?: Buffer; appId?: string; publicKeyPem?: string } = {}) =>
    verifyAppAttestAssertion({ assertion, clientDataHash: requestHash, publicKeyPem: key.publicKeyPem, appId, previousCounter, ...overrides });
  const reasonOf = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      expect(error).to.be.instanceOf(AppAttestError);
      return (error as AppAttestError).reason;
    }
    throw new Error('accepted');
  };

  it('accepts a signed assertion whose counter grew, also with extension data after the 37 bytes', () => {
    expect(verifyWith(createTestAssertion({ privateKey: key.privateKey, appId, counter: 1, clientDataHash: requestHash }), 0)).to.deep.equal({ valid: true, counter: 1 });
    expect(verifyWith(createTestAssertion({ privateKey: key.privateKey, appId, counter: 7, clientDataHash: requestHash, trailing: Buffer.from('a0', 'hex') }), 3)).to.deep.equal({ valid: true, counter: 7 });
  });

  it('rejects a counter that did not increase', () => {
    const assertion = createTestAssertion({ privateKey: key.privateKey, appId, counter: 5, clientDataHash: requestHash });
    expect(reasonOf(() => verifyWith(assertion, 5))).to.equal('counter_not_increased');
    expect(reasonOf(() => verifyWith(assertion, 6))).to.equal('counter_not_increased');
  });

  it('rejects a bad signature: altered, made by another key, or over other client data', async () => {
    const assertion = createTestAssertion({ privateKey: key.privateKey, appId, counter: 2, clientDataHash: requestHash });
    const altered = reencodeAssertion(assertion, (object) => {
      object.signature[object.signature.length - 1] ^= 0x01;
    });
    expect(reasonOf(() => verifyWith(altered, 1))).to.equal('signature_invalid');
    const garbage = reencodeAssertion(assertion, (object) => {
      object.signature = Buffer.from('not a DER signature');
    });
    expect(reasonOf(() => verifyWith(garbage, 1))).to.equal('signature_invalid');
    const other = await createTestAttestation({ authority: await createTestAuthority(at), appId, clientDataHash: sha256('c1'), at });
    expect(reasonOf(() => verifyWith(createTestAssertion({ privateKey: other.privateKey, appId, counter: 2, clientDataHash: requestHash }), 1))).to.equal('signature_invalid');
    expect(reasonOf(() => verifyWith(assertion, 1, { clientDataHash: sha256('{"challenge":"c3","path":"/v1/chat"}') }))).to.equal('signature_invalid');
    const raisedCounter = reencodeAssertion(assertion, (object) => {
      object.authenticatorData[36] = 9;
    });
    expect(reasonOf(() => verifyWith(raisedCounter, 1))).to.equal('signature_invalid');
  });

  it('rejects an assertion for another app', () => {
    const assertion = createTestAssertion({ privateKey: key.privateKey, appId: 'ABCDE12345.dev.tollgate.other', counter: 1, clientDataHash: requestHash });
    expect(reasonOf(() => verifyWith(assertion, 0))).to.equal('rp_id_mismatch');
  });

  it('rejects malformed assertions and an unreadable stored key', () => {
    expect(reasonOf(() => verifyWith(Buffer.from('garbage'), 0))).to.equal('malformed_assertion');
    const short = reencodeAssertion(createTestAssertion({ privateKey: key.privateKey, appId, counter: 1, clientDataHash: requestHash }), (object) => {
      object.authenticatorData = object.authenticatorData.subarray(0, 36);
    });
    expect(reasonOf(() => verifyWith(short, 0))).to.equal('malformed_assertion');
    expect(reasonOf(() => verifyWith(createTestAssertion({ privateKey: key.privateKey, appId, counter: 1, clientDataHash: requestHash }), 0, { publicKeyPem: 'not a key' }))).to.equal('invalid_public_key');
    const assertion = createTestAssertion({ privateKey: key.privateKey, appId, counter: 1, clientDataHash: requestHash });
    const edits: Array<(object: Record<string, unknown>) => void> = [
      (object) => delete object.signature,
      (object) => delete object.authenticatorData,
      (object) => (object.signature = 'a signature as text'),
      (object) => (object.authenticatorData = [1, 2, 3]),
    ];
    expect(edits.map((edit) => reasonOf(() => verifyWith(reencodeAssertion(assertion, edit as never), 0)))).to.deep.equal(edits.map(() => 'malformed_assertion'));
    expect(reasonOf(() => verifyWith(Buffer.alloc(0), 0))).to.equal('malformed_assertion');
    // CBOR null and a CBOR number are no map of fields.
    expect(reasonOf(() => verifyWith(Buffer.from([0xf6]), 0))).to.equal('malformed_assertion');
    expect(reasonOf(() => verifyWith(Buffer.from([0x05]), 0))).to.equal('malformed_assertion');
    // The 37 bytes alone are an assertion's whole authenticator data.
    expect(verifyWith(assertion, 0)).to.deep.equal({ valid: true, counter: 1 });
  });
});
