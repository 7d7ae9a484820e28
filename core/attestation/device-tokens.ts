/**
 * Device tokens (protocol.md, "Device tokens"): compact JWS signed with EdDSA (Ed25519) under a key kept, encrypted, in
 * the database. Claims: `app`, `dev`, `m`, `iat`, `exp`, `jti`, and `iatMs`: the issue instant in unix milliseconds
 * (`iat` is whole seconds), so that "revoke every device" at instant T refuses exactly the tokens issued at or before T
 * and none issued in the same second after it (docs/security.md, "Policies, proofs and identities"). A token without `iatMs`
 * (issued before the claim existed) counts as issued at `iat` × 1000, the start of its second, so the cut-off can only
 * refuse it too early, never let it through.
 *
 * Rotation without downtime: `rotate()` adds a key that signs from then on; older keys keep verifying the tokens they
 * signed until those expire. A process that meets an unknown `kid` reloads the key set (at most once a second; for a
 * token newer than its key set, 100 ms after the last reload at the soonest), so a key created by another node is
 * picked up without a restart.
 *
 * Each distinct token is verified once; the claims are then cached until the token expires, so that the per-request
 * cost is a map lookup and an expiry check.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify, type JWK, type KeyLike } from 'jose';
import { GatewayError, type MaybePromise } from '../contract';
import type { SecretCipher } from '../storage/encryption';
import { SigningKeyRepository } from '../storage/repositories';
import { randomBase62 } from '../security/tokens';

export const DEVICE_TOKEN_ALGORITHM = 'EdDSA';
export const DEVICE_TOKEN_TYPE = 'tollgate-device+jwt';
const CACHE_LIMIT = 100_000;
const RELOAD_INTERVAL_MS = 1000;
/** The shortest time between two reloads of the key set (for a token newer than the last one). */
const MIN_RELOAD_GAP_MS = 100;

/** Verified claims of a device token (times in unix ms). */
export interface DeviceTokenClaims {
  readonly appId: string;
  readonly deviceId: string;
  readonly method: string;
  readonly tokenId: string;
  readonly issuedAt: number;
  readonly expiresAt: number;
}

interface LoadedKey {
  readonly kid: string;
  readonly publicKey: KeyLike | Uint8Array;
  readonly privateKey: KeyLike | Uint8Array;
  readonly createdAt: number;
  readonly retiredAt: number | null;
}

function signingKeyAssociatedData(kid: string): string {
  return `signing-key\u0000${kid}`;
}

/**
 * The issue instant in milliseconds: `iatMs` when present (it must fall inside the second `iat` names), else the start
 * of the `iat` second.
 */
function issuedAtMs(payload: Record<string, unknown>): number {
  const seconds = Number(payload.iat);
  if (payload.iatMs === undefined) return seconds * 1000;
  const millis = payload.iatMs;
  if (typeof millis !== 'number' || !Number.isSafeInteger(millis) || Math.floor(millis / 1000) !== seconds) throw rejected('device_token_invalid', 'The device token is invalid.');
  return millis;
}

function rejected(reason: string, message: string): GatewayError {
  return new GatewayError('attestationFailed', message, { reason });
}

const EXPIRED_CLAIMS = Symbol('expiredClaims');

/** `device_token_expired` for a token whose signature verified: its claims ride along (never sent to the client). */
function expiredToken(claims: DeviceTokenClaims | undefined): GatewayError {
  const error = rejected('device_token_expired', 'The device token has expired: exchange a new attestation.');
  if (claims) Object.defineProperty(error, EXPIRED_CLAIMS, { value: claims, enumerable: false });
  return error;
}

/**
 * The claims of an expired token whose signature this gateway verified, or undefined: in monitor mode a revoked device
 * presenting its old token is still recognised (core/pipeline/verify-device.ts).
 */
