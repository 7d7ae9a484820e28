/**
 * `POST /v1/attest/android-play-integrity`: trades a Play Integrity verdict for a device token.
 *
 * Body: `{"challenge":"<from /v1/attest/challenge>","integrityToken":"…","deviceId":"<the SDK's installation id>"}`,
 * plus `"type":"standard"` for a standard request. The request binds the challenge AND the installation id: the app
 * passes base64url-nopad(SHA-256(UTF-8(challenge + "\n" + deviceId))) as the standard request's `requestHash` or the
 * classic request's `nonce` ({@link exchangeBinding}), and the gateway recomputes it from the body, so the device id
 * the token names is one the verdict proves.
 * - Classic requests are verified here: the JWE is decrypted with the app's `play-integrity-decryption-key` and the JWS
 *   verified with its `play-integrity-verification-key` (both from Play Console, stored as encrypted app secrets).
 * - Standard requests go to Google's `decodeIntegrityToken` with the app's `play-integrity-service-account` JSON.
 * Then: the nonce or request hash is the challenge, the package is the app's `androidPackage`, the signing certificate
 * its `androidCertSha256` (when set), the app is PLAY_RECOGNIZED, the device verdict meets the app's
 * `playIntegrityDeviceVerdict` (default MEETS_DEVICE_INTEGRITY), and the verdict is less than 5 minutes old.
 *
 * Play Integrity names no device key, so the device id is `pi:` + the installation id the SDK sent (lower-cased, see
 * `normalizeDeviceId`), bound to the verdict as above: revoking it stops that installation's tokens, and per-device
 * limits count per installation.
 *
 * Per request, in the app's `every-request` assertion mode: `Tollgate-Assertion` is, verbatim, the token of a STANDARD
 * request whose `requestHash` is base64url-nopad(request digest of protocol.md), decoded through Google with the app's
 * service account and checked against the same policy as an exchange.
 */
import { createHash } from 'node:crypto';
import {
  GatewayError,
  normalizeDeviceId,
  type AppIdentity,
  type AttestationInput,
  type AttestationVerifier,
  type AttestedDevice,
  type RequestAssertionInput,
  type TollgatePlugin,
} from '../../core/contract';
import { GoogleIntegrityDecoder, PlayIntegrityError, verifyClassicIntegrityToken, verifyStandardIntegrityToken, type IntegrityPolicy, type StandardIntegrityDecoder } from './verify';

const DEVICE_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * What the app passes as the standard `requestHash` or the classic `nonce` of an exchange:
 * base64url-nopad(SHA-256(UTF-8(challenge + "\n" + deviceId))), binding the one-time challenge and the installation id.
 */
export function exchangeBinding(challenge: string, deviceId: string): string {
  return createHash('sha256').update(`${challenge}\n${deviceId}`, 'utf8').digest('base64url');
}

/** Play Integrity failures become gateway errors: Google unreachable is the upstream's fault, anything else the device's. */
function rejected(error: unknown): never {
  if (error instanceof PlayIntegrityError) {
    const unavailable = error.reason === 'google_unavailable';
    throw new GatewayError(unavailable ? 'upstreamUnavailable' : 'attestationFailed', `Play Integrity rejected: ${error.message}.`, { reason: error.reason });
  }
  throw error;
}

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
    const policy = this.policyFor(input.app);
    await input.useChallenge(challenge);
    const binding = exchangeBinding(challenge, deviceId);
    try {
      if (type === 'standard') {
        await verifyStandardIntegrityToken({ token: integrityToken, decoder: await this.standardDecoder(input.readAttestationSecret), policy, requestHash: binding });
      } else {
        const [decryptionKey, verificationKey] = await Promise.all([input.readAttestationSecret('play-integrity-decryption-key'), input.readAttestationSecret('play-integrity-verification-key')]);
        if (!decryptionKey || !verificationKey) throw new GatewayError('attestationFailed', 'This app has no Play Integrity keys configured.', { reason: 'play_integrity_not_configured' });
        await verifyClassicIntegrityToken({ token: integrityToken, decryptionKey, verificationKey, policy, nonce: binding });
      }
    } catch (error) {
      rejected(error);
    }
    return { deviceId: normalizeDeviceId(this.method, `pi:${deviceId}`) };
  }

  /**
   * Every-request mode: the header is the token of a standard request whose requestHash is base64url-nopad(digest).
   * Google decodes it; the verdict must meet the app's policy like an exchange's.
   */
  async verifyRequestAssertion(input: RequestAssertionInput): Promise<void> {
    const policy = this.policyFor(input.app);
    try {
      await verifyStandardIntegrityToken({ token: input.header, decoder: await this.standardDecoder(input.readAttestationSecret), policy, requestHash: input.digest.toString('base64url') });
    } catch (error) {
      rejected(error);
    }
  }

  /** The app's verdict policy, now: package, signing certificate, device verdict, freshness. */
  private policyFor(app: AppIdentity): IntegrityPolicy {
    const packageName = app.settings.androidPackage;
    if (!packageName) throw new GatewayError('attestationFailed', 'This app has no Android package configured.', { reason: 'android_app_not_configured' });
    return {
      packageName,
      ...(app.settings.androidCertSha256 ? { certificateSha256Digests: [app.settings.androidCertSha256] } : {}),
      requiredDeviceVerdict: app.settings.playIntegrityDeviceVerdict,
      now: new Date((this.options.clock ?? Date.now)()),
    };
  }

  /** The decoder for the app's service account; `play_integrity_not_configured` when the app has none. */
  private async standardDecoder(read: (name: string) => Promise<string | null>): Promise<StandardIntegrityDecoder> {
    const serviceAccount = await read('play-integrity-service-account');
    if (!serviceAccount) throw new GatewayError('attestationFailed', 'This app has no Play Integrity service account configured.', { reason: 'play_integrity_not_configured' });
    return this.decoderFor(serviceAccount);
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
