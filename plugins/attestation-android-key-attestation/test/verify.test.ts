/**
 * Android key attestation against real chains from public test suites (test/fixtures, copied from the
 * project's shared test data with their provenance), each verified at the instant its README gives, against Google's real root key.
 */
import { expect } from 'chai';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as x509 from '@peculiar/x509';
import { SecurityLevel } from '@peculiar/asn1-android';
import { KeyAttestationError, revokedSerialsFrom, verifyAndroidKeyAttestation } from '../verify';
import { createTestKeyAuthority } from './test-chain';

/** The real chains, copied into the project with their provenance (test/fixtures/README.md); read from the source tree. */
const TESTDATA = path.resolve(__dirname, '..', '..', '..', '..', 'plugins', 'attestation-android-key-attestation', 'test', 'fixtures');
const read = (name: string) => readFileSync(path.join(TESTDATA, name), 'utf8');
// Read when the suite runs, so that a missing file fails these tests with a clear error, not the whole run.
let TEE: { chain: string; challenge: Buffer; at: Date };
let PIXEL: { chain: string; challenge: Buffer; at: Date };

async function rejection(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(KeyAttestationError);
    return (error as KeyAttestationError).reason;
  }
  throw new Error('the attestation was accepted');
}

describe('Android key attestation verifier (real chains, and the test CA for what they cannot show)', () => {
  before(() => {
    TEE = { chain: read('google-ec-tee-chain.pem'), challenge: Buffer.from('abc'), at: new Date('2019-01-01T00:00:00Z') };
    PIXEL = { chain: read('pixel8a-2025-chain.pem'), challenge: Buffer.from('5652e2dc45549a96f96afa225502f87fadc08a60bc021392c0be8c5062fd5f5e', 'hex'), at: new Date('2025-01-08T00:00:00Z') };
  });

  it('accepts Google’s TEE test chain (attestation v3) at its validity instant', async () => {
    const result = await verifyAndroidKeyAttestation(TEE);
    expect(result).to.deep.include({ valid: true, attestationVersion: 3, securityLevel: 'TrustedEnvironment' });
    expect(result.keyId).to.match(/^[0-9a-f]{64}$/);
    expect(result.publicKeyPem).to.match(/BEGIN PUBLIC KEY/);
  });

  it('accepts a Pixel 8a KeyMint chain (RKP, Google root 2019) at its validity instant', async () => {
    const result = await verifyAndroidKeyAttestation({ ...PIXEL, packageName: 'com.google.android.gsf' });
    expect(result).to.deep.include({ valid: true, attestationVersion: 300, securityLevel: 'TrustedEnvironment' });
  });

  it('rejects a well-formed chain that ends in a root that is not Google’s at the root pin (untrusted_root)', async () => {
    // A chain that passes every other check (valid now, each certificate signed by the next, the right challenge, a
    // hardware key): only the pin of Google's root key can refuse it.
    const authority = await createTestKeyAuthority();
    const challenge = Buffer.from('foreign-root-challenge');
    const { chain } = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32) });
    expect(await rejection(verifyAndroidKeyAttestation({ chain, challenge, at: new Date() }))).to.equal('untrusted_root');
    expect(await rejection(verifyAndroidKeyAttestation({ chain, challenge, at: new Date(), trustedRootSpkiSha256: ['00'.repeat(32)] }))).to.equal('untrusted_root');
    // The control: the same chain verifies when its root is the trusted one.
    expect(await verifyAndroidKeyAttestation({ chain, challenge, at: new Date(), trustedRootSpkiSha256: [authority.rootSpkiSha256] })).to.include({ valid: true });
    // The real StrongBox chain of the fixtures is refused earlier: its leaf does not name the next certificate as issuer.
    expect(await rejection(verifyAndroidKeyAttestation({ chain: read('selfsigned-strongbox-chain.pem'), challenge: Buffer.from('abc'), at: TEE.at }))).to.equal('broken_chain');
  });

  it('rejects a key whose attestation is in hardware but whose keymaster is in software, and the reverse', async () => {
    const authority = await createTestKeyAuthority();
    const challenge = Buffer.from('mixed-levels');
    const verify = async (levels: { securityLevel: SecurityLevel; keymasterSecurityLevel: SecurityLevel }) => {
      const { chain } = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), ...levels });
      return verifyAndroidKeyAttestation({ chain, challenge, at: new Date(), trustedRootSpkiSha256: [authority.rootSpkiSha256] });
    };
    expect(await rejection(verify({ securityLevel: SecurityLevel.trustedEnvironment, keymasterSecurityLevel: SecurityLevel.software }))).to.equal('software_attestation');
    expect(await rejection(verify({ securityLevel: SecurityLevel.strongBox, keymasterSecurityLevel: SecurityLevel.software }))).to.equal('software_attestation');
    expect(await rejection(verify({ securityLevel: SecurityLevel.software, keymasterSecurityLevel: SecurityLevel.trustedEnvironment }))).to.equal('software_attestation');
    expect(await verify({ securityLevel: SecurityLevel.trustedEnvironment, keymasterSecurityLevel: SecurityLevel.strongBox })).to.include({ securityLevel: 'TrustedEnvironment' });
  });

  it('rejects the wrong challenge, an expired chain, a chain not yet valid, a wrong package, a revoked certificate', async () => {
    expect(await rejection(verifyAndroidKeyAttestation({ ...TEE, challenge: Buffer.from('abd') }))).to.equal('challenge_mismatch');
    expect(await rejection(verifyAndroidKeyAttestation({ ...TEE, at: new Date('2040-01-01T00:00:00Z') }))).to.equal('certificate_expired');
    expect(await rejection(verifyAndroidKeyAttestation({ ...TEE, at: new Date('2000-01-01T00:00:00Z') }))).to.equal('certificate_not_yet_valid');
    expect(await rejection(verifyAndroidKeyAttestation({ ...PIXEL, packageName: 'com.example.not.this.app' }))).to.equal('wrong_package');
    const intermediate = new x509.X509Certificate(TEE.chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)![1]!);
    const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-revocation-'));
    try {
      const file = path.join(directory, 'status.json');
      writeFileSync(file, JSON.stringify({ entries: { [intermediate.serialNumber]: { status: 'REVOKED', reason: 'KEY_COMPROMISE' } } }));
      expect(await rejection(verifyAndroidKeyAttestation({ ...TEE, revokedSerials: revokedSerialsFrom(readFileSync(file, 'utf8')) }))).to.equal('certificate_revoked');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('rejects a tampered chain: a missing intermediate, or a leaf whose signature no longer matches', async () => {
    const blocks = TEE.chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!;
    expect(await rejection(verifyAndroidKeyAttestation({ ...TEE, chain: [blocks[0], ...blocks.slice(2)].join('\n') }))).to.equal('broken_chain');
    const leaf = Buffer.from(new x509.X509Certificate(blocks[0]!).rawData);
    leaf[leaf.length - 10] ^= 0xff; // inside the signature
    const tampered = [leaf.toString('base64'), ...blocks.slice(1).map((block) => Buffer.from(new x509.X509Certificate(block).rawData).toString('base64'))];
    expect(await rejection(verifyAndroidKeyAttestation({ ...TEE, chain: tampered }))).to.be.oneOf(['bad_signature', 'malformed_chain']);
  });

  it('reads Google\'s revocation status list: revoked and suspended serials, in any case; other statuses and no entries revoke nothing', async () => {
    const list = revokedSerialsFrom(JSON.stringify({ entries: { ABCDEF01: { status: 'REVOKED' }, '2a': { status: 'SUSPENDED' }, '3b': { status: 'VALID' }, '4c': {} } }));
    expect([...list].sort()).to.deep.equal(['2a', 'abcdef01']);
    expect(revokedSerialsFrom('{}').size).to.equal(0);
    // A certificate's serial is compared in lower case, whichever case the list and the certificate use.
    const intermediate = new x509.X509Certificate(TEE.chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)![1]!);
    const upper = revokedSerialsFrom(JSON.stringify({ entries: { [intermediate.serialNumber.toUpperCase()]: { status: 'SUSPENDED' } } }));
    expect(await rejection(verifyAndroidKeyAttestation({ ...TEE, revokedSerials: upper }))).to.equal('certificate_revoked');
    const lower = revokedSerialsFrom(JSON.stringify({ entries: { [intermediate.serialNumber.toLowerCase()]: { status: 'REVOKED' } } }));
    expect(await rejection(verifyAndroidKeyAttestation({ ...TEE, revokedSerials: lower }))).to.equal('certificate_revoked');
  });

  it('accepts a certificate at exactly its notBefore and its notAfter (RFC 5280 validity is inclusive), and not a millisecond outside', async () => {
    // RFC 5280 section 4.1.2.5: "the period of time from notBefore through notAfter, inclusive". The real chains are
    // verified at one instant each; the test CA's leaf has boundaries chosen here (whole seconds, as X.509 encodes them).
    const notBefore = new Date('2026-06-01T00:00:00Z');
    const notAfter = new Date('2026-06-02T00:00:00Z');
    const authority = await createTestKeyAuthority(notBefore);
    const challenge = Buffer.from('validity-boundaries');
    const { chain } = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), leafValidity: { notBefore, notAfter } });
    const at = (instant: number) => verifyAndroidKeyAttestation({ chain, challenge, at: new Date(instant), trustedRootSpkiSha256: [authority.rootSpkiSha256] });
    expect(await at(notBefore.getTime())).to.include({ valid: true });
    expect(await at(notAfter.getTime())).to.include({ valid: true });
    expect(await rejection(at(notBefore.getTime() - 1))).to.equal('certificate_not_yet_valid');
    expect(await rejection(at(notAfter.getTime() + 1))).to.equal('certificate_expired');
  });

  it('refuses a lone certificate, a chain whose root is not self-signed, and a leaf without a readable key description', async () => {
    const authority = await createTestKeyAuthority();
    const challenge = Buffer.from('chain-shape');
    const trusted = { challenge, at: new Date(), trustedRootSpkiSha256: [authority.rootSpkiSha256] };
    const { chain } = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32) });
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: [chain[0]!] }))).to.equal('malformed_chain');
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: [] }))).to.equal('malformed_chain');
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: 'PEM text without any certificate' }))).to.equal('malformed_chain');
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: [chain[0]!, Buffer.from('not DER').toString('base64')] }))).to.equal('malformed_chain');
    // Two certificates are a chain to check (this one skips the intermediate).
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: [chain[0]!, chain[2]!] }))).to.equal('broken_chain');
    // The root's name and pinned key, signed by some other key: the intermediate still verifies under it, the root does not.
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: [chain[0]!, chain[1]!, authority.rootNotSelfSigned] }))).to.equal('bad_signature');
    const bare = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), keyDescription: 'absent' });
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: bare.chain }))).to.equal('no_key_description');
    const garbled = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), keyDescription: Buffer.from([0x04, 0x03, 0x61, 0x62, 0x63]) });
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: garbled.chain }))).to.equal('malformed_key_description');
  });

  it('checks the attested app: package, signing certificate (hex with colons in any case), a key attested for no app; reports StrongBox', async () => {
    const authority = await createTestKeyAuthority();
    const challenge = Buffer.from('application-id');
    const trusted = { challenge, at: new Date(), trustedRootSpkiSha256: [authority.rootSpkiSha256] };
    const { chain } = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), securityLevel: SecurityLevel.strongBox });
    const accepted = await verifyAndroidKeyAttestation({ ...trusted, chain, packageName: 'com.example.app', signingCertificateSha256: `${'AB:'.repeat(31)}AB` });
    expect(accepted).to.deep.include({ valid: true, securityLevel: 'StrongBox', packageNames: ['com.example.app'] });
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain, signingCertificateSha256: 'cd'.repeat(32) }))).to.equal('wrong_signing_certificate');
    const noApp = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), withoutApplicationId: true });
    expect(await verifyAndroidKeyAttestation({ ...trusted, chain: noApp.chain })).to.deep.include({ valid: true, packageNames: [], securityLevel: 'TrustedEnvironment' });
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: noApp.chain, packageName: 'com.example.app' }))).to.equal('wrong_package');
    expect(await rejection(verifyAndroidKeyAttestation({ ...trusted, chain: noApp.chain, signingCertificateSha256: 'ab'.repeat(32) }))).to.equal('wrong_signing_certificate');
    // The application id may sit in the hardware-enforced list.
    const inHardware = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), applicationIdInHardwareList: true });
    expect(await verifyAndroidKeyAttestation({ ...trusted, chain: inHardware.chain, packageName: 'com.example.app' })).to.deep.include({ valid: true, packageNames: ['com.example.app'] });
  });

  it('compares serial numbers with letters in lower case: a listed leaf is revoked whichever case the list uses', async () => {
    const authority = await createTestKeyAuthority();
    const challenge = Buffer.from('serial-case');
    const { chain } = await authority.attest({ challenge, packageName: 'com.example.app', signatureDigestHex: 'ab'.repeat(32), serialNumber: '7fabcdef' });
    expect(new x509.X509Certificate(Buffer.from(chain[0]!, 'base64')).serialNumber.toLowerCase()).to.equal('7fabcdef');
    const verify = (list: object) => verifyAndroidKeyAttestation({ chain, challenge, at: new Date(), trustedRootSpkiSha256: [authority.rootSpkiSha256], revokedSerials: revokedSerialsFrom(JSON.stringify({ entries: list })) });
    expect(await rejection(verify({ '7FABCDEF': { status: 'REVOKED' } }))).to.equal('certificate_revoked');
    expect(await rejection(verify({ '7fabcdef': { status: 'SUSPENDED' } }))).to.equal('certificate_revoked');
    expect(await verify({ '7fabcdee': { status: 'REVOKED' } })).to.include({ valid: true });
  });
});
