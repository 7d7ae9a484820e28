/**
 * The signed-in user's ID token (protocol.md, "End users"; sdk/conformance/README.md, "user-token.json"). The app
 * registers a callback returning its sign-in provider's current ID token (Firebase `getIdToken`, Supabase
 * `session.access_token`, Auth0, Clerk, Cognito, Sign in with Apple); the SDK sends it as `Tollgate-User-Token`, reuses
 * it while its `exp` is more than a minute away, and asks again (forced) once when the gateway answers
 * `user_token_expired`.
 */
import { jwsExpiryMs } from './behaviour';
import { TollgateError } from './errors';
import { checkHeaderValue } from './request-builder';
import { describe } from './transport';

/**
 * Returns the current ID token, or null when nobody is signed in. `forceRefresh` is true when the gateway found the
 * last one expired: pass it on to the sign-in SDK (Firebase `getIdToken(true)`).
 */
export type UserTokenProvider = (options: { readonly forceRefresh: boolean }) => Promise<string | null | undefined> | string | null | undefined;

/** A cached user token is reused while more than this remains before its `exp`. */
export const USER_TOKEN_MARGIN_MS = 60_000;

interface CachedUserToken {
  readonly token: string;
  /** null: `exp` unreadable, so the token serves one request only. */
  readonly expiresAtMs: number | null;
}

export class UserTokenCache {
  private provider: UserTokenProvider | null = null;
  private current: CachedUserToken | null = null;
  private pending: Promise<string | null> | null = null;
  private generation = 0;

  constructor(private readonly clock: () => number = () => Date.now()) {}

  /** Registers the callback (null signs out: no header from now on). The cached token is dropped either way. */
  setProvider(provider: UserTokenProvider | null): void {
    this.provider = provider;
    this.current = null;
    this.pending = null;
    this.generation += 1;
  }

  get hasProvider(): boolean {
    return this.provider !== null;
  }

  /** Seeds the cache with a token the app already holds (tests, and apps restoring a session). */
  prime(token: string): void {
    this.current = { token, expiresAtMs: jwsExpiryMs(token) };
  }

  /** The gateway found `token` expired: forget it when it is still the cached one. */
  invalidate(token: string | null): void {
    if (token !== null && this.current?.token === token) this.current = null;
  }

  /**
   * The token to send, or null (no callback, or signed out). A callback that throws (or returns something that is
   * not a header-safe string) is unauthorized with reason `user_token_unavailable`, before anything is sent.
   */
  async token(forceRefresh = false): Promise<string | null> {
    if (!this.provider) return null;
    const cached = this.current;
    if (!forceRefresh && cached) {
      if (cached.expiresAtMs === null) {
        this.current = null; // a primed token without exp serves one request only
        return cached.token;
      }
      if (this.clock() < cached.expiresAtMs - USER_TOKEN_MARGIN_MS) return cached.token;
    }
    if (this.pending && !forceRefresh) return this.pending;
    const generation = this.generation;
    const provider = this.provider;
    const flight = (async () => {
      let value: string | null | undefined;
      try {
        value = await provider({ forceRefresh });
      } catch (error) {
        throw new TollgateError('unauthorized', `The user-token callback failed: ${describe(error)}`, { reason: 'user_token_unavailable', cause: error });
      }
      if (value === null || value === undefined || value === '') {
        if (generation === this.generation) this.current = null;
        return null;
      }
      if (typeof value !== 'string') throw new TollgateError('unauthorized', 'The user-token callback must return a string or null.', { reason: 'user_token_unavailable' });
      checkHeaderValue('Tollgate-User-Token', value);
      const expiresAtMs = jwsExpiryMs(value);
      // A token without a readable exp is not kept: the callback is asked again for the next request.
      if (generation === this.generation) this.current = expiresAtMs === null ? null : { token: value, expiresAtMs };
      return value;
    })();
    this.pending = flight;
    const settle = () => {
      if (this.pending === flight) this.pending = null;
    };
    flight.then(settle, settle);
    return flight;
  }
}
