/**
 * Development attestation (operations.md, "Development attestation"): for simulators, emulators and tests. An app created
 * with `--allow-development-attestation` trades a development token (`dt_…`) and a device id for a device token marked
 * `m: "development"`. Production refuses it for every app, whatever the app's setting, and an app in `every-request`
 * assertion mode refuses development device tokens (they cannot prove a request).
 */
import { GatewayError, normalizeDeviceId, type AttestationInput, type AttestationVerifier, type AttestedDevice } from '../contract';

/** Looks up a development token by its hash; answers the owning app id, or null when unknown or revoked. */
export type DevelopmentTokenLookup = (token: string) => Promise<{ appId: string } | null>;

const DEVICE_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export class DevelopmentAttestationVerifier implements AttestationVerifier {
  readonly method = 'development';

  constructor(private readonly lookup: DevelopmentTokenLookup) {}

  async verify(input: AttestationInput): Promise<AttestedDevice> {
    if (input.production) {
      throw new GatewayError('attestationFailed', 'Development attestation is disabled in production.', { reason: 'development_in_production' });
    }
    if (!input.app.settings.allowDevelopmentAttestation) {
      throw new GatewayError('attestationFailed', 'This app does not allow development attestation.', { reason: 'development_not_allowed' });
    }
    const { developmentToken, deviceId } = input.body;
    if (typeof deviceId !== 'string' || !DEVICE_ID_PATTERN.test(deviceId)) {
      throw new GatewayError('invalidRequest', 'deviceId must be 1–128 characters of letters, digits, ".", "_", ":" or "-".', { reason: 'device_id_invalid' });
    }
    if (typeof developmentToken !== 'string') {
      throw new GatewayError('invalidRequest', 'developmentToken (dt_…) is required.', { reason: 'attestation_body_invalid' });
    }
    const owner = await this.lookup(developmentToken);
    if (!owner || owner.appId !== input.app.id) {
      throw new GatewayError('attestationFailed', 'The development token is unknown, revoked, or belongs to another app.', { reason: 'development_token_invalid' });
    }
    // Case-insensitive: `Dev-1` and `dev-1` are one device, so a revoked id cannot come back in another case.
    return { deviceId: normalizeDeviceId(this.method, deviceId) };
  }
}
