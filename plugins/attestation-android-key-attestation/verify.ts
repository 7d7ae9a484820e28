/**
 * Android hardware key attestation, verified offline
 * (https://developer.android.com/privacy-and-security/security-key-attestation):
 * 1. the certificate chain (leaf first) is valid at the verification instant, each certificate is signed by the next and
 *    names it as issuer, and the chain ends in a self-signed root whose public key is one of Google's hardware
 *    attestation root keys. Google's root certificates differ but share one RSA-4096 key, so the SubjectPublicKeyInfo is
 *    pinned, not a certificate;
 * 2. the leaf's KeyDescription extension (OID 1.3.6.1.4.1.11129.2.1.17) carries the expected challenge, and both the
 *    attestation and the keymaster/KeyMint security levels are at least TrustedEnvironment (a software attestation is
 *    refused);
 * 3. when expected, the package name and the signing-certificate digest appear in `attestationApplicationId`;
 * 4. no certificate of the chain is in the operator's revocation status list.
 *
 * The verification instant is a parameter: real chains carry short-lived certificates, so tests verify at a fixed past
 * instant. A test root may be passed only through `trustedRootSpkiSha256` (tests); production uses the pinned keys.
 */
import { createHash, webcrypto } from 'node:crypto';
import { AsnConvert } from '@peculiar/asn1-schema';
import { AttestationApplicationId, NonStandardKeyDescription, SecurityLevel, id_ce_keyDescription } from '@peculiar/asn1-android';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** SHA-256 of the SubjectPublicKeyInfo of Google's hardware attestation root key (RSA-4096), hex. */
export const GOOGLE_ATTESTATION_ROOT_SPKI_SHA256: readonly string[] = ['feb2ea7551ee316ed4bb443c8293b884dbfdea40b603ee3e4f4a897e4580fbae'];

export class KeyAttestationError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export interface KeyAttestationInput {
  /** The chain, leaf first: PEM text, or base64 DER certificates. */
  readonly chain: string | readonly string[];
  /** The challenge the app passed to `setAttestationChallenge`. */
  readonly challenge: Buffer;
  readonly at: Date;
  readonly packageName?: string;
  /** SHA-256 of the app's signing certificate, hex (colons allowed). */
  readonly signingCertificateSha256?: string;
  /** Serial numbers (lower-case hex) the operator's revocation status list marks revoked. */
  readonly revokedSerials?: ReadonlySet<string>;
  /** Tests only: root keys to trust instead of Google's. */
  readonly trustedRootSpkiSha256?: readonly string[];
}

export interface KeyAttestationResult {
  readonly valid: true;
  readonly attestationVersion: number;
  readonly securityLevel: 'TrustedEnvironment' | 'StrongBox';
  readonly packageNames: readonly string[];
  /** SHA-256 of the attested key's SubjectPublicKeyInfo, hex: a stable device key id. */
  readonly keyId: string;
  readonly publicKeyPem: string;
}

function parseChain(chain: string | readonly string[]): x509.X509Certificate[] {
  try {
    if (typeof chain === 'string') {
      const blocks = chain.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
      return blocks.map((block) => new x509.X509Certificate(block));
    }
    return chain.map((entry) => new x509.X509Certificate(Buffer.from(entry, 'base64')));
  } catch {
    throw new KeyAttestationError('malformed_chain', 'the certificate chain cannot be parsed');
  }
}

/** The schema yields OCTET STRINGs as OctetString objects or as plain ArrayBuffers, depending on the field. */
function bytesOf(value: unknown): Buffer {
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const inner = (value as { buffer?: ArrayBuffer }).buffer;
  return inner ? Buffer.from(inner) : Buffer.alloc(0);
}

const spkiDigest = (certificate: x509.X509Certificate) => createHash('sha256').update(Buffer.from(certificate.publicKey.rawData)).digest('hex');

