/**
 * Apple App Attest, verified offline, following Apple's "Validating apps that connect to your server"
 * (https://developer.apple.com/documentation/devicecheck/validating-apps-that-connect-to-your-server).
 *
 * Attestation (once per key), in Apple's order:
 * 1. the CBOR attestation object has `fmt` "apple-appattest"; `attStmt.x5c` is [credCert, intermediate], each
 *    certificate is valid at the verification instant, signed by the next one, and the intermediate is signed by the
 *    pinned Apple App Attestation Root CA (any other root is `untrusted_root`);
 * 2–4. nonce = SHA-256(authData ‖ clientDataHash) equals the OCTET STRING of the credCert extension
 *    1.2.840.113635.100.8.2 (DER: SEQUENCE { [1] EXPLICIT OCTET STRING });
 * 5. SHA-256 of the credCert public key (the 65-byte uncompressed P-256 point) is the key id the app sent;
 * 6. the authenticator data's RP ID hash is SHA-256 of the App ID (TEAMID.BUNDLEID);
 * 7. its counter is 0;
 * 8. its aaguid is "appattestdevelop" (development) or "appattest" + seven NUL bytes (production), as allowed;
 * 9. its credential id is the key id.
 *
 * Assertion (every request): the signature verifies with the stored key over nonce = SHA-256(authenticatorData ‖
 * clientDataHash), the RP ID hash is the App ID's, and the counter is greater than the stored one. Checked against a
 * real device assertion: the ECDSA signature covers the 32-byte nonce (so the curve's SHA-256 runs over the nonce),
 * not authenticatorData ‖ clientDataHash as in WebAuthn.
 *
 * The authenticator data is read by offsets (rpIdHash 0..32, flags 32, counter 33..37 big-endian, aaguid 37..53,
 * credentialIdLength 53..55, credentialId, then the COSE key). Nothing after the credential id is required to end where
 * WebAuthn says it should: iOS 27 appends CBOR extension data without setting the ED flag (0x80), so a strict parser
 * would reject genuine attestations. The COSE key is not needed (the key is taken from the certified credCert).
 *
 * The verification instant is a parameter: App Attest leaf certificates live days to months, so tests verify real
 * attestations at a fixed past instant. A test root may be passed only through `trustedRoots` (tests); production uses
 * the pinned root below.
 */
import { KeyObject, createHash, createPublicKey, verify as verifySignature, webcrypto } from 'node:crypto';
import type * as CborDecode from 'cbor-x/decode-no-eval' with { 'resolution-mode': 'import' };
import * as x509 from '@peculiar/x509';

// The input is untrusted, so cbor-x's decoder without generated code (`new Function`) for its record extension. cbor-x
// is an ES module package whose entry points are also built as CommonJS (this one is dist/decode-no-eval.cjs) but whose
// typings are ESM only: require it, typed from those declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { decode } = require('cbor-x/decode-no-eval') as typeof CborDecode;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/**
 * Apple App Attestation Root CA (P-384, self-signed, valid 2020-03-18 → 2045-03-15, serial 0BF3BE0EF1CDD2E0FB8C6E721F621798),
 * published at https://www.apple.com/certificateauthority/Apple_App_Attestation_Root_CA.pem.
 *
 * SHA-256 of the DER: 1C:B9:82:3B:A2:8B:A6:AD:2D:33:A0:06:94:1D:E2:AE:4F:51:3E:F1:D4:E8:31:B9:F7:E0:FA:7B:62:42:C9:32.
 * Checked against independent sources:
 * - the same PEM, byte for byte, pinned in srinivas1729/appattest-checker-node (src/attestation.ts, commit 03093e21),
 *   uebelack/node-app-attest (src/verifyAttestation.js, commit 01f7aee4) and veehaitch/devicecheck-appattest (README.md);
 *   its SHA-256 computed here is the value above;
 * - the fingerprint as stated by other public verifiers (e.g. a Go App Attest test pinning base64
 *   "HLmCO6KLpq0tM6AGlB3irk9RPvHU6DG59+D6e2JCyTI=", and TypeScript/Rust/Swift verifiers pinning the hex above);
 * - real attestations issued by Apple in 2024 (development and production) and Apple's own 2026 sample from the
 *   "Attestation Object Validation Guide" all chain to this key (test/fixtures, verified by the tests).
 * A test in verify.test.ts recomputes the fingerprint, so an edit to the PEM fails the suite.
 */
