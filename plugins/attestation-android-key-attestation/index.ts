/**
 * `POST /v1/attest/android-key-attestation`: trades an Android Keystore key attestation for a device token.
 *
 * Bodies:
 * - `{"challenge":"<from /v1/attest/challenge>","chain":["<base64 DER leaf>", …, "<base64 DER root>"]}`: the app generates
 *   its key with `setAttestationChallenge(base64url-decode(challenge))`. The app's `androidPackage` (and, when set,
 *   `androidCertSha256`) must be configured; the device id is the SHA-256 of the attested public key.
 * - `{"challenge":"…","keyId":"<device id>","signature":"<base64 DER ECDSA/RSA signature over the UTF-8 challenge>"}`:
 *   a refresh signed by a key attested earlier, so that the device keeps its id (and its limits) across refreshes.
 * - Per request, in the app's `every-request` assertion mode: `Tollgate-Assertion` is base64url (no padding) of the
 *   DER signature (SHA256withECDSA, or SHA256withRSA for an RSA key) by the attested key over the 32 bytes of the
 *   request digest (protocol.md), checked against the key stored at attestation.
 * Operators may configure a revocation status list with `TOLLGATE_ANDROID_REVOCATION_LIST` (a file in Google's JSON format).
 */
import { createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { GatewayError, requireAttestedKey, type AttestationInput, type AttestationVerifier, type AttestedDevice, type RequestAssertionInput, type TollgatePlugin } from '../../core/contract';
import { KeyAttestationError, revokedSerialsFrom, verifyAndroidKeyAttestation } from './verify';

export class AndroidKeyAttestationVerifier implements AttestationVerifier {
  readonly method = 'android-key-attestation';

  constructor(
    private readonly revocationListFile: string | undefined,
    /** Tests only: root keys to trust instead of Google's (production pins Google's). */
    private readonly testRootSpkiSha256?: readonly string[],
  ) {}

  async verify(input: AttestationInput): Promise<AttestedDevice> {
    const { challenge, chain } = input.body;
    if (typeof input.body.signature === 'string') return refreshWithSignature(input);
    if (typeof challenge !== 'string' || !Array.isArray(chain) || chain.length < 2 || chain.length > 10 || !chain.every((entry) => typeof entry === 'string' && entry.length < 16_384)) {
      throw new GatewayError('invalidRequest', 'Send {"challenge": "…", "chain": ["<base64 DER>", …]} with the leaf first.', { reason: 'attestation_body_invalid' });
    }
    const packageName = input.app.settings.androidPackage;
    if (!packageName) throw new GatewayError('attestationFailed', 'This app has no Android package configured.', { reason: 'android_app_not_configured' });
    await input.useChallenge(challenge);
    try {
      const result = await verifyAndroidKeyAttestation({
        chain: chain as string[],
        challenge: Buffer.from(challenge, 'base64url'),
        at: new Date(),
        packageName,
        ...(input.app.settings.androidCertSha256 ? { signingCertificateSha256: input.app.settings.androidCertSha256 } : {}),
        ...(this.testRootSpkiSha256 ? { trustedRootSpkiSha256: this.testRootSpkiSha256 } : {}),
        ...(this.revocationListFile ? { revokedSerials: revokedSerialsFrom(readFileSync(this.revocationListFile, 'utf8')) } : {}),
      });
      return { deviceId: result.keyId, publicKey: result.publicKeyPem };
    } catch (error) {
      if (error instanceof KeyAttestationError) throw new GatewayError('attestationFailed', `Key attestation rejected: ${error.message}.`, { reason: error.reason });
      throw error;
    }
  }

  /**
   * Every-request mode: the attested key signed the request digest (the 32 bytes are the message, hashed again by
   * SHA256withECDSA). The key has no counter; the pipeline refuses a proof it has already seen.
   */
  async verifyRequestAssertion(input: RequestAssertionInput): Promise<void> {
    const device = await requireAttestedKey(input.devices, input.app.id, input.deviceId);
    if (!signedBy(device.publicKey, input.digest, input.assertion)) {
      throw new GatewayError('attestationFailed', 'Key attestation rejected: the Tollgate-Assertion is not a signature of this request by the attested key.', { reason: 'signature_invalid' });
    }
  }
}

/** True when `signature` (DER) is a SHA-256 signature of `message` by the key `publicKeyPem`; false for any malformed input. */
function signedBy(publicKeyPem: string, message: Buffer, signature: Buffer): boolean {
  if (signature.length === 0 || signature.length > 1024) return false;
  try {
    return verify('sha256', message, createPublicKey(publicKeyPem), signature);
  } catch {
    return false;
  }
}

/** A refresh: the stored attested key signed this challenge. */
async function refreshWithSignature(input: AttestationInput): Promise<AttestedDevice> {
  const { challenge, keyId, signature } = input.body;
  if (typeof challenge !== 'string' || typeof keyId !== 'string' || !/^[0-9a-f]{64}$/.test(keyId) || typeof signature !== 'string' || signature.length > 2048) {
    throw new GatewayError('invalidRequest', 'Send {"challenge", "keyId", "signature"} to refresh with an attested key.', { reason: 'attestation_body_invalid' });
  }
  await input.useChallenge(challenge);
  const device = await requireAttestedKey(input.devices, input.app.id, keyId);
  if (!signedBy(device.publicKey, Buffer.from(challenge, 'utf8'), Buffer.from(signature, 'base64'))) throw new GatewayError('attestationFailed', 'Key attestation refresh rejected: the signature does not verify with the attested key.', { reason: 'signature_invalid' });
  return { deviceId: keyId };
}

export const tollgatePlugin: TollgatePlugin = {
  name: 'attestation-android-key-attestation',
  contractVersion: 1,
  register(host) {
    // Tests only: a stand-in root key (SHA-256 of its SubjectPublicKeyInfo, hex). Ignored in production.
    const testRoot = host.production ? undefined : host.settings.TOLLGATE_TEST_ANDROID_ROOT_SPKI_SHA256;
    host.registerAttestationVerifier(new AndroidKeyAttestationVerifier(host.settings.TOLLGATE_ANDROID_REVOCATION_LIST, testRoot ? testRoot.split(',') : undefined));
  },
};
