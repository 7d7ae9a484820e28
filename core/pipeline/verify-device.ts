import { createHash } from 'node:crypto';
import { inject, injectAll, injectable } from 'tsyringe';
import {
  ATTESTATION_VERIFIER,
  CLOCK,
  CONFIGURATION,
  DEVICE_KEYS,
  DEVICE_TOKENS,
  GATEWAY_DIRECTORY,
  GatewayError,
  attestationSecretKey,
  normalizeDeviceId,
  type AppSettings,
  type AttestationVerifier,
  type DeviceKeyStore,
  type GatewayDirectory,
  type PipelineStage,
  type ProxyContext,
} from '../contract';
import type { Configuration } from '../configuration/configuration';
import { expiredClaimsOf, type DeviceTokenClaims, type DeviceTokenService } from '../attestation/device-tokens';
import { readRequestBody } from './request-body';
import { clientAddress } from '../security/client-address';

/**
 * Monitor mode can take effect: the gateway allows it (`TOLLGATE_MONITOR_MODE` is not `off`) and, in production, the
 * app opted in with `allowMonitorInProduction`. (The app's `attestationMode` is the caller's check.)
 */
export function monitorModeEffective(settings: AppSettings, configuration: Pick<Configuration, 'production' | 'monitorMode'>): boolean {
  if (configuration.monitorMode === 'off') return false;
  return !configuration.production || settings.allowMonitorInProduction === true;
}

/** How far `Tollgate-Request-Time` may be from the gateway's clock in every-request mode. */
export const REQUEST_TIME_SKEW_MS = 5 * 60 * 1000;
/** At most this many recent proofs are remembered for the replay check (oldest forgotten first). */
const RECENT_PROOFS_LIMIT = 200_000;

/**
 * The request digest of protocol.md: SHA-256( METHOD "\n" path-with-query "\n" Tollgate-Request-Time "\n"
 * hex(SHA-256(body)) ). `pathWithQuery` is the path as the client sent it, from `/v1/proxy/`.
 */
export function requestDigest(method: string, pathWithQuery: string, requestTime: string, body: Buffer): Buffer {
  const bodyHash = createHash('sha256').update(body).digest('hex');
  return createHash('sha256').update(`${method.toUpperCase()}\n${pathWithQuery}\n${requestTime}\n${bodyHash}`, 'utf8').digest();
}

/**
 * Stage 2, `verifyDevice`: the `Tollgate-Device-Token` is a device token this gateway signed, for this app, unexpired,
 * of a device that is not revoked (its id in normal form, {@link normalizeDeviceId}); and, when the app's assertion
 * mode is `every-request`, the `Tollgate-Assertion` proves the device made this very request (method, path, time,
 * body). That mode is never skipped: a device whose method cannot prove requests (development tokens included) is
 * refused with `assertion_method_unsupported`, and a proof already seen is refused with `assertion_replayed`.
 * Provides `device`.
 */
@injectable()
export class VerifyDeviceStage implements PipelineStage {
  readonly name = 'verifyDevice' as const;

  constructor(
    @inject(DEVICE_TOKENS) private readonly tokens: DeviceTokenService,
    @inject(GATEWAY_DIRECTORY) private readonly directory: GatewayDirectory,
    @inject(CONFIGURATION) private readonly configuration: Configuration,
    @injectAll(ATTESTATION_VERIFIER) verifiers: AttestationVerifier[],
    @inject(DEVICE_KEYS) private readonly devices: DeviceKeyStore,
    @inject(CLOCK) private readonly clock: () => number,
  ) {
    this.verifiers = new Map(verifiers.map((verifier) => [verifier.method, verifier]));
  }

  private readonly verifiers: Map<string, AttestationVerifier>;
  /** Proofs accepted recently (digest of app, device and proof → when it may be forgotten): one use each. */
  private readonly recentProofs = new Map<string, number>();

  run(context: ProxyContext): void | Promise<void> {
    if (!this.monitored(context)) return this.verify(context);
    // Monitor mode (a rollout aid): a request whose device cannot prove itself goes through, counted as unverified.
    // A revoked device is still refused: revocation is the operator's explicit decision.
    try {
      const outcome = this.verify(context);
      return outcome instanceof Promise ? outcome.catch((error: unknown) => this.unverified(context, error)) : outcome;
    } catch (error) {
      return this.unverified(context, error);
    }
  }

  /** True when the app (for this provider) runs in `monitor` mode on a gateway that allows it. */
  private monitored(context: ProxyContext): boolean {
    const settings = context.get('app').settings;
    if (settings.attestationMode !== 'monitor') return false;
    return monitorModeEffective(settings, this.configuration) && (!settings.monitorProviders?.length || settings.monitorProviders.includes(context.provider.slug));
  }

  private unverified(context: ProxyContext, error: unknown): void {
    if (!(error instanceof GatewayError) || error.type !== 'attestationFailed' || error.reason === 'device_revoked') throw error;
    // A genuine token that has expired still names its device: a revoked device does not get back in with it.
    const expired = expiredClaimsOf(error);
    if (expired) {
      const app = context.get('app');
      if (expired.appId === app.id && (expired.issuedAt < app.devicesRevokedBefore || this.directory.isDeviceRevoked(app.id, normalizeDeviceId(expired.method, expired.deviceId)))) {
        throw new GatewayError('attestationFailed', 'This device has been revoked.', { reason: 'device_revoked' });
      }
    }
    // Behind a trusted proxy the socket's peer is the proxy: its bucket would be every unverified client's at once.
    const address = clientAddress(context.request, this.configuration.trustProxy);
    context.set('device', { deviceId: `unverified:${address}`, method: 'unverified', tokenId: '', issuedAt: 0, expiresAt: 0, verified: false });
  }