export const APPLE_APP_ATTESTATION_ROOT_CA_PEM = `-----BEGIN CERTIFICATE-----
MIICITCCAaegAwIBAgIQC/O+DvHN0uD7jG5yH2IXmDAKBggqhkjOPQQDAzBSMSYw
JAYDVQQDDB1BcHBsZSBBcHAgQXR0ZXN0YXRpb24gUm9vdCBDQTETMBEGA1UECgwK
QXBwbGUgSW5jLjETMBEGA1UECAwKQ2FsaWZvcm5pYTAeFw0yMDAzMTgxODMyNTNa
Fw00NTAzMTUwMDAwMDBaMFIxJjAkBgNVBAMMHUFwcGxlIEFwcCBBdHRlc3RhdGlv
biBSb290IENBMRMwEQYDVQQKDApBcHBsZSBJbmMuMRMwEQYDVQQIDApDYWxpZm9y
bmlhMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAERTHhmLW07ATaFQIEVwTtT4dyctdh
NbJhFs/Ii2FdCgAHGbpphY3+d8qjuDngIN3WVhQUBHAoMeQ/cLiP1sOUtgjqK9au
Yen1mMEvRq9Sk3Jm5X8U62H+xTD3FE9TgS41o0IwQDAPBgNVHRMBAf8EBTADAQH/
MB0GA1UdDgQWBBSskRBTM72+aEH/pwyp5frq5eWKoTAOBgNVHQ8BAf8EBAMCAQYw
CgYIKoZIzj0EAwMDaAAwZQIwQgFGnByvsiVbpTKwSga0kP0e8EeDS4+sQmTvb7vn
53O5+FRXgeLhpJ06ysC5PrOyAjEAp5U4xDgEgllF7En3VcE3iexZZtKeYnpqtijV
oyFraWVIyd/dganmrduC1bmTBGwD
-----END CERTIFICATE-----
`;

/** SHA-256 of the pinned root's DER, lower-case hex (see above). */
export const APPLE_APP_ATTESTATION_ROOT_CA_SHA256 = '1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932';

/** The credCert extension carrying the nonce. */
export const APP_ATTEST_NONCE_OID = '1.2.840.113635.100.8.2';

/** aaguid of keys attested in the development (sandbox) environment. */
export const AAGUID_DEVELOPMENT = Buffer.from('appattestdevelop', 'ascii');
/** aaguid of keys attested in production: "appattest" followed by seven NUL bytes. */
export const AAGUID_PRODUCTION = Buffer.concat([Buffer.from('appattest', 'ascii'), Buffer.alloc(7)]);

export class AppAttestError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export interface AppAttestAttestationInput {
  /** The attestation object from `DCAppAttestService.attestKey`, raw CBOR. */
  readonly attestation: Buffer;
  /** The `clientDataHash` the app passed to `attestKey` (normally SHA-256 of the server's challenge). */
  readonly clientDataHash: Buffer;
  /** The key id from `generateKey`: base64 of SHA-256 of the public key. */
  readonly keyId: string;
  /** TEAMID.BUNDLEID */
  readonly appId: string;
  /** Accept the development aaguid "appattestdevelop". */
  readonly allowDevelopment: boolean;
  /** Accept the production aaguid (default true). */
  readonly allowProduction?: boolean;
  /** Verification instant: every certificate must be valid at it. */
  readonly at: Date;
  /** Tests only: PEM roots to trust instead of Apple's. */
  readonly trustedRoots?: readonly string[];
}

export interface AppAttestAttestationResult {
  readonly valid: true;
  /** The attested key (SubjectPublicKeyInfo PEM), to store and verify assertions with. */
  readonly publicKeyPem: string;
  /** base64 of SHA-256 of the attested key: equal to the key id the app sent. */
  readonly keyId: string;
  readonly environment: 'development' | 'production';
  /** Apple's receipt (PKCS#7), for the fraud-risk metric service. */
  readonly receipt: Buffer;
  readonly counter: 0;
}

export interface AppAttestAssertionInput {
  /** The assertion from `DCAppAttestService.generateAssertion`, raw CBOR `{signature, authenticatorData}`. */
  readonly assertion: Buffer;
  /** The `clientDataHash` the app signed (SHA-256 of the request payload, including the server's challenge). */
  readonly clientDataHash: Buffer;
  /** The key stored at attestation. */
  readonly publicKeyPem: string;
  /** TEAMID.BUNDLEID */
  readonly appId: string;
  /** The counter of the last accepted assertion (0 right after attestation). */
  readonly previousCounter: number;
}

