/**
 * `POST /v1/attest/challenge` and `POST /v1/attest/{method}` (protocol.md, "Addresses"): trade a platform attestation
 * for a device token. Each method is served by the attestation verifier registered for it.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type Response, type Router } from 'express';
import { GatewayError, attestationSecretKey, type AppEntry, type AttestationVerifier, type ChallengeStore, type DeviceKeyStore, type GatewayDirectory, type RateLimitStore } from '../contract';
import type { DeviceTokenService } from '../attestation/device-tokens';
import { checkAppToken } from '../pipeline/verify-token';
import { storeUnavailable, writeRateLimitHeaders } from '../pipeline/limit-rate';
import { ATTEST_MAX_BODY_BYTES, clientAddress, readJsonBody } from './request-guards';

/** Challenges live 5 minutes (issue "Device attestation"). */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000;
/** Attestation exchanges per client address per minute. */
export const ATTEST_LIMIT_PER_MINUTE = 60;

export interface AttestRouteDependencies {
  readonly directory: GatewayDirectory;
  readonly verifiers: readonly AttestationVerifier[];
  readonly challenges: ChallengeStore;
  readonly rateLimits: RateLimitStore;
  readonly deviceTokens: DeviceTokenService;
  readonly recordDevice: (input: { appId: string; deviceId: string; method: string; publicKey: string | null }) => Promise<{ revoked: boolean }>;
  readonly production: boolean;
  /** `TOLLGATE_TRUST_PROXY`: per-address limits use the address the trusted reverse proxy saw. */
  readonly trustProxy?: boolean;
  readonly clock: () => number;
  readonly devices: DeviceKeyStore;
  /**
   * Told of each attestation exchange once the app and the method are known: refused (an `attestationFailed` or
   * `invalidRequest` answer, a revoked device) or accepted. Not for refusals that are the gateway's or a dependency's
   * (unavailable, internal errors). The attestation.failure_rate alert counts them.
   */
  readonly onExchange?: (app: AppEntry, refused: boolean) => void;
  /** Answers a failed request (the gateway's handler for every route: error body, logging, refusal counts). */
  readonly onFailure: (error: unknown, request: IncomingMessage, response: ServerResponse) => void;
}


export function createAttestRouter(dependencies: AttestRouteDependencies): Router {
  const router = express.Router();
  const verifiers = new Map(dependencies.verifiers.map((verifier) => [verifier.method, verifier]));
  const { clock } = dependencies;

  /** Per-address limit, so that attestation endpoints cannot be used to grind challenges or tokens. */
  const limitByAddress = async (request: Request, response: Response) => {
    const address = clientAddress(request, dependencies.trustProxy ?? false);
    const rule = { policy: 'attest-ip', key: `ip\u0000${address}`, limit: ATTEST_LIMIT_PER_MINUTE, windowSeconds: 60 };
    let result: Awaited<ReturnType<RateLimitStore['consume']>>[number] | undefined;
    try {
      [result] = await dependencies.rateLimits.consume([rule], clock());
    } catch (error) {
      throw storeUnavailable(error);
    }
    writeRateLimitHeaders(response, [
      { policy: rule.policy, limit: rule.limit, windowSeconds: rule.windowSeconds, remaining: result!.remaining, resetSeconds: result!.resetSeconds },
    ]);
    if (!result!.allowed) {
      throw new GatewayError('rateLimited', `Too many attestation requests; retry after ${result!.retryAfterSeconds} s.`, {
        retryAfterSeconds: result!.retryAfterSeconds,
        reason: 'rate_limited_attest_ip',
      });
    }
  };

  // A failure is answered at once by the gateway's failure handler, as every other route's: the protocol's error body,
  // an internal error logged, a dependency refusal logged and counted in tollgate_dependency_refusals_total. Not through
  // Express's next(): that reaches the error handler a turn later, after a cut connection's access line was written.
  const handle = (work: (request: Request, response: Response) => Promise<void>) => (request: Request, response: Response) => {
    work(request, response).catch((error: unknown) => dependencies.onFailure(error, request, response));
  };

  router.post(
    '/challenge',
    handle(async (request, response) => {
      await limitByAddress(request, response);
      const app = await checkAppToken(dependencies.directory, request.headers['tollgate-app-token']);
      const challenge = randomBytes(32).toString('base64url');
      const expiresAt = clock() + CHALLENGE_TTL_MS;
      await dependencies.challenges.issue(app.id, challenge, expiresAt);
      response.status(200).json({ challenge, expiresAt: new Date(expiresAt).toISOString() });
    }),
  );

  // The body is read only after the per-address limit, the app token and the method were checked (cheap checks first),
  // and is capped at ATTEST_MAX_BODY_BYTES.
  router.post(
    '/:method',
    handle(async (request, response) => {
      await limitByAddress(request, response);
      const app = await checkAppToken(dependencies.directory, request.headers['tollgate-app-token']);
      const method = String(request.params.method);
      const verifier = verifiers.get(method);
      if (!verifier) {
        throw new GatewayError('invalidRequest', `Unknown attestation method "${method}" (known: ${[...verifiers.keys()].join(', ')}).`, { status: 404, reason: 'unknown_method' });
      }
      try {
        await exchange(app, method, verifier, request, response);
      } catch (error) {
        if (error instanceof GatewayError && (error.type === 'attestationFailed' || error.type === 'invalidRequest')) dependencies.onExchange?.(app, true);
        throw error;
      }
    }),
  );

  /** The exchange itself, once the app and the method are known. */
  const exchange = async (app: AppEntry, method: string, verifier: AttestationVerifier, request: Request, response: Response): Promise<void> => {
    const body: unknown = await readJsonBody(request, ATTEST_MAX_BODY_BYTES);
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new GatewayError('invalidRequest', 'The request body must be a JSON object.', { reason: 'body_not_object' });
    }
    const consumeChallenge = (challenge: string) => dependencies.challenges.consume(app.id, challenge, clock());
    const device = await verifier.verify({
      app,
      body: body as Record<string, unknown>,
      production: dependencies.production,
      consumeChallenge,
      useChallenge: async (challenge) => {
        if (!(await consumeChallenge(challenge))) {
          throw new GatewayError('attestationFailed', 'The challenge is unknown, expired, already used, or belongs to another app.', { reason: 'challenge_invalid' });
        }
      },
      devices: dependencies.devices,
      readAttestationSecret: async (name) => (await dependencies.directory.findSecret(app.id, attestationSecretKey(name)))?.value.reveal() ?? null,
    });
    const { revoked } = await dependencies.recordDevice({ appId: app.id, deviceId: device.deviceId, method, publicKey: device.publicKey ?? null });
    if (revoked) throw new GatewayError('attestationFailed', 'This device has been revoked.', { reason: 'device_revoked' });
    dependencies.onExchange?.(app, false);
    const issued = await dependencies.deviceTokens.issue({ appId: app.id, deviceId: device.deviceId, method, ttlSeconds: app.settings.deviceTokenTtlSeconds });
    response.status(200).json({
      deviceToken: issued.token,
      expiresAt: new Date(issued.expiresAt).toISOString(),
      expiresIn: app.settings.deviceTokenTtlSeconds,
      deviceId: device.deviceId,
      method,
    });
  };

  return router;
}
