/**
 * Admin API keys (`ak_…`): the credential of the management API and the assistant server. Looked up by SHA-256 hash in
 * an index (never compared byte by byte), then the stored hash is compared in constant time as a second guard.
 */
import type { Knex } from 'knex';
import { digestsEqual, hashToken, isWellFormedToken } from '../security/tokens';
import { TokenRepository } from '../storage/repositories';

export interface AdminIdentity {
  readonly id: string;
  /** The key's name, used as the actor in the audit log. */
  readonly name: string;
}

/** Reads `Authorization: Bearer ak_…` (or a bare key) and answers the admin, or null. */
export async function authenticateAdminKey(database: Knex, header: string | undefined): Promise<AdminIdentity | null> {
  if (typeof header !== 'string') return null;
  const key = header.startsWith('Bearer ') ? header.slice(7).trim() : header.trim();
  if (!isWellFormedToken('admin', key)) return null;
  const hash = hashToken(key);
  const row = await new TokenRepository(database).findAdminKey(hash);
  if (!row || row.revokedAt !== null || !digestsEqual(row.keyHash, hash)) return null;
  return { id: row.id, name: row.name };
}
