/**
 * Tests only: a stand-in for Google's key attestation PKI. A test root → intermediate → leaf whose KeyDescription
 * extension (OID 1.3.6.1.4.1.11129.2.1.17) is built with the same ASN.1 schema the verifier parses, so that the success
 * path and each rejection can be produced on purpose. The leaf's private key is returned, as the device's Keystore
 * would hold it.
 */
import { createHash, webcrypto } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AttestationApplicationId, AttestationPackageInfo, AuthorizationList, KeyDescription, SecurityLevel, Version, id_ce_keyDescription } from '@peculiar/asn1-android';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const DAY = 86_400_000;

export interface TestKeyChain {
  /** base64 DER, leaf first, as the SDK sends it. */
  readonly chain: string[];
  readonly leafPrivateKey: webcrypto.CryptoKey;
}

export interface TestKeyAuthority {
  /** SHA-256 of the test root's SubjectPublicKeyInfo, hex: what the verifier is told to trust. */
  readonly rootSpkiSha256: string;
  /** The root's name and key in a certificate signed by another key (base64 DER): self-issued, not self-signed. */
  readonly rootNotSelfSigned: string;
  /**
   * A fresh Keystore key attested over `challenge`, as a device makes one per attestation. `securityLevel` sets both
   * levels; `keymasterSecurityLevel` overrides the keymaster/KeyMint one alone (a chain that mixes levels).
   */
  attest(options: TestAttestOptions): Promise<TestKeyChain>;
}

export interface TestAttestOptions {
  readonly challenge: Buffer;
  readonly packageName: string;
  readonly signatureDigestHex: string;
  readonly securityLevel?: SecurityLevel;
  readonly keymasterSecurityLevel?: SecurityLevel;
  /** The leaf's validity (default: the authority's, a day before `at` to 30 days after). */
  readonly leafValidity?: { readonly notBefore: Date; readonly notAfter: Date };
  /** The leaf's serial number, hex (default: the next one). */
  readonly serialNumber?: string;
  /** Leave out the KeyDescription extension, or put these bytes in it instead of a KeyDescription. */
  readonly keyDescription?: 'absent' | Buffer;
  /** Leave out `attestationApplicationId` (a key attested for no app). */
  readonly withoutApplicationId?: boolean;
  /** Put `attestationApplicationId` in the hardware-enforced list instead of the software-enforced one. */
  readonly applicationIdInHardwareList?: boolean;
}

export async function createTestKeyAuthority(at = new Date()): Promise<TestKeyAuthority> {
  const notBefore = new Date(at.getTime() - DAY);
  const notAfter = new Date(at.getTime() + 30 * DAY);
  const rootKeys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const intermediateKeys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=Test Key Attestation Root',
    notBefore,
    notAfter,
    keys: rootKeys,
    signingAlgorithm: ALGORITHM,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
  });
  const intermediate = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: 'CN=Test Key Attestation Intermediate',
    issuer: root.subject,
    notBefore,
    notAfter,
    publicKey: intermediateKeys.publicKey,
    signingKey: rootKeys.privateKey,
    signingAlgorithm: ALGORITHM,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true)],
  });
  const strangerKeys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const rootNotSelfSigned = await x509.X509CertificateGenerator.create({
    serialNumber: '01',
    subject: root.subject,
    issuer: root.subject,
    notBefore,
    notAfter,
    publicKey: rootKeys.publicKey,
    signingKey: strangerKeys.privateKey,
    signingAlgorithm: ALGORITHM,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
  });
  let serial = 2;
  return {
    rootSpkiSha256: createHash('sha256').update(Buffer.from(root.publicKey.rawData)).digest('hex'),
    rootNotSelfSigned: Buffer.from(rootNotSelfSigned.rawData).toString('base64'),
    async attest(options) {
      const leafKeys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
      const applicationId = new AttestationApplicationId({
        packageInfos: [new AttestationPackageInfo({ packageName: new OctetString(Buffer.from(options.packageName, 'utf8')), version: 1 })],
        signatureDigests: [new OctetString(Buffer.from(options.signatureDigestHex, 'hex'))],
      });
      const level = options.securityLevel ?? SecurityLevel.trustedEnvironment;
      const description = new KeyDescription({
        attestationVersion: Version.KM4,
        attestationSecurityLevel: level,
        keymasterVersion: 4,
        keymasterSecurityLevel: options.keymasterSecurityLevel ?? level,
        attestationChallenge: new OctetString(options.challenge),
        uniqueId: new OctetString(),
        softwareEnforced: new AuthorizationList(options.withoutApplicationId || options.applicationIdInHardwareList ? {} : { attestationApplicationId: new OctetString(AsnConvert.serialize(applicationId)) }),
        teeEnforced: new AuthorizationList(options.applicationIdInHardwareList ? { attestationApplicationId: new OctetString(AsnConvert.serialize(applicationId)) } : {}),
      });
      serial += 1;
      const extension = options.keyDescription === 'absent' ? [] : [new x509.Extension(id_ce_keyDescription, false, options.keyDescription ?? AsnConvert.serialize(description))];
      const leaf = await x509.X509CertificateGenerator.create({
        serialNumber: options.serialNumber ?? serial.toString(16).padStart(2, '0'),
        subject: 'CN=Android Keystore Key',
        issuer: intermediate.subject,
        notBefore: options.leafValidity?.notBefore ?? notBefore,
        notAfter: options.leafValidity?.notAfter ?? notAfter,
        publicKey: leafKeys.publicKey,
        signingKey: intermediateKeys.privateKey,
        signingAlgorithm: ALGORITHM,
        extensions: extension,
      });
      return { chain: [leaf, intermediate, root].map((certificate) => Buffer.from(certificate.rawData).toString('base64')), leafPrivateKey: leafKeys.privateKey };
    },
  };
}
