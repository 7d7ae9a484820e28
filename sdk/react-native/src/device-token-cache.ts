/**
 * Keeps the device token in memory and attests again shortly before it expires. Concurrent calls share one attestation
 * (single flight); a failed attestation is not cached, so the next call tries again.
 */
import type { IssuedDeviceToken } from './attestation';
import { decodeBase64 } from './base64';
import { utf8ToString } from './utf8';

/** Refresh when less than this remains (or a fifth of the token's lifetime, if that is shorter). */
export const REFRESH_MARGIN_MS = 60_000;

/** The `exp` claim of a compact JWS, in unix ms, read without verifying the signature; null when unreadable. */
export function jwsExpiryMs(token: string): number | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const payload = decodeBase64(parts[1]!);
  if (!payload) return null;
  try {
    const claims: unknown = JSON.parse(utf8ToString(payload));
    const exp = (claims as { exp?: unknown } | null)?.exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : null;
  } catch {
    return null;
  }
}

export class DeviceTokenCache {
  private current: IssuedDeviceToken | null = null;
  private pending: Promise<IssuedDeviceToken> | null = null;
  private attestations = 0;

  constructor(
    private readonly attest: () => Promise<IssuedDeviceToken>,
    private readonly clock: () => number = () => Date.now(),
    private readonly refreshMarginMs: number = REFRESH_MARGIN_MS,
  ) {}

  /** A token valid for at least the refresh margin; attests when needed (shared by concurrent callers). */
  async token(): Promise<string> {
    const cached = this.current;
    if (cached && !this.needsRefresh(cached, this.clock())) return cached.token;
    return (await this.refresh()).token;
  }

  /** The cached token, if any (even one due for refresh). */
  get cached(): IssuedDeviceToken | null {
    return this.current;
  }

  /** How many attestations were started (for diagnostics and tests). */
  get attestationCount(): number {
    return this.attestations;
  }

  /**
   * The gateway refused `token` (attestationFailed): forget it when it is still the cached one, so that the next call
   * attests again. A token already replaced by a concurrent refresh is left alone.
   */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = null;
  }

  /** Forgets everything (e.g. on sign-out or when the app token changes). */
  clear(): void {
    this.current = null;
  }

  /** True when `token` should be replaced at `nowMs`. */
  needsRefresh(token: IssuedDeviceToken, nowMs: number): boolean {
    const lifetime = Math.max(0, token.expiresAtMs - token.receivedAtMs);
    const margin = Math.min(this.refreshMarginMs, lifetime / 5);
    return nowMs >= token.expiresAtMs - margin;
  }

  private refresh(): Promise<IssuedDeviceToken> {
    if (this.pending) return this.pending;
    this.attestations += 1;
    // Deferred by one tick so that an attestor throwing synchronously still clears `pending`.
    const flight = Promise.resolve()
      .then(() => this.attest())
      .then((fresh) => {
        this.current = fresh;
        return fresh;
      });
    this.pending = flight;
    const settle = () => {
      if (this.pending === flight) this.pending = null;
    };
    flight.then(settle, settle);
    return flight;
  }
}
