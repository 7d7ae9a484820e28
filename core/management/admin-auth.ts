/**
 * Admin API keys (`ak_…`): the credential of the management API and the assistant server. Looked up by SHA-256 hash in
 * an index (never compared byte by byte), then the stored hash is compared in constant time as a second guard. Each key
 * holds scopes and may expire (./admin-scopes.ts).
 */
import type { Knex } from 'knex';
import { GatewayError } from '../contract';
import { digestsEqual, hashToken, isWellFormedToken } from '../security/tokens';
import { TokenRepository } from '../storage/repositories';
import type { AdminGrant, AdminScope } from './admin-scopes';

export interface AdminIdentity extends AdminGrant {
  readonly id: string;
  /** The key's name, used as the actor in the audit log. */
  readonly name: string;
  readonly scopes: readonly AdminScope[];
}

/**
 * Reads `Authorization: Bearer ak_…` (or a bare key) and answers the admin, or null when the key is missing, malformed,
 * unknown or revoked. A key past its expiry is refused with `unauthorized` (`admin_key_expired`), so that its holder
 * learns why.
 */
export async function authenticateAdminKey(database: Knex, header: string | undefined, now: number = Date.now()): Promise<AdminIdentity | null> {
  if (typeof header !== 'string') return null;
  const key = header.startsWith('Bearer ') ? header.slice(7).trim() : header.trim();
  if (!isWellFormedToken('admin', key)) return null;
  const hash = hashToken(key);
  const row = await new TokenRepository(database).findAdminKey(hash);
  if (!row || row.revokedAt !== null || !digestsEqual(row.keyHash, hash)) return null;
  if (row.expiresAt !== null && row.expiresAt <= now) {
    throw new GatewayError('unauthorized', `This admin key expired at ${new Date(row.expiresAt).toISOString()}: create a new one.`, { reason: 'admin_key_expired' });
  }
  return { id: row.id, name: row.name, scopes: row.scopes, expiresAt: row.expiresAt };
}
