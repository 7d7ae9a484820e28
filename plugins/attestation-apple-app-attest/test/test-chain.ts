/**
 * Tests only: a stand-in for Apple's App Attest PKI, so that every rejection can be produced on purpose.
 *
 * It mimics Apple's shapes: a P-384 root → a P-384 intermediate (CA, path length 0, signs with ECDSA-SHA256 like
 * "Apple App Attestation CA 1") → a P-256 credCert carrying the nonce in extension 1.2.840.113635.100.8.2 as
 * SEQUENCE { [1] EXPLICIT OCTET STRING }; the attestation object is the CBOR map {fmt, attStmt: {x5c, receipt},
 * authData}, and an assertion is {signature, authenticatorData} with an ECDSA (DER) signature over
 * SHA-256(authenticatorData ‖ clientDataHash). Each knob below breaks one thing and keeps the rest consistent (the
 * nonce is recomputed over whatever authData is built), so a test isolates one check.
 */
import { KeyObject, createHash, randomBytes, sign, webcrypto } from 'node:crypto';
import type * as CborX from 'cbor-x' with { 'resolution-mode': 'import' };
import * as x509 from '@peculiar/x509';
import { AAGUID_DEVELOPMENT, AAGUID_PRODUCTION, APP_ATTEST_NONCE_OID } from '../verify';

// See verify.ts: cbor-x's CommonJS entry, typed from its ESM declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Encoder } = require('cbor-x') as typeof CborX;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/**
 * Plain CBOR as Apple writes it: maps untagged (`useTag259ForMaps` is a cbor-x option its typings omit), byte strings
 * without the typed-array tag.
 */
const cbor = new Encoder({ useRecords: false, tagUint8Array: false, ...{ useTag259ForMaps: false } });

const DAY = 86_400_000;
const P384 = { name: 'ECDSA', namedCurve: 'P-384' };
const P256 = { name: 'ECDSA', namedCurve: 'P-256' };
const ECDSA_SHA384 = { name: 'ECDSA', hash: 'SHA-384' };
const ECDSA_SHA256 = { name: 'ECDSA', hash: 'SHA-256' };

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const serialNumber = () => Buffer.from([randomBytes(1)[0]! & 0x7f, ...randomBytes(8)]).toString('hex');

export interface TestAuthority {
  readonly rootPem: string;
  readonly root: x509.X509Certificate;
  readonly intermediate: x509.X509Certificate;
  readonly intermediateKeys: webcrypto.CryptoKeyPair;
}

/** A root and an intermediate named like Apple's, valid from a year before `at` to ten years after. */
export async function createTestAuthority(
  at: Date,
  names = { root: 'Test App Attestation Root CA', intermediate: 'Test App Attestation CA 1' },
  /**
   * false: the intermediate is issued as an end-entity certificate (BasicConstraints cA false), which may sign nothing;
   * 'unstated': it carries no BasicConstraints extension at all (not a CA either).
   */
  intermediateIsCa: boolean | 'unstated' = true,
  /** The issuer name the intermediate carries (default: the root's subject); it is signed by the root's key either way. */
  intermediateIssuer?: string,
): Promise<TestAuthority> {
  const rootKeys = (await webcrypto.subtle.generateKey(P384, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const intermediateKeys = (await webcrypto.subtle.generateKey(P384, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(at.getTime() - 365 * DAY);
  const notAfter = new Date(at.getTime() + 3650 * DAY);
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=${names.root}, O=Tollgate Tests, ST=California`,
    notBefore,
    notAfter,
    signingAlgorithm: ECDSA_SHA384,
    keys: rootKeys,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)],
  });
  const intermediate = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${names.intermediate}, O=Tollgate Tests, ST=California`,
    issuer: intermediateIssuer ?? root.subject,
    notBefore,
    notAfter,
    signingAlgorithm: ECDSA_SHA384,
    publicKey: intermediateKeys.publicKey,
    signingKey: rootKeys.privateKey,
    extensions:
      intermediateIsCa === true
        ? [new x509.BasicConstraintsExtension(true, 0, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)]
        : intermediateIsCa === false
          ? [new x509.BasicConstraintsExtension(false, undefined, true)]
          : [new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)],
  });
  return { rootPem: root.toString('pem'), root, intermediate, intermediateKeys };
}

export interface TestAttestationOptions {
  readonly authority: TestAuthority;
  readonly appId: string;
  readonly clientDataHash: Buffer;
  /** The instant the tests verify at; the credCert is valid from a day before to two days after unless overridden. */
  readonly at: Date;
  readonly aaguid?: 'production' | 'development' | Buffer;
  readonly counter?: number;
  /** authData flags; Apple sets 0x40 (attested credential data), never ED (0x80). */
  readonly flags?: number;
  /** Bytes appended after the COSE key (iOS 27 appends a CBOR extension map without setting ED). */
  readonly trailing?: Buffer;
  /** Replaces the credential id (which is the key id). */
  readonly credentialId?: Buffer;
  readonly leafNotBefore?: Date;
  readonly leafNotAfter?: Date;
  readonly fmt?: string;
  /** The issuer name the credCert carries (default: the intermediate's subject); the intermediate's key signs it either way. */
  readonly leafIssuer?: string;
  /** Replaces the intermediate sent in x5c (to break the chain). */
  readonly x5cIntermediate?: x509.X509Certificate;
}

export interface TestAttestation {
  /** Raw CBOR. */
  readonly attestation: Buffer;
  /** base64 of SHA-256 of the credCert's uncompressed point, as `generateKey` returns it. */
  readonly keyId: string;
  readonly authData: Buffer;
  readonly privateKey: KeyObject;
  readonly publicKeyPem: string;
}

/** DER of SEQUENCE { [1] EXPLICIT OCTET STRING nonce } (every part shorter than 128 bytes). */
function nonceExtensionValue(nonce: Buffer): Buffer {
  const octets = Buffer.concat([Buffer.from([0x04, nonce.length]), nonce]);
  const tagged = Buffer.concat([Buffer.from([0xa1, octets.length]), octets]);
  return Buffer.concat([Buffer.from([0x30, tagged.length]), tagged]);
}

function aaguidBytes(aaguid: TestAttestationOptions['aaguid']): Buffer {
  if (aaguid === undefined || aaguid === 'production') return AAGUID_PRODUCTION;
  if (aaguid === 'development') return AAGUID_DEVELOPMENT;
  return aaguid;
}

function uint32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}