export function expiredClaimsOf(error: unknown): DeviceTokenClaims | undefined {
  return error !== null && typeof error === 'object' ? ((error as Record<symbol, unknown>)[EXPIRED_CLAIMS] as DeviceTokenClaims | undefined) : undefined;
}

/** The claims of a verified payload (undefined when there is none). */
function claimsOf(payload: Record<string, unknown> | undefined): DeviceTokenClaims | undefined {
  if (!payload) return undefined;
  return Object.freeze({
    appId: String(payload.app),
    deviceId: String(payload.dev),
    method: String(payload.m),
    tokenId: String(payload.jti),
    issuedAt: issuedAtMs(payload),
    expiresAt: Number(payload.exp) * 1000,
  });
}

export class DeviceTokenService {
  private keys = new Map<string, LoadedKey>();
  private current: LoadedKey | undefined;
  private lastReload = 0;
  private verified = new Map<string, DeviceTokenClaims>();

  constructor(
    private readonly database: Knex,
    private readonly cipher: SecretCipher,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Loads the signing keys, creating the first one if there is none. */
  async initialize(): Promise<void> {
    await this.reload();
    if (!this.current) await this.rotate();
  }

  /** Creates a new signing key; it signs every token from now on. Returns its `kid`. */
  async rotate(): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(DEVICE_TOKEN_ALGORITHM, { crv: 'Ed25519', extractable: true });
    const kid = `dk_${randomBase62(12)}`;
    const privateJwk = await exportJWK(privateKey);
    const publicJwk = await exportJWK(publicKey);
    const now = this.clock();
    const repository = new SigningKeyRepository(this.database);
    await repository.insert({
      kid,
      algorithm: DEVICE_TOKEN_ALGORITHM,
      sealedPrivateKey: this.cipher.seal(JSON.stringify(privateJwk), signingKeyAssociatedData(kid)),
      publicJwk: JSON.stringify(publicJwk),
      createdAt: now,
      retiredAt: null,
    });
    for (const key of this.keys.values()) if (key.retiredAt === null) await repository.retire(key.kid, now);
    await this.reload();
    return kid;
  }

  /** Issues a token for an attested device. */
  async issue(input: { appId: string; deviceId: string; method: string; ttlSeconds: number }): Promise<{ token: string; expiresAt: number; tokenId: string }> {
    if (!this.current) await this.initialize();
    const key = this.current!;
    const issuedAtMs = this.clock();
    const issuedAt = Math.floor(issuedAtMs / 1000);
    const expiresAt = issuedAt + input.ttlSeconds;
    const tokenId = randomUUID();
    const token = await new SignJWT({ app: input.appId, dev: input.deviceId, m: input.method, iatMs: issuedAtMs })
      .setProtectedHeader({ alg: DEVICE_TOKEN_ALGORITHM, kid: key.kid, typ: DEVICE_TOKEN_TYPE })
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .setJti(tokenId)
      .sign(key.privateKey);
    return { token, expiresAt: expiresAt * 1000, tokenId };
  }