export interface AppAttestAssertionResult {
  readonly valid: true;
  /** The new counter, to store. */
  readonly counter: number;
}

interface AuthenticatorData {
  readonly rpIdHash: Buffer;
  readonly flags: number;
  readonly counter: number;
  readonly aaguid: Buffer;
  readonly credentialId: Buffer;
}

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

/** CBOR maps decode to objects (text keys) or to `Map`s (other keys); read a text key from either. */
function field(container: unknown, key: string): unknown {
  if (container instanceof Map) return container.get(key);
  if (container !== null && typeof container === 'object') return (container as Record<string, unknown>)[key];
  return undefined;
}

/** A CBOR byte string, copied so that later reads do not alias the caller's buffer. */
function bytes(value: unknown): Buffer | undefined {
  return value instanceof Uint8Array ? Buffer.from(value) : undefined;
}

function decodeCbor(data: Buffer, reason: string, what: string): unknown {
  if (!(data instanceof Uint8Array) || data.length === 0) throw new AppAttestError(reason, `the ${what} is empty`);
  try {
    return decode(data);
  } catch {
    throw new AppAttestError(reason, `the ${what} is not valid CBOR`);
  }
}

/**
 * The authenticator data by offsets. `withCredential` reads the attested credential data (attestation); an assertion
 * carries only the first 37 bytes. Bytes after the credential id are not examined (see the file comment).
 */
function parseAuthenticatorData(data: Buffer, withCredential: boolean, reason: string): AuthenticatorData {
  const minimum = withCredential ? 55 : 37;
  if (data.length < minimum) throw new AppAttestError(reason, `the authenticator data is ${data.length} bytes, shorter than ${minimum}`);
  const rpIdHash = data.subarray(0, 32);
  const flags = data[32]!;
  const counter = data.readUInt32BE(33);
  if (!withCredential) return { rpIdHash, flags, counter, aaguid: Buffer.alloc(0), credentialId: Buffer.alloc(0) };
  const credentialIdLength = data.readUInt16BE(53);
  if (data.length < 55 + credentialIdLength) throw new AppAttestError(reason, 'the credential id runs past the end of the authenticator data');
  return { rpIdHash, flags, counter, aaguid: data.subarray(37, 53), credentialId: data.subarray(55, 55 + credentialIdLength) };
}

/** One DER TLV at `offset`: its tag and the bounds of its content. Definite lengths only (DER). */
function readTlv(data: Buffer, offset: number): { tag: number; start: number; end: number } {
  if (offset + 2 > data.length) throw new Error('truncated');
  const tag = data[offset]!;
  let length = data[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4 || start + count > data.length) throw new Error('bad length');
    length = 0;
    for (let index = 0; index < count; index += 1) length = length * 256 + data[start + index]!;
    start += count;
  }
  if (start + length > data.length) throw new Error('truncated');
  return { tag, start, end: start + length };
}

/** The nonce in the credCert extension value: SEQUENCE { [1] EXPLICIT OCTET STRING }. */
function nonceFromExtension(value: Buffer): Buffer {
  try {
    const sequence = readTlv(value, 0);
    const tagged = readTlv(value, sequence.start);
    const octets = readTlv(value, tagged.start);
    if (sequence.tag !== 0x30 || sequence.end !== value.length || tagged.tag !== 0xa1 || tagged.end !== sequence.end || octets.tag !== 0x04 || octets.end !== tagged.end) {
      throw new Error('unexpected structure');
    }
    return value.subarray(octets.start, octets.end);
  } catch {
    throw new AppAttestError('malformed_attestation', `the credCert nonce extension (${APP_ATTEST_NONCE_OID}) is not SEQUENCE { [1] OCTET STRING }`);
  }
}

function parseCertificate(der: Buffer, index: number): x509.X509Certificate {
  try {
    return new x509.X509Certificate(der);
  } catch {
    throw new AppAttestError('malformed_attestation', `x5c[${index}] is not a DER certificate`);
  }
}

let pinnedRoots: x509.X509Certificate[] | undefined;