/** A credCert for a fresh P-256 key and the attestation object around it. */
export async function createTestAttestation(options: TestAttestationOptions): Promise<TestAttestation> {
  const keys = (await webcrypto.subtle.generateKey(P256, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const point = Buffer.from(await webcrypto.subtle.exportKey('raw', keys.publicKey));
  const keyIdBytes = sha256(point);
  const credentialId = options.credentialId ?? keyIdBytes;
  const coseKey = cbor.encode(new Map<number, number | Buffer>([[1, 2], [3, -7], [-1, 1], [-2, point.subarray(1, 33)], [-3, point.subarray(33, 65)]]));
  const credentialIdLength = Buffer.alloc(2);
  credentialIdLength.writeUInt16BE(credentialId.length);
  const authData = Buffer.concat([
    sha256(Buffer.from(options.appId, 'utf8')),
    Buffer.from([options.flags ?? 0x40]),
    uint32(options.counter ?? 0),
    aaguidBytes(options.aaguid),
    credentialIdLength,
    credentialId,
    coseKey,
    options.trailing ?? Buffer.alloc(0),
  ]);
  const nonce = sha256(authData, options.clientDataHash);
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${keyIdBytes.toString('hex')}, OU=AAA Certification, O=Tollgate Tests, ST=California`,
    issuer: options.leafIssuer ?? options.authority.intermediate.subject,
    notBefore: options.leafNotBefore ?? new Date(options.at.getTime() - DAY),
    notAfter: options.leafNotAfter ?? new Date(options.at.getTime() + 2 * DAY),
    signingAlgorithm: ECDSA_SHA256,
    publicKey: keys.publicKey,
    signingKey: options.authority.intermediateKeys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation | x509.KeyUsageFlags.keyEncipherment | x509.KeyUsageFlags.dataEncipherment, true),
      new x509.Extension(APP_ATTEST_NONCE_OID, false, nonceExtensionValue(nonce)),
    ],
  });
  const intermediate = options.x5cIntermediate ?? options.authority.intermediate;
  const attestation = cbor.encode({
    fmt: options.fmt ?? 'apple-appattest',
    attStmt: { x5c: [Buffer.from(leaf.rawData), Buffer.from(intermediate.rawData)], receipt: Buffer.from('test receipt (PKCS#7 in real attestations)') },
    authData,
  });
  const privateKey = KeyObject.from(keys.privateKey);
  return {
    attestation,
    keyId: keyIdBytes.toString('base64'),
    authData,
    privateKey,
    publicKeyPem: KeyObject.from(keys.publicKey).export({ format: 'pem', type: 'spki' }).toString(),
  };
}

export interface TestAssertionOptions {
  readonly privateKey: KeyObject;
  readonly appId: string;
  readonly counter: number;
  readonly clientDataHash: Buffer;
  /** Bytes appended to the 37-byte authenticator data. */
  readonly trailing?: Buffer;
}

/** An assertion as `generateAssertion` returns it: signature over SHA-256(authenticatorData ‖ clientDataHash). */
export function createTestAssertion(options: TestAssertionOptions): Buffer {
  const authenticatorData = Buffer.concat([sha256(Buffer.from(options.appId, 'utf8')), Buffer.from([0x40]), uint32(options.counter), options.trailing ?? Buffer.alloc(0)]);
  const signature = sign('sha256', sha256(authenticatorData, options.clientDataHash), { key: options.privateKey, dsaEncoding: 'der' });
  return cbor.encode({ signature, authenticatorData });
}

/** Decodes CBOR with text-keyed maps as objects (tests read attestation and assertion fields with it). */
export function decodeCbor<T>(data: Buffer): T {
  return new Encoder({ mapsAsObjects: true }).decode(data) as T;
}

/** Re-encodes an attestation object after `change` edited its decoded form (for tampering tests). */
export function reencodeAttestation(attestation: Buffer, change: (object: { fmt: unknown; attStmt: { x5c: Buffer[]; receipt: Buffer }; authData: Buffer }) => void): Buffer {
  const object = decodeCbor<{ fmt: unknown; attStmt: { x5c: Buffer[]; receipt: Buffer }; authData: Buffer }>(attestation);
  const copy = { fmt: object.fmt, attStmt: { x5c: object.attStmt.x5c.map((entry) => Buffer.from(entry)), receipt: Buffer.from(object.attStmt.receipt) }, authData: Buffer.from(object.authData) };
  change(copy);
  return cbor.encode(copy);
}

/** Re-encodes an assertion after `change` edited its fields. */
export function reencodeAssertion(assertion: Buffer, change: (object: { signature: Buffer; authenticatorData: Buffer }) => void): Buffer {
  const object = decodeCbor<{ signature: Buffer; authenticatorData: Buffer }>(assertion);
  const copy = { signature: Buffer.from(object.signature), authenticatorData: Buffer.from(object.authenticatorData) };
  change(copy);
  return cbor.encode(copy);
}
