/**
 * The one-time set-up token of a fleet: one token, shared through the database, so that the link any node prints
 * works on every node, and a node that boots later prints the same link instead of replacing it.
 *
 * The database keeps only the token's hash (a copy of the database must not be able to create an administrator), so the
 * token is derived rather than stored: `su_` + base62(HMAC-SHA256(key, "setup:" + created_at)), where `key` is derived
 * from the master key every node shares and `created_at` is the row's. A node finds the live row, derives its token and
 * checks it against the stored hash; with no live row (or a master key that changed) it issues a new one. Two nodes that
 * boot at the same instant may each insert a row: both links then work until one is used, which consumes them all.
 */
import { createHmac } from 'node:crypto';
import type { Knex } from 'knex';
import { digestsEqual, hashToken } from '../security/tokens';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The set-up key of a master key: a subkey, so the master key itself never meets this use. */
export function setupKeyOf(masterKey: Buffer): Buffer {
  return createHmac('sha256', masterKey).update('tollgate dashboard set-up token v1').digest();
}

/** 43 base62 characters (256 bits of HMAC output, reduced without bias worth naming: 62^43 > 2^256). */
export function deriveSetupToken(setupKey: Buffer, createdAt: number): string {
  let value = BigInt(`0x${createHmac('sha256', setupKey).update(`setup:${createdAt}`).digest('hex')}`);
  let text = '';
  for (let index = 0; index < 43; index += 1) {
    text += ALPHABET[Number(value % 62n)];
    value /= 62n;
  }
  return `su_${text}`;
}

/** The live shared token, or a new one when none is live; in one transaction. */
export async function sharedSetupToken(database: Knex, setupKey: Buffer, now: number, ttlMs: number): Promise<string> {
  return database.transaction(async (transaction) => {
    const rows = (await transaction('setup_tokens').where('expires_at', '>', now).orderBy('created_at')) as Array<{ token_hash: string; created_at: number | string }>;
    for (const row of rows) {
      const token = deriveSetupToken(setupKey, Number(row.created_at));
      if (digestsEqual(row.token_hash, hashToken(token))) return token;
    }
    await transaction('setup_tokens').delete();
    const token = deriveSetupToken(setupKey, now);
    await transaction('setup_tokens').insert({ token_hash: hashToken(token), created_at: now, expires_at: now + ttlMs });
    return token;
  });
}
