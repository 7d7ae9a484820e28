/**
 * `POST /v1/attest/android-play-integrity`: trades a Play Integrity verdict for a device token.
 *
 * Body: `{"challenge":"<from /v1/attest/challenge>","integrityToken":"…","deviceId":"<the SDK's installation id>"}`,
 * plus `"type":"standard"` for a standard request. The app passes the challenge as the classic request's `nonce`, or as
 * the standard request's `requestHash`.
 * - Classic requests are verified here: the JWE is decrypted with the app's `play-integrity-decryption-key` and the JWS
 *   verified with its `play-integrity-verification-key` (both from Play Console, stored as encrypted app secrets).
 * - Standard requests go to Google's `decodeIntegrityToken` with the app's `play-integrity-service-account` JSON.
 * Then: the nonce or request hash is the challenge, the package is the app's `androidPackage`, the signing certificate
 * its `androidCertSha256` (when set), the app is PLAY_RECOGNIZED, the device verdict meets the app's
 * `playIntegrityDeviceVerdict` (default MEETS_DEVICE_INTEGRITY), and the verdict is less than 5 minutes old.
 *
 * Play Integrity names no device key, so the device id is the installation id the SDK sends: revoking it stops that
 * installation's tokens, and per-device limits count per installation.
 */
import {
  GatewayError,
  type AttestationInput,
  type AttestationVerifier,
  type AttestedDevice,
  type TollgatePlugin,
} from '../../core/contract';
import { GoogleIntegrityDecoder, PlayIntegrityError, verifyClassicIntegrityToken, verifyStandardIntegrityToken, type IntegrityPolicy, type StandardIntegrityDecoder } from './verify';

const DEVICE_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export interface PlayIntegrityOptions {
  /** Google's API base URL (a fake one in tests). */
  readonly apiBaseUrl?: string;
  /** Google's OAuth token endpoint (a fake one in tests). */
  readonly tokenUrl?: string;
  readonly clock?: () => number;
}

export class PlayIntegrityVerifier implements AttestationVerifier {
  readonly method = 'android-play-integrity';
  /** One decoder per service-account key, so that each keeps its access token. */
  private readonly decoders = new Map<string, StandardIntegrityDecoder>();

  constructor(private readonly options: PlayIntegrityOptions = {}) {}

  async verify(input: AttestationInput): Promise<AttestedDevice> {
    const { challenge, integrityToken, deviceId, type } = input.body;
    if (typeof challenge !== 'string' || typeof integrityToken !== 'string' || integrityToken.length > 65_536 || typeof deviceId !== 'string' || !DEVICE_ID.test(deviceId) || (type !== undefined && type !== 'classic' && type !== 'standard')) {
      throw new GatewayError('invalidRequest', 'Send {"challenge", "integrityToken", "deviceId"} (and "type": "standard" for a standard request).', { reason: 'attestation_body_invalid' });
    }
    const packageName = input.app.settings.androidPackage;
    if (!packageName) throw new GatewayError('attestationFailed', 'This app has no Android package configured.', { reason: 'android_app_not_configured' });
    await input.useChallenge(challenge);
    const policy: IntegrityPolicy = {
      packageName,
      ...(input.app.settings.androidCertSha256 ? { certificateSha256Digests: [input.app.settings.androidCertSha256] } : {}),
      requiredDeviceVerdict: input.app.settings.playIntegrityDeviceVerdict,
      now: new Date((this.options.clock ?? Date.now)()),
    };
    try {
      if (type === 'standard') {
        const serviceAccount = await input.readAttestationSecret('play-integrity-service-account');
        if (!serviceAccount) throw new GatewayError('attestationFailed', 'This app has no Play Integrity service account configured.', { reason: 'play_integrity_not_configured' });
        await verifyStandardIntegrityToken({ token: integrityToken, decoder: this.decoderFor(serviceAccount), policy, requestHash: challenge });
      } else {
        const [decryptionKey, verificationKey] = await Promise.all([input.readAttestationSecret('play-integrity-decryption-key'), input.readAttestationSecret('play-integrity-verification-key')]);
        if (!decryptionKey || !verificationKey) throw new GatewayError('attestationFailed', 'This app has no Play Integrity keys configured.', { reason: 'play_integrity_not_configured' });
        await verifyClassicIntegrityToken({ token: integrityToken, decryptionKey, verificationKey, policy, nonce: challenge });
      }
    } catch (error) {
      if (error instanceof PlayIntegrityError) {
        const unavailable = error.reason === 'google_unavailable';
        throw new GatewayError(unavailable ? 'upstreamUnavailable' : 'attestationFailed', `Play Integrity rejected: ${error.message}.`, { reason: error.reason });
      }
      throw error;
    }
    return { deviceId: `pi:${deviceId}` };
  }

  private decoderFor(serviceAccountJson: string): StandardIntegrityDecoder {
    let decoder = this.decoders.get(serviceAccountJson);
    if (!decoder) {
      decoder = new GoogleIntegrityDecoder({
        serviceAccountJson,
        ...(this.options.apiBaseUrl ? { apiBaseUrl: this.options.apiBaseUrl } : {}),
        ...(this.options.tokenUrl ? { tokenUrl: this.options.tokenUrl } : {}),
        ...(this.options.clock ? { clock: this.options.clock } : {}),
      });
      this.decoders.set(serviceAccountJson, decoder);
    }
    return decoder;
  }
}

export const tollgatePlugin: TollgatePlugin = {
  name: 'attestation-android-play-integrity',
  contractVersion: 1,
  register(host) {
    host.registerAttestationVerifier(
      new PlayIntegrityVerifier({
        ...(host.settings.TOLLGATE_PLAY_INTEGRITY_API_URL ? { apiBaseUrl: host.settings.TOLLGATE_PLAY_INTEGRITY_API_URL } : {}),
        ...(host.settings.TOLLGATE_PLAY_INTEGRITY_TOKEN_URL ? { tokenUrl: host.settings.TOLLGATE_PLAY_INTEGRITY_TOKEN_URL } : {}),
      }),
    );
  },
};
