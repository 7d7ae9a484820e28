import { inject, injectable } from 'tsyringe';
import {
  CONFIGURATION,
  DEVICE_TOKENS,
  GATEWAY_DIRECTORY,
  GatewayError,
  type GatewayDirectory,
  type PipelineStage,
  type ProxyContext,
} from '../contract';
import type { Configuration } from '../configuration/configuration';
import type { DeviceTokenClaims, DeviceTokenService } from '../attestation/device-tokens';

/**
 * Stage 2, `verifyDevice`: the `Tollgate-Device-Token` is a device token this gateway signed, for this app, unexpired,
 * of a device that is not revoked. Provides `device`.
 */
@injectable()
export class VerifyDeviceStage implements PipelineStage {
  readonly name = 'verifyDevice' as const;

  constructor(
    @inject(DEVICE_TOKENS) private readonly tokens: DeviceTokenService,
    @inject(GATEWAY_DIRECTORY) private readonly directory: GatewayDirectory,
    @inject(CONFIGURATION) private readonly configuration: Configuration,
  ) {}

  run(context: ProxyContext): void | Promise<void> {
    const header = context.request.headers['tollgate-device-token'];
    if (typeof header !== 'string' || header.length === 0) {
      throw new GatewayError('attestationFailed', 'Missing Tollgate-Device-Token header: exchange an attestation at /v1/attest/{method} first.', {
        reason: 'device_token_missing',
      });
    }
    const claims = this.tokens.verify(header);
    if (claims instanceof Promise) return claims.then((verified) => this.admit(context, verified));
    this.admit(context, claims);
  }

  private admit(context: ProxyContext, claims: DeviceTokenClaims): void {
    const app = context.get('app');
    if (claims.appId !== app.id) {
      throw new GatewayError('attestationFailed', 'The device token belongs to another app.', { reason: 'device_token_wrong_app' });
    }
    if (claims.method === 'development' && this.configuration.production) {
      throw new GatewayError('attestationFailed', 'Development attestation is refused in production.', { reason: 'development_in_production' });
    }
    if (claims.issuedAt < app.devicesRevokedBefore || this.directory.isDeviceRevoked(app.id, claims.deviceId)) {
      throw new GatewayError('attestationFailed', 'This device has been revoked.', { reason: 'device_revoked' });
    }
    context.set('device', {
      deviceId: claims.deviceId,
      method: claims.method,
      tokenId: claims.tokenId,
      issuedAt: claims.issuedAt,
      expiresAt: claims.expiresAt,
    });
  }
}