  /**
   * Verifies a device token: signature, algorithm, type and expiry. Answers synchronously when the token was verified
   * before. Binding to the app and revocation are the caller's checks (they change while a token lives).
   */
  verify(token: string): MaybePromise<DeviceTokenClaims> {
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.expiresAt <= this.clock()) {
        this.verified.delete(token);
        throw expiredToken(cached);
      }
      return cached;
    }
    return this.verifySignature(token);
  }

  private async verifySignature(token: string): Promise<DeviceTokenClaims> {
    if (token.length > 4096 || token.split('.').length !== 3) throw rejected('device_token_invalid', 'The device token is malformed.');
    let kid: string | undefined;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      throw rejected('device_token_invalid', 'The device token is malformed.');
    }
    if (!kid) throw rejected('device_token_invalid', 'The device token is malformed.');
    let key = this.keys.get(kid);
    // Requests that meet the same new kid at once share one reload: one arriving while it runs waits for it rather than
    // being refused by the reload throttle (nodes booting together; a burst right after another node's first token).
    const reload = key ? undefined : (this.reloading ?? this.reloadFor(token));
    if (reload) {
      await reload;
      key = this.keys.get(kid);
    }
    if (!key) throw rejected('device_token_invalid', 'The device token was not issued by this gateway.');
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, key.publicKey, {
        algorithms: [DEVICE_TOKEN_ALGORITHM],
        typ: DEVICE_TOKEN_TYPE,
        currentDate: new Date(this.clock()),
        requiredClaims: ['app', 'dev', 'm', 'iat', 'exp', 'jti'],
      }));
    } catch (error) {
      const code = (error as { code?: string }).code;
      // jose checks the signature before the claims: an expired token's payload is genuine.
      if (code === 'ERR_JWT_EXPIRED') throw expiredToken(claimsOf((error as { payload?: Record<string, unknown> }).payload));
      throw rejected('device_token_invalid', 'The device token is invalid.');
    }
    const claims = claimsOf(payload)!;
    if (key.retiredAt !== null && claims.issuedAt > key.retiredAt) {
      throw rejected('device_token_invalid', 'The device token is invalid.');
    }
    if (this.verified.size >= CACHE_LIMIT) this.evictHalf();
    this.verified.set(token, claims);
    return claims;
  }

  /**
   * An unknown `kid` may be a key another node created since our last reload (nodes booting together each create one).
   * Reloads at once when the last reload is over a second old; else only for a token that claims to be newer than our
   * key set, and then no sooner than 100 ms after the last reload (waiting for that moment rather than refusing: a
   * peer's token met within 100 ms of our reload is genuine), so a fresh key is found while a flood of forged kids
   * costs the database at most ten reads a second. Undefined: no reload, the token is refused.
   */
  private reloadFor(token: string): Promise<void> | undefined {
    const sinceReload = this.clock() - this.lastReload;
    if (sinceReload > RELOAD_INTERVAL_MS) return this.reloadShared(0);
    try {
      const issuedAt = Number(decodeJwt(token).iat) * 1000;
      if (!(Number.isFinite(issuedAt) && issuedAt >= this.lastReload - RELOAD_INTERVAL_MS)) return undefined;
    } catch {
      return undefined;
    }
    return this.reloadShared(Math.max(0, MIN_RELOAD_GAP_MS - sinceReload));
  }

  private evictHalf(): void {
    let toDrop = Math.floor(this.verified.size / 2);
    for (const token of this.verified.keys()) {
      if (toDrop-- <= 0) break;
      this.verified.delete(token);
    }
  }

  private reloading: Promise<void> | null = null;

  /** One reload at a time (after `delayMs`); concurrent callers share it. */
  private reloadShared(delayMs: number): Promise<void> {
    const start = delayMs > 0 ? new Promise<void>((resolve) => setTimeout(resolve, delayMs)) : Promise.resolve();
    const flight = start.then(() => this.reload()).finally(() => {
      if (this.reloading === flight) this.reloading = null;
    });
    this.reloading = flight;
    return flight;
  }

  private async reload(): Promise<void> {
    this.lastReload = this.clock();
    const rows = await new SigningKeyRepository(this.database).list();
    const keys = new Map<string, LoadedKey>();
    let current: LoadedKey | undefined;
    for (const row of rows) {
      const privateJwk = JSON.parse(this.cipher.open(row.sealedPrivateKey, signingKeyAssociatedData(row.kid))) as JWK;
      const loaded: LoadedKey = {
        kid: row.kid,
        privateKey: await importJWK(privateJwk, row.algorithm),
        publicKey: await importJWK(JSON.parse(row.publicJwk) as JWK, row.algorithm),
        createdAt: row.createdAt,
        retiredAt: row.retiredAt,
      };
      keys.set(row.kid, loaded);
      if (row.retiredAt === null && (!current || row.createdAt >= current.createdAt)) current = loaded;
    }
    this.keys = keys;
    this.current = current;
  }
}
