/**
 * Keeps the current device token in memory in front of a {@link DeviceSession} and asks for a new one when it is due
 * (rule `refresh-due`). Concurrent calls share one request (single flight); a failure is not cached, so the next call
 * tries again, except `device_revoked`, after which nothing is asked any more until the app restarts.
 */
import { REFRESH_MARGIN_MS, reasonAction, refreshDue, type IssuedDeviceToken } from './behaviour';
import { TollgateError } from './errors';

export { jwsExpiryMs, REFRESH_MARGIN_MS } from './behaviour';

export class DeviceTokenCache {
  private current: IssuedDeviceToken | null = null;
  private pending: Promise<IssuedDeviceToken> | null = null;
  private stopped: TollgateError | null = null;
  private requests = 0;

  constructor(
    private readonly obtain: (forceRefresh: boolean) => Promise<IssuedDeviceToken>,
    private readonly clock: () => number = () => Date.now(),
    private readonly refreshMarginMs: number = REFRESH_MARGIN_MS,
  ) {}

  /** A token not yet due for refresh; asks the session when needed (shared by concurrent callers). */
  async token(forceRefresh = false): Promise<string> {
    if (this.stopped) throw this.stopped;
    const cached = this.current;
    if (!forceRefresh && cached && !this.needsRefresh(cached, this.clock())) return cached.token;
    return (await this.refresh(forceRefresh)).token;
  }

  /** The cached token, if any (even one due for refresh). */
  get cached(): IssuedDeviceToken | null {
    return this.current;
  }

  /**
   * How many times the session was asked for a token (for diagnostics and tests). With the native module a request
   * may be answered from the Keychain / Keystore without any attestation.
   */
  get attestationCount(): number {
    return this.requests;
  }

  /** True after `device_revoked`: every call fails with attestationFailed until the app restarts. */
  get isStopped(): boolean {
    return this.stopped !== null;
  }

  /** The gateway refused `token`: forget it when it is still the cached one. A token already replaced is left alone. */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = null;
  }

  /** The device was revoked: forget the token and refuse every call with `error` from now on. */
  stop(error: TollgateError): void {
    this.stopped = error;
    this.current = null;
  }

  /** Forgets the token (e.g. on sign-out). A revocation stays in force. */
  clear(): void {
    this.current = null;
  }

  /** True when `token` should be replaced at `nowMs`. */
  needsRefresh(token: IssuedDeviceToken, nowMs: number): boolean {
    return refreshDue(token.receivedAtMs, token.expiresAtMs, nowMs, this.refreshMarginMs);
  }

  private refresh(forceRefresh: boolean): Promise<IssuedDeviceToken> {
    if (this.pending) return this.pending;
    this.requests += 1;
    // Deferred by one tick so that a session throwing synchronously still clears `pending`.
    const flight = Promise.resolve()
      .then(() => this.obtain(forceRefresh))
      .then(
        (fresh) => {
          if (!this.stopped) this.current = fresh;
          return fresh;
        },
        (error: unknown) => {
          if (error instanceof TollgateError && reasonAction(error.errorType ?? error.kind, error.reason).action === 'stop') this.stop(error);
          throw error;
        },
      );
    this.pending = flight;
    const settle = () => {
      if (this.pending === flight) this.pending = null;
    };
    flight.then(settle, settle);
    return flight;
  }
}