  private verify(context: ProxyContext): void | Promise<void> {
    const header = context.request.headers['tollgate-device-token'];
    if (typeof header !== 'string' || header.length === 0) {
      throw new GatewayError('attestationFailed', 'Missing Tollgate-Device-Token header: exchange an attestation at /v1/attest/{method} first.', {
        reason: 'device_token_missing',
      });
    }
    const claims = this.tokens.verify(header);
    if (claims instanceof Promise) return claims.then((verified) => this.admit(context, verified));
    return this.admit(context, claims);
  }

  private admit(context: ProxyContext, claims: DeviceTokenClaims): void | Promise<void> {
    const app = context.get('app');
    if (claims.appId !== app.id) {
      throw new GatewayError('attestationFailed', 'The device token belongs to another app.', { reason: 'device_token_wrong_app' });
    }
    if (claims.method === 'development' && this.configuration.production) {
      throw new GatewayError('attestationFailed', 'Development attestation is refused in production.', { reason: 'development_in_production' });
    }
    if (claims.issuedAt < app.devicesRevokedBefore || this.directory.isDeviceRevoked(app.id, normalizeDeviceId(claims.method, claims.deviceId))) {
      throw new GatewayError('attestationFailed', 'This device has been revoked.', { reason: 'device_revoked' });
    }
    context.set('device', {
      deviceId: claims.deviceId,
      method: claims.method,
      tokenId: claims.tokenId,
      issuedAt: claims.issuedAt,
      expiresAt: claims.expiresAt,
    });
    if (app.settings.assertionMode !== 'every-request') return;
    const verifier = this.verifiers.get(claims.method);
    if (!verifier?.verifyRequestAssertion) {
      throw new GatewayError(
        'attestationFailed',
        `This app requires a per-request proof (Tollgate-Assertion), which a device attested with "${claims.method}" cannot give: attest with App Attest, Android key attestation or Play Integrity.`,
        { reason: 'assertion_method_unsupported' },
      );
    }
    return this.checkAssertion(context, claims.deviceId, verifier);
  }

  /** Every-request mode: the device signed the request digest with its attested key; its counter moves forward. */
  private async checkAssertion(context: ProxyContext, deviceId: string, verifier: AttestationVerifier): Promise<void> {
    const { headers } = context.request;
    const assertion = headers['tollgate-assertion'];
    const time = headers['tollgate-request-time'];
    if (typeof assertion !== 'string' || assertion.length === 0 || assertion.length > 16_384) {
      throw new GatewayError('attestationFailed', 'This app requires a Tollgate-Assertion over each request.', { reason: 'assertion_required' });
    }
    if (typeof time !== 'string' || !/^\d{10,16}$/.test(time) || Math.abs(Number(time) - this.clock()) > REQUEST_TIME_SKEW_MS) {
      throw new GatewayError('attestationFailed', 'Tollgate-Request-Time is missing or more than 5 minutes from the gateway clock.', { reason: 'request_time_skew' });
    }
    const app = context.get('app');
    const proof = createHash('sha256').update(`${app.id}\u0000${deviceId}\u0000${assertion}`, 'utf8').digest('base64url');
    // Reserved before it is checked (synchronously, so two concurrent copies cannot both pass), kept while its request
    // time is within the skew window (a replay after that fails the time check), released when it is rejected. The
    // window is inclusive (a time exactly five minutes away passes): the proof is held until the first instant at which
    // its request time fails the check, one millisecond after the last one at which it passes.
    if (!this.reserve(proof, Number(time) + REQUEST_TIME_SKEW_MS + 1)) {
      throw new GatewayError('attestationFailed', 'This Tollgate-Assertion was already used: sign each request afresh.', { reason: 'assertion_replayed' });
    }
    try {
      const body = await readRequestBody(context, this.configuration.maxBodyBytes);
      const digest = requestDigest(context.request.method ?? 'GET', context.request.url ?? '', time, body);
      await verifier.verifyRequestAssertion!({
        app,
        deviceId,
        assertion: Buffer.from(assertion, 'base64url'),
        header: assertion,
        digest,
        devices: this.devices,
        readAttestationSecret: async (name) => (await this.directory.findSecret(app.id, attestationSecretKey(name)))?.value.reveal() ?? null,
      });
    } catch (error) {
      this.recentProofs.delete(proof);
      throw error;
    }
  }

  /** Records `proof` as used until `until`; false when it is already in use. Methods without a counter rely on this. */
  private reserve(proof: string, until: number): boolean {
    const now = this.clock();
    const held = this.recentProofs.get(proof);
    if (held !== undefined && held > now) return false;
    this.remember(proof, until);
    return true;
  }

  private remember(proof: string, until: number): void {
    if (this.recentProofs.size >= RECENT_PROOFS_LIMIT) {
      const now = this.clock();
      for (const [key, expiry] of this.recentProofs) if (expiry <= now) this.recentProofs.delete(key);
      if (this.recentProofs.size >= RECENT_PROOFS_LIMIT) this.recentProofs.delete(this.recentProofs.keys().next().value!);
    }
    this.recentProofs.set(proof, until);
  }
}