function trustedRootsFrom(pems: readonly string[] | undefined): x509.X509Certificate[] {
  if (!pems) return (pinnedRoots ??= [new x509.X509Certificate(APPLE_APP_ATTESTATION_ROOT_CA_PEM)]);
  return pems.map((pem, index) => {
    try {
      return new x509.X509Certificate(pem);
    } catch {
      throw new Error(`trustedRoots[${index}] is not a PEM certificate`);
    }
  });
}

function checkValidity(certificate: x509.X509Certificate, name: string, at: Date): void {
  if (at < certificate.notBefore) throw new AppAttestError('certificate_not_yet_valid', `${name} is not valid yet at ${at.toISOString()}`);
  if (at > certificate.notAfter) throw new AppAttestError('certificate_expired', `${name} expired before ${at.toISOString()}`);
}

const isCertificateAuthority = (certificate: x509.X509Certificate) =>
  certificate.getExtension(x509.BasicConstraintsExtension)?.ca === true;

/**
 * Step 1: x5c (credCert first) is valid at `at`, each certificate is issued and signed by the next, every issuer is a
 * CA, and the last one is issued and signed by a trusted root (itself valid at `at`).
 */
async function verifyChain(certificates: x509.X509Certificate[], roots: x509.X509Certificate[], at: Date): Promise<void> {
  certificates.forEach((certificate, index) => checkValidity(certificate, index === 0 ? 'the credCert' : `x5c[${index}]`, at));
  for (let index = 0; index < certificates.length - 1; index += 1) {
    const certificate = certificates[index]!;
    const issuer = certificates[index + 1]!;
    if (certificate.issuer !== issuer.subject) throw new AppAttestError('chain_invalid', `x5c[${index}] is not issued by x5c[${index + 1}]`);
    if (!isCertificateAuthority(issuer)) throw new AppAttestError('chain_invalid', `x5c[${index + 1}] is not a certificate authority`);
    if (!(await certificate.verify({ publicKey: issuer, signatureOnly: true }))) {
      throw new AppAttestError('chain_invalid', `x5c[${index}] is not signed by x5c[${index + 1}]`);
    }
  }
  const last = certificates[certificates.length - 1]!;
  for (const root of roots) {
    if (last.issuer !== root.subject) continue;
    if (!(await last.verify({ publicKey: root, signatureOnly: true }))) continue;
    checkValidity(root, 'the App Attestation root', at);
    return;
  }
  throw new AppAttestError('untrusted_root', "the chain does not end in Apple's App Attestation Root CA");
}

/** The credCert key as the 65-byte uncompressed P-256 point (04 ‖ x ‖ y), which Apple's key id hashes. */
function uncompressedPoint(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || !jwk.x || !jwk.y) throw new AppAttestError('malformed_attestation', 'the credCert key is not a P-256 key');
  return Buffer.concat([Buffer.from([0x04]), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]);
}

function environmentOf(aaguid: Buffer, input: AppAttestAttestationInput): 'development' | 'production' {
  if (aaguid.equals(AAGUID_PRODUCTION)) {
    if (input.allowProduction === false) throw new AppAttestError('aaguid_not_allowed', 'production attestations are not accepted');
    return 'production';
  }
  if (aaguid.equals(AAGUID_DEVELOPMENT)) {
    if (!input.allowDevelopment) throw new AppAttestError('aaguid_not_allowed', 'development (appattestdevelop) attestations are not accepted');
    return 'development';
  }
  throw new AppAttestError('aaguid_not_allowed', `the aaguid ${aaguid.toString('hex')} is not App Attest's`);
}

