/**
 * Scopes of admin keys (`ak_…`): what a key may do through the management API, the assistant server and `tollgate mcp`.
 *
 * - `read`: every read (GET) and nothing else;
 * - `apps`: reads, and changes to apps, their settings, tokens, devices, development tokens, end users, webhooks and the
 *   price table;
 * - `secrets`: reads, and the provider keys and attestation credentials of apps (set, test, delete);
 * - `admin`: everything, including admin keys and dashboard administrators.
 *
 * A key holds one or more scopes. It can never hand out more than it holds: a key it creates has no scope it lacks and
 * expires no later than it does; it cannot revoke a key that holds a scope it lacks. Dashboard sessions and the host's
 * own CLI act with `admin`.
 */
import { GatewayError } from '../contract';

export type AdminScope = 'read' | 'apps' | 'secrets' | 'admin';
export const ADMIN_SCOPES: readonly AdminScope[] = ['read', 'apps', 'secrets', 'admin'];

/** Who acts on the management surface: the scopes held and, for a key, when it stops working. */
export interface AdminGrant {
  readonly scopes: readonly AdminScope[];
  /** Epoch ms; null: never. */
  readonly expiresAt: number | null;
}

/** The host's CLI, a dashboard session, `tollgate mcp` without a key: everything. */
export const FULL_GRANT: AdminGrant = Object.freeze({ scopes: Object.freeze(['admin'] as AdminScope[]), expiresAt: null });

/** True when `held` allows an action that needs `needed`. */
export function scopeAllows(held: readonly AdminScope[], needed: AdminScope): boolean {
  return needed === 'read' || held.includes('admin') || held.includes(needed);
}

/** The refusal of an action the grant's scopes do not allow (403 `scope_insufficient`). */
export function requireScope(grant: AdminGrant, needed: AdminScope, what: string): void {
  if (scopeAllows(grant.scopes, needed)) return;
  throw new GatewayError('forbidden', `This admin key's scope (${grant.scopes.join(', ')}) does not allow ${what}: it needs the "${needed}" scope.`, { reason: 'scope_insufficient' });
}

/** Stored as a comma-separated list; anything unknown is dropped, an empty list reads as `read`. */
export function parseScopes(stored: unknown): AdminScope[] {
  const scopes = typeof stored === 'string' ? stored.split(',').filter((scope): scope is AdminScope => (ADMIN_SCOPES as readonly string[]).includes(scope)) : [];
  return scopes.length > 0 ? scopes : ['read'];
}

/** A sorted, de-duplicated list; `admin` alone when it is in it (it implies the rest). */
export function normalizeScopes(scopes: readonly AdminScope[]): AdminScope[] {
  if (scopes.includes('admin')) return ['admin'];
  return ADMIN_SCOPES.filter((scope) => scopes.includes(scope));
}

/**
 * A key created (or revoked) by `actor` must not reach beyond it: every scope of `scopes` allowed by the actor's scopes,
 * and, for a new key, an expiry no later than the actor's own.
 */
export function requireWithin(actor: AdminGrant, target: { scopes: readonly AdminScope[]; expiresAt?: number | null }, action: 'create' | 'revoke'): void {
  const beyond = target.scopes.filter((scope) => !scopeAllows(actor.scopes, scope));
  if (beyond.length > 0) {
    throw new GatewayError(
      'forbidden',
      action === 'create'
        ? `A key cannot create a key with more scope than its own: ${beyond.join(', ')} is beyond ${actor.scopes.join(', ')}.`
        : `A key cannot revoke a key with more scope than its own: ${beyond.join(', ')} is beyond ${actor.scopes.join(', ')}.`,
      { reason: 'scope_exceeds_own' },
    );
  }
  if (action === 'create' && actor.expiresAt !== null && (target.expiresAt === null || target.expiresAt === undefined || target.expiresAt > actor.expiresAt)) {
    throw new GatewayError('forbidden', `A key that expires cannot create a key that outlives it: set expiresAt no later than ${new Date(actor.expiresAt).toISOString()}.`, { reason: 'scope_exceeds_own' });
  }
}

/**
 * A dashboard administrator never expires: a key that does cannot create one (it would outlive the key that made it,
 * with the `admin` scope of every session).
 */
export function requireNoExpiry(actor: AdminGrant, what: string): void {
  if (actor.expiresAt === null) return;
  throw new GatewayError('forbidden', `A key that expires cannot create ${what}, which would outlive it: use a key without expiry or the host's CLI.`, { reason: 'scope_exceeds_own' });
}