/** Verifies an Android key attestation chain; throws `KeyAttestationError` with a reason. */
export async function verifyAndroidKeyAttestation(input: KeyAttestationInput): Promise<KeyAttestationResult> {
  const certificates = parseChain(input.chain);
  if (certificates.length < 2) throw new KeyAttestationError('malformed_chain', 'the chain must hold the leaf and at least its root');
  for (const [index, certificate] of certificates.entries()) {
    if (input.at < certificate.notBefore) throw new KeyAttestationError('certificate_not_yet_valid', `certificate ${index} is not valid yet at ${input.at.toISOString()}`);
    if (input.at > certificate.notAfter) throw new KeyAttestationError('certificate_expired', `certificate ${index} expired before ${input.at.toISOString()}`);
    if (input.revokedSerials?.has(certificate.serialNumber.toLowerCase())) throw new KeyAttestationError('certificate_revoked', `certificate ${index} is revoked`);
  }
  for (let index = 0; index < certificates.length - 1; index += 1) {
    const certificate = certificates[index]!;
    const issuer = certificates[index + 1]!;
    if (certificate.issuer !== issuer.subject) throw new KeyAttestationError('broken_chain', `certificate ${index} is not issued by certificate ${index + 1}`);
    if (!(await certificate.verify({ publicKey: issuer, signatureOnly: true }))) throw new KeyAttestationError('bad_signature', `certificate ${index} is not signed by certificate ${index + 1}`);
  }
  const root = certificates[certificates.length - 1]!;
  if (!(await root.verify({ publicKey: root, signatureOnly: true }))) throw new KeyAttestationError('bad_signature', 'the root is not self-signed');
  const trusted = input.trustedRootSpkiSha256 ?? GOOGLE_ATTESTATION_ROOT_SPKI_SHA256;
  if (!trusted.includes(spkiDigest(root))) throw new KeyAttestationError('untrusted_root', "the chain does not end in Google's hardware attestation root key");

  const leaf = certificates[0]!;
  const extension = leaf.getExtension(id_ce_keyDescription);
  if (!extension) throw new KeyAttestationError('no_key_description', 'the leaf carries no key attestation extension');
  let description: NonStandardKeyDescription;
  try {
    description = AsnConvert.parse(extension.value, NonStandardKeyDescription);
  } catch {
    throw new KeyAttestationError('malformed_key_description', 'the key attestation extension cannot be parsed');
  }
  if (!Buffer.from(description.attestationChallenge.buffer).equals(input.challenge)) {
    throw new KeyAttestationError('challenge_mismatch', 'the attestation challenge is not the expected one');
  }
  if (description.attestationSecurityLevel < SecurityLevel.trustedEnvironment || description.keymasterSecurityLevel < SecurityLevel.trustedEnvironment) {
    throw new KeyAttestationError('software_attestation', 'the key was attested in software, not in secure hardware');
  }
  const applicationIdBytes = description.softwareEnforced.findProperty('attestationApplicationId') ?? description.teeEnforced.findProperty('attestationApplicationId');
  let packageNames: string[] = [];
  let signatureDigests: string[] = [];
  if (applicationIdBytes) {
    const applicationId = AsnConvert.parse(applicationIdBytes.buffer, AttestationApplicationId);
    packageNames = applicationId.packageInfos.map((info) => bytesOf(info.packageName).toString('utf8'));
    signatureDigests = applicationId.signatureDigests.map((digest) => bytesOf(digest).toString('hex'));
  }
  if (input.packageName !== undefined && !packageNames.includes(input.packageName)) {
    throw new KeyAttestationError('wrong_package', `the attested app is not ${input.packageName}`);
  }
  if (input.signingCertificateSha256 !== undefined && !signatureDigests.includes(input.signingCertificateSha256.replace(/:/g, '').toLowerCase())) {
    throw new KeyAttestationError('wrong_signing_certificate', 'the attested app is not signed with the expected certificate');
  }
  return {
    valid: true,
    attestationVersion: Number(description.attestationVersion),
    securityLevel: description.attestationSecurityLevel === SecurityLevel.strongBox ? 'StrongBox' : 'TrustedEnvironment',
    packageNames,
    keyId: spkiDigest(leaf),
    publicKeyPem: leaf.publicKey.toString('pem'),
  };
}

/** Reads the operator's revocation status list (Google's JSON format: `{"entries":{"<serial hex>":{"status":"REVOKED"}}}`). */
export function revokedSerialsFrom(json: string): Set<string> {
  const parsed = JSON.parse(json) as { entries?: Record<string, { status?: string }> };
  return new Set(Object.entries(parsed.entries ?? {}).filter(([, entry]) => entry.status === 'REVOKED' || entry.status === 'SUSPENDED').map(([serial]) => serial.toLowerCase()));
}
