/**
 * Read access the pipeline needs on its hot path. Implementations cache in memory and invalidate on change, so that a
 * proxied request costs no database round trip once warm.
 */
import type { ResolvedSecret } from './manifest';
import type { AppIdentity } from './records';

/** An app as `verifyToken` sees it. */
export interface AppEntry extends AppIdentity {
  readonly tokenHash: string;
  /**
   * The token replaced by the last rotation and when its grace period ends (unix ms): a request with that token is
   * admitted until then. Absent or null: no previous token.
   */
  readonly previousTokenHash?: string | null;
  readonly previousTokenExpiresAt?: number | null;
  readonly status: 'active' | 'disabled';
}

/**
 * Lookups may answer synchronously (cache hit) or with a promise (cache miss); callers handle both, so that a hit costs
 * no microtask.
 */
export type MaybePromise<T> = T | Promise<T>;

export interface GatewayDirectory {
  /** The app whose token hashes to `tokenHash` (SHA-256 hex), or null. */
  findAppByTokenHash(tokenHash: string): MaybePromise<AppEntry | null>;
  /** The app by id (for device tokens), or null. */
  findAppById(appId: string): MaybePromise<AppEntry | null>;
  /** The decrypted secret of `appId` for `provider`, or null. */
  findSecret(appId: string, provider: string): MaybePromise<ResolvedSecret | null>;
  /** Providers `appId` has a secret for. */
  providersWithSecrets(appId: string): MaybePromise<readonly string[]>;
  /** True when the device was revoked (a revoked device stays revoked). `deviceId` in normal form (`normalizeDeviceId`). */
  isDeviceRevoked(appId: string, deviceId: string): boolean;
  /** Drops every cached entry now (called after local writes; other processes notice through the change feed). */
  invalidate(): void;
}
