/**
 * `POST /v1/attest/apple-app-attest`: trades an Apple App Attest attestation (first time) or assertion (refresh) for a
 * device token, and checks per-request assertions in the app's `every-request` assertion mode.
 *
 * Bodies (the challenge comes from `POST /v1/attest/challenge`; the app passes SHA-256 of its UTF-8 bytes as the
 * `clientDataHash`):
 * - `{"keyId":"<base64>","attestation":"<base64 CBOR>","challenge":"…"}` from `DCAppAttestService.attestKey`;
 * - `{"keyId":"<base64>","assertion":"<base64 CBOR>","challenge":"…"}` from `generateAssertion`, with a key attested
 *   earlier: the stored counter must strictly increase.
 *
 * The device id is the key id. The app's `appleAppId` (TEAMID.BUNDLE) must be set; Xcode's development environment is
 * accepted only with the app's `allowAppAttestDevelopment` and never in production.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  GatewayError,
  type AppIdentity,
  type AttestationInput,
  type AttestationVerifier,
  type AttestedDevice,
  requireAttestedKey,
  type DeviceKeyStore,
  type RequestAssertionInput,
  type TollgatePlugin,
} from '../../core/contract';
import { AppAttestError, verifyAppAttestAssertion, verifyAppAttestAttestation } from './verify';

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

function rejected(error: unknown): never {
  if (error instanceof AppAttestError) throw new GatewayError('attestationFailed', `App Attest rejected: ${error.message}.`, { reason: error.reason });
  throw error;
}

function appIdOf(app: AppIdentity): string {
  const appId = app.settings.appleAppId;
  if (!appId) throw new GatewayError('attestationFailed', 'This app has no Apple app id (TEAMID.BUNDLE) configured.', { reason: 'apple_app_not_configured' });
  return appId;
}

/** The key id in standard base64 (SDKs may send base64url). */
function normalizeKeyId(keyId: string): string {
  return Buffer.from(keyId, 'base64').toString('base64');
}

export class AppleAppAttestVerifier implements AttestationVerifier {
  readonly method = 'apple-app-attest';

  constructor(
    /** Tests only: roots to trust instead of Apple's (production pins Apple's root). */
    private readonly trustedRoots?: readonly string[],
    private readonly clock: () => number = Date.now,
  ) {}

  async verify(input: AttestationInput): Promise<AttestedDevice> {
    const { keyId, attestation, assertion, challenge } = input.body;
    const proof = attestation ?? assertion;
    if (typeof keyId !== 'string' || !BASE64.test(keyId) || keyId.length > 100 || typeof challenge !== 'string' || typeof proof !== 'string' || !BASE64.test(proof) || proof.length > 65_536 || (attestation !== undefined && assertion !== undefined)) {
      throw new GatewayError('invalidRequest', 'Send {"keyId", "challenge"} with either "attestation" (first time) or "assertion" (refresh), base64.', { reason: 'attestation_body_invalid' });
    }
    const appId = appIdOf(input.app);
    await input.useChallenge(challenge);
    const clientDataHash = createHash('sha256').update(challenge, 'utf8').digest();
    const deviceId = normalizeKeyId(keyId);
    if (typeof attestation === 'string') {
      const result = await verifyAppAttestAttestation({
        attestation: Buffer.from(attestation, 'base64'),
        clientDataHash,
        keyId: deviceId,
        appId,
        allowDevelopment: input.app.settings.allowAppAttestDevelopment && !input.production,
        at: new Date(this.clock()),
        ...(this.trustedRoots ? { trustedRoots: this.trustedRoots } : {}),
      }).catch(rejected);
      return { deviceId, publicKey: result.publicKeyPem };
    }
    await this.checkAssertion(input.app, deviceId, Buffer.from(assertion as string, 'base64'), clientDataHash, input.devices);
    return { deviceId };
  }

  async verifyRequestAssertion(input: RequestAssertionInput): Promise<void> {
    await this.checkAssertion(input.app, input.deviceId, input.assertion, input.digest, input.devices);
  }

  /** An assertion by a stored key: valid signature, this app, counter strictly above the stored one (advanced atomically). */
  private async checkAssertion(app: AppIdentity, deviceId: string, assertion: Buffer, clientDataHash: Buffer, devices: DeviceKeyStore): Promise<void> {
    const appId = appIdOf(app);
    const device = await requireAttestedKey(devices, app.id, deviceId);
    let counter: number;
    try {
      counter = verifyAppAttestAssertion({ assertion, clientDataHash, publicKeyPem: device.publicKey, appId, previousCounter: device.counter }).counter;
    } catch (error) {
      rejected(error);
    }
    if (!(await devices.advanceCounter(app.id, deviceId, device.counter, counter))) {
      throw new GatewayError('attestationFailed', 'App Attest rejected: the assertion counter did not increase (a replay).', { reason: 'counter_not_increased' });
    }
  }
}

export const tollgatePlugin: TollgatePlugin = {
  name: 'attestation-apple-app-attest',
  contractVersion: 1,
  register(host) {
    // Tests only: a stand-in root (PEM file). Ignored in production, which always pins Apple's root.
    const testRoot = host.production ? undefined : host.settings.TOLLGATE_TEST_APPLE_ROOT_FILE;
    host.registerAttestationVerifier(new AppleAppAttestVerifier(testRoot ? [readFileSync(testRoot, 'utf8')] : undefined));
  },
};