/** Verifies an App Attest attestation object; throws `AppAttestError` with a reason. */
export async function verifyAppAttestAttestation(input: AppAttestAttestationInput): Promise<AppAttestAttestationResult> {
  const object = decodeCbor(input.attestation, 'malformed_attestation', 'attestation object');
  const fmt = field(object, 'fmt');
  if (fmt === undefined) throw new AppAttestError('malformed_attestation', 'the attestation object has no fmt');
  if (fmt !== 'apple-appattest') throw new AppAttestError('bad_format', `the attestation format is ${JSON.stringify(fmt)}, not "apple-appattest"`);
  const statement = field(object, 'attStmt');
  const x5c = field(statement, 'x5c');
  const receipt = bytes(field(statement, 'receipt'));
  const authData = bytes(field(object, 'authData'));
  if (!Array.isArray(x5c) || x5c.length < 2 || !x5c.every((entry) => entry instanceof Uint8Array)) {
    throw new AppAttestError('malformed_attestation', 'attStmt.x5c must hold the credCert and the intermediate certificate');
  }
  if (!receipt || !authData) throw new AppAttestError('malformed_attestation', 'the attestation object lacks attStmt.receipt or authData');
  const authenticatorData = parseAuthenticatorData(authData, true, 'malformed_attestation');
  const certificates = (x5c as Uint8Array[]).map((entry, index) => parseCertificate(Buffer.from(entry), index));

  // 1. The chain up to Apple's root.
  await verifyChain(certificates, trustedRootsFrom(input.trustedRoots), input.at);
  const credCert = certificates[0]!;

  // 2–4. The nonce binds authData and the client data to the certified key.
  const extension = credCert.getExtension(APP_ATTEST_NONCE_OID);
  if (!extension) throw new AppAttestError('malformed_attestation', `the credCert has no nonce extension (${APP_ATTEST_NONCE_OID})`);
  if (!nonceFromExtension(Buffer.from(extension.value)).equals(sha256(authData, input.clientDataHash))) {
    throw new AppAttestError('nonce_mismatch', 'the credCert nonce is not SHA-256(authData ‖ clientDataHash): wrong challenge or altered authData');
  }

  // 5. The certified key is the one the app named.
  const publicKey = createPublicKey({ key: Buffer.from(credCert.publicKey.rawData), format: 'der', type: 'spki' });
  const keyIdBytes = sha256(uncompressedPoint(publicKey));
  if (!Buffer.from(input.keyId, 'base64').equals(keyIdBytes)) throw new AppAttestError('key_id_mismatch', 'the key id is not SHA-256 of the certified public key');

  // 6. The App ID.
  if (!authenticatorData.rpIdHash.equals(sha256(Buffer.from(input.appId, 'utf8')))) {
    throw new AppAttestError('rp_id_mismatch', `the attestation is not for the App ID ${input.appId}`);
  }
  // 7. A fresh key has signed nothing.
  if (authenticatorData.counter !== 0) throw new AppAttestError('counter_not_zero', `the attestation counter is ${authenticatorData.counter}, not 0`);
  // 8. The environment.
  const environment = environmentOf(authenticatorData.aaguid, input);
  // 9. The credential is the key.
  if (!authenticatorData.credentialId.equals(keyIdBytes)) throw new AppAttestError('credential_id_mismatch', 'the credential id is not the key id');

  return {
    valid: true,
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    keyId: keyIdBytes.toString('base64'),
    environment,
    receipt,
    counter: 0,
  };
}

/** Verifies an App Attest assertion with the key stored at attestation; throws `AppAttestError` with a reason. */
export function verifyAppAttestAssertion(input: AppAttestAssertionInput): AppAttestAssertionResult {
  const object = decodeCbor(input.assertion, 'malformed_assertion', 'assertion');
  const signature = bytes(field(object, 'signature'));
  const authenticatorData = bytes(field(object, 'authenticatorData'));
  if (!signature || !authenticatorData) throw new AppAttestError('malformed_assertion', 'the assertion lacks signature or authenticatorData');
  const parsed = parseAuthenticatorData(authenticatorData, false, 'malformed_assertion');
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey(input.publicKeyPem);
  } catch {
    throw new AppAttestError('invalid_public_key', 'the stored public key cannot be read');
  }

  // 1–3. The signature covers nonce = SHA-256(authenticatorData ‖ clientDataHash).
  const nonce = sha256(authenticatorData, input.clientDataHash);
  let signed = false;
  try {
    signed = verifySignature('sha256', nonce, { key: publicKey, dsaEncoding: 'der' }, signature);
  } catch {
    signed = false;
  }
  if (!signed) throw new AppAttestError('signature_invalid', 'the assertion signature does not verify with the attested key');
  // 4. The App ID.
  if (!parsed.rpIdHash.equals(sha256(Buffer.from(input.appId, 'utf8')))) throw new AppAttestError('rp_id_mismatch', `the assertion is not for the App ID ${input.appId}`);
  // 5. Replay: the counter only grows.
  if (!(parsed.counter > input.previousCounter)) {
    throw new AppAttestError('counter_not_increased', `the assertion counter ${parsed.counter} is not greater than ${input.previousCounter}`);
  }
  return { valid: true, counter: parsed.counter };
}
