/**
 * `POST /v1/attest/android-key-attestation`: trades an Android Keystore key attestation for a device token.
 *
 * Body: `{"challenge":"<from /v1/attest/challenge>","chain":["<base64 DER leaf>", …, "<base64 DER root>"]}`. The app
 * generates its key with `setAttestationChallenge(base64url-decode(challenge))`. The app's `androidPackage` (and, when set,
 * `androidCertSha256`) must be configured; the device id is the SHA-256 of the attested public key.
 * Operators may configure a revocation status list with `TOLLGATE_ANDROID_REVOCATION_LIST` (a file in Google's JSON format).
 */
import { readFileSync } from 'node:fs';
import { GatewayError, type AttestationInput, type AttestationVerifier, type AttestedDevice, type TollgatePlugin } from '../../core/contract';
import { KeyAttestationError, revokedSerialsFrom, verifyAndroidKeyAttestation } from './verify';

export class AndroidKeyAttestationVerifier implements AttestationVerifier {
  readonly method = 'android-key-attestation';

  constructor(private readonly revocationListFile: string | undefined) {}

  async verify(input: AttestationInput): Promise<AttestedDevice> {
    const { challenge, chain } = input.body;
    if (typeof challenge !== 'string' || !Array.isArray(chain) || chain.length < 2 || chain.length > 10 || !chain.every((entry) => typeof entry === 'string' && entry.length < 16_384)) {
      throw new GatewayError('invalidRequest', 'Send {"challenge": "…", "chain": ["<base64 DER>", …]} with the leaf first.');
    }
    const packageName = input.app.settings.androidPackage;
    if (!packageName) throw new GatewayError('attestationFailed', 'This app has no Android package configured.', { reason: 'android_app_not_configured' });
    if (!(await input.consumeChallenge(challenge))) {
      throw new GatewayError('attestationFailed', 'The challenge is unknown, expired, already used, or belongs to another app.', { reason: 'challenge_invalid' });
    }
    try {
      const result = await verifyAndroidKeyAttestation({
        chain: chain as string[],
        challenge: Buffer.from(challenge, 'base64url'),
        at: new Date(),
        packageName,
        ...(input.app.settings.androidCertSha256 ? { signingCertificateSha256: input.app.settings.androidCertSha256 } : {}),
        ...(this.revocationListFile ? { revokedSerials: revokedSerialsFrom(readFileSync(this.revocationListFile, 'utf8')) } : {}),
      });
      return { deviceId: result.keyId, publicKey: result.publicKeyPem };
    } catch (error) {
      if (error instanceof KeyAttestationError) throw new GatewayError('attestationFailed', `Key attestation rejected: ${error.message}.`, { reason: error.reason });
      throw error;
    }
  }
}

export const tollgatePlugin: TollgatePlugin = {
  name: 'attestation-android-key-attestation',
  contractVersion: 1,
  register(host) {
    host.registerAttestationVerifier(new AndroidKeyAttestationVerifier(host.settings.TOLLGATE_ANDROID_REVOCATION_LIST));
  },
};
