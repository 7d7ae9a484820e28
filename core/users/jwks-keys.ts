/**
 * The signing keys of the sign-in providers, one cached key set per JWKS address for the whole process (jose's
 * `createRemoteJWKSet`, which caches keys and refetches on an unknown `kid`).
 *
 * - A key set is fetched once, then only when a token names a `kid` it does not hold, and at most once a minute per
 *   address whatever happens (jose's cooldown counts from the last successful fetch; this also counts failed ones, so
 *   a provider that is down is not asked again by every request).
 * - Cached keys never expire on a timer (`cacheMaxAge: Infinity`): while the provider's JWKS address is down, users
 *   whose key is cached keep working. A key the provider withdrew is dropped at the next fetch (a rotation's new `kid`
 *   triggers one).
 * - The sign-in provider is never called per request (protocol.md, "End users").
 */
import { createRemoteJWKSet, errors, type JWTHeaderParameters, type FlattenedJWSInput, type KeyLike } from 'jose';

/** The least time between two fetches of one key set. */
export const JWKS_REFETCH_INTERVAL_MS = 60_000;
/** A key set answer slower than this counts as a failed fetch. */
const FETCH_TIMEOUT_MS = 5_000;
/** Key sets kept (one per JWKS address); past it the oldest is dropped (addresses come from operators' settings). */
const MAX_KEY_SETS = 1_000;

/** No key of the set can verify the token, and the set may not be fetched again yet (or the fetch failed). */
export class KeysUnavailable extends Error {
  constructor(readonly kind: 'kid_unknown' | 'fetch_failed', cause?: unknown) {
    super(kind === 'kid_unknown' ? 'no key of the sign-in provider matches the token' : 'the sign-in provider\'s keys could not be fetched', { cause });
  }
}

type RemoteKeySet = ReturnType<typeof createRemoteJWKSet>;

class KeySet {
  private readonly remote: RemoteKeySet;
  /** When a fetch was last started (successful or not), unix ms; 0: never. */
  private lastFetch = 0;

  constructor(url: string) {
    this.remote = createRemoteJWKSet(new URL(url), { cooldownDuration: JWKS_REFETCH_INTERVAL_MS, cacheMaxAge: Infinity, timeoutDuration: FETCH_TIMEOUT_MS });
  }

  /** jose's key lookup, gated: a lookup that would fetch is allowed once per {@link JWKS_REFETCH_INTERVAL_MS}. */
  readonly getKey = async (header: JWTHeaderParameters, token: FlattenedJWSInput): Promise<KeyLike | Uint8Array> => {
    const cached = this.remote.jwks();
    const known = cached !== undefined && cached.keys.some((key) => header.kid === undefined || key.kid === header.kid);
    // A fetch already on its way (another request's) is joined: jose shares it.
    if (!known && !this.remote.reloading) {
      const now = Date.now();
      if (now - this.lastFetch < JWKS_REFETCH_INTERVAL_MS) {
        throw new KeysUnavailable(cached === undefined ? 'fetch_failed' : 'kid_unknown');
      }
      this.lastFetch = now;
    }
    try {
      return await this.remote(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey) throw new KeysUnavailable('kid_unknown', error);
      if (error instanceof errors.JWKSMultipleMatchingKeys) throw error;
      // Anything else came from fetching the set: unreachable, timed out, not 200, not a key set.
      throw new KeysUnavailable('fetch_failed', error);
    }
  };
}

const keySets = new Map<string, KeySet>();

/** The key lookup for one JWKS address (the same object for every request to it, process-wide). */
export function keysFor(url: string): KeySet['getKey'] {
  let set = keySets.get(url);
  if (!set) {
    if (keySets.size >= MAX_KEY_SETS) keySets.delete(keySets.keys().next().value!);
    set = new KeySet(url);
    keySets.set(url, set);
  }
  return set.getKey;
}
