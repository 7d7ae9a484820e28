/**
 * Dashboard sign-in: administrators with scrypt password hashes, server-side sessions, CSRF tokens, and the one-time
 * set-up link that creates the first administrator.
 *
 * - The set-up token (`su_…`) exists only while there is no administrator. Its SHA-256 is stored (any node of a fleet
 *   accepts it); it is consumed in the same transaction that creates the first administrator, so it works once.
 * - A session id (`ss_…`) goes in an httpOnly, SameSite=Strict cookie; only its SHA-256 is stored. Each session has its
 *   own CSRF token, which state-changing requests made with the cookie must echo in `X-CSRF-Token`.
 * - Unknown user names cost the same scrypt work as wrong passwords, so the answer time does not tell which it was.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { Knex } from 'knex';
import { GatewayError, TollgateError } from '../contract';
import { bumpChangeSequence } from '../storage/repositories';
import { digestsEqual, generateId, hashToken, randomBase62 } from '../security/tokens';
import { sharedSetupToken } from './shared-setup-token';

const SESSION_PREFIX = 'ss_';
const SETUP_PREFIX = 'su_';
const SESSION_PATTERN = /^ss_[0-9A-Za-z]{43}$/;
const SETUP_PATTERN = /^su_[0-9A-Za-z]{43}$/;

/** OWASP's scrypt floor (N=2^17, r=8, p=1) costs 128 MiB a hash; 2^15 with r=8 keeps 32 MiB and ~60 ms here. */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keyLength: 32, maxmem: 64 * 1024 * 1024 };

export const SESSION_COOKIE = 'tollgate_session';
export const CSRF_HEADER = 'x-csrf-token';

export interface DashboardUser {
  readonly id: string;
  readonly username: string;
}

export interface DashboardSession {
  readonly user: DashboardUser;
  readonly csrfToken: string;
  readonly expiresAt: number;
}

export interface DashboardAuthOptions {
  readonly clock?: () => number;
  /** Session lifetime; default 12 hours. */
  readonly sessionTtlMs?: number;
  /** Set-up link lifetime; default 24 hours. */
  readonly setupTtlMs?: number;
  /** The fleet's set-up key (setupKeyOf(master key)): every node then prints the same set-up link (shared-setup-token.ts). */
  readonly setupKey?: Buffer;
}

function scrypt(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scryptCallback(password, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key))));
}

/** `scrypt$N$r$p$salt$hash` (base64url), so that the cost can be raised later without breaking stored hashes. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT.keyLength, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Spent on unknown user names, so that they take as long as a wrong password. */
const DUMMY_HASH = hashPassword(randomBase62(24));

/** Failed sign-ins in a row before a user is locked out, and for how long. */
export const MAX_FAILED_SIGN_INS = 5;
export const SIGN_IN_LOCK_MS = 5 * 60_000;

export class DashboardAuth {
  private readonly clock: () => number;
  private readonly sessionTtlMs: number;
  private readonly setupTtlMs: number;
  private readonly setupKey: Buffer | undefined;

  constructor(
    private readonly database: Knex,
    options: DashboardAuthOptions = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.sessionTtlMs = options.sessionTtlMs ?? 12 * 3600_000;
    this.setupTtlMs = options.setupTtlMs ?? 24 * 3600_000;
    this.setupKey = options.setupKey;
  }

  async countUsers(): Promise<number> {
    const row = (await this.database('admin_users').count({ count: '*' }).first()) as { count: number | string } | undefined;
    return Number(row?.count ?? 0);
  }

  /**
   * When no administrator exists, issues a fresh one-time set-up token (earlier ones stop working) and returns it;
   * otherwise null. Called at boot; the server prints the link.
   */
  async issueSetupToken(): Promise<string | null> {
    if ((await this.countUsers()) > 0) return null;
    if (this.setupKey) return sharedSetupToken(this.database, this.setupKey, this.clock(), this.setupTtlMs);
    const token = SETUP_PREFIX + randomBase62(43);
    const now = this.clock();
    await this.database.transaction(async (transaction) => {
      await transaction('setup_tokens').delete();
      await transaction('setup_tokens').insert({ token_hash: hashToken(token), created_at: now, expires_at: now + this.setupTtlMs });
    });
    return token;
  }

  /** Creates the first administrator with the set-up token; the token is consumed. */
  async completeSetup(token: string, username: string, password: string): Promise<DashboardUser> {
    const invalid = () => new GatewayError('unauthorized', 'The set-up link is invalid, expired or already used.', { reason: 'setup_token_invalid' });
    if (!SETUP_PATTERN.test(token)) throw invalid();
    const passwordHash = await hashPassword(password);
    const now = this.clock();
    const hash = hashToken(token);
    return this.database.transaction(async (transaction) => {
      const row = (await transaction('setup_tokens').where({ token_hash: hash }).first()) as { token_hash: string; expires_at: number | string } | undefined;
      if (!row || !digestsEqual(row.token_hash, hash) || Number(row.expires_at) <= now) throw invalid();
      const users = (await transaction('admin_users').count({ count: '*' }).first()) as { count: number | string };
      if (Number(users.count) > 0) throw invalid();
      await transaction('setup_tokens').delete();
      const user = { id: generateId('usr'), username };
      await transaction('admin_users').insert({ id: user.id, username, password_hash: passwordHash, created_at: now });
      await bumpChangeSequence(transaction);
      return user;
    });
  }

  /** Adds an administrator (from the dashboard, by a signed-in administrator). */
  async createUser(username: string, password: string): Promise<DashboardUser> {
    const exists = await this.database('admin_users').where({ username }).first();
    if (exists) throw new TollgateError('TG_ERR_CONFLICT', `the user name "${username}" is taken`);
    const user = { id: generateId('usr'), username };
    await this.database('admin_users').insert({ id: user.id, username, password_hash: await hashPassword(password), created_at: this.clock() });
    return user;
  }

  /** Sets a new password for an administrator and ends their sessions (recovery from the host: `tollgate dashboard-users`). */
  async setPassword(username: string, password: string): Promise<DashboardUser> {
    const row = (await this.database('admin_users').where({ username }).first()) as { id: string; username: string } | undefined;
    if (!row) throw new TollgateError('TG_ERR_NOT_FOUND', `no dashboard user "${username}"`);
    const passwordHash = await hashPassword(password);
    await this.database.transaction(async (transaction) => {
      await transaction('admin_users').where({ id: row.id }).update({ password_hash: passwordHash, disabled_at: null });
      await transaction('admin_sessions').where({ user_id: row.id }).delete();
    });
    return { id: row.id, username: row.username };
  }

  /**
   * Checks the password and opens a session; null when the name or the password is wrong (the same answer), or
   * `{ lockedForSeconds }` while the user is locked out. After {@link MAX_FAILED_SIGN_INS} failed attempts in a row the
   * user is locked for {@link SIGN_IN_LOCK_MS}, checked before the password, so a correct guess during the lock tells
   * nothing.
   *
   * The attempt is counted as failed before the password is checked, by one conditional `UPDATE` (atomic on SQLite and
   * PostgreSQL alike: a concurrent update waits for the row and re-reads it): of any number of concurrent guesses,
   * at most {@link MAX_FAILED_SIGN_INS} get their password checked; the one that fills the count sets the lock and the
   * others find the user locked. Reading the count, checking the password (60 ms of scrypt) and then writing
   * `failed + 1` let 40 concurrent guesses all be checked without any lock. A successful sign-in takes its attempt
   * back (the count goes to 0) unless other attempts were counted meanwhile: a lock they set stays until it ends.
   */
  async signIn(username: string, password: string): Promise<{ sessionId: string; session: DashboardSession } | { lockedForSeconds: number } | null> {
    const now = this.clock();
    // The count after this attempt: an expired lock starts a new series at 1.
    const counted = 'CASE WHEN locked_until IS NOT NULL THEN 1 ELSE COALESCE(failed_sign_ins, 0) + 1 END';
    const admitted = await this.database('admin_users')
      .where({ username })
      .andWhere((query) => query.whereNull('locked_until').orWhere('locked_until', '<=', now))
      .update({
        failed_sign_ins: this.database.raw(counted),
        locked_until: this.database.raw(`CASE WHEN ${counted} >= CAST(? AS INTEGER) THEN CAST(? AS BIGINT) ELSE NULL END`, [MAX_FAILED_SIGN_INS, now + SIGN_IN_LOCK_MS]),
      });
    const row = (await this.database('admin_users').where({ username }).first()) as
      | { id: string; username: string; password_hash: string; disabled_at: unknown; failed_sign_ins: number | string | null; locked_until: number | string | null }
      | undefined;
    if (row && admitted === 0) {
      // Locked before this attempt: refused without looking at the password.
      if (row.locked_until !== null && Number(row.locked_until) > now) return { lockedForSeconds: Math.ceil((Number(row.locked_until) - now) / 1000) };
      return null;
    }
    const valid = await verifyPassword(password, row?.password_hash ?? (await DUMMY_HASH));
    if (!row || !valid || row.disabled_at != null) return null;
    // This attempt was counted as failed in advance; it was not. When no other attempt was counted since (the count is
    // still the one read), the series ends, with a lock this attempt's own count may have set; otherwise the other
    // attempts' count and lock stand (only the right password ever ends a series early).
    await this.database('admin_users').where({ id: row.id, failed_sign_ins: row.failed_sign_ins }).update({ failed_sign_ins: 0, locked_until: null });
    const sessionId = SESSION_PREFIX + randomBase62(43);
    const session: DashboardSession = { user: { id: row.id, username: row.username }, csrfToken: randomBytes(24).toString('base64url'), expiresAt: now + this.sessionTtlMs };
    await this.database('admin_sessions').insert({ id_hash: hashToken(sessionId), user_id: row.id, csrf_token: session.csrfToken, created_at: now, expires_at: session.expiresAt });
    // Expired sessions are dropped here rather than by a timer.
    await this.database('admin_sessions').where('expires_at', '<=', now).delete();
    return { sessionId, session };
  }

  async session(sessionId: string | undefined): Promise<DashboardSession | null> {
    if (typeof sessionId !== 'string' || !SESSION_PATTERN.test(sessionId)) return null;
    const hash = hashToken(sessionId);
    const row = (await this.database('admin_sessions')
      .join('admin_users', 'admin_users.id', 'admin_sessions.user_id')
      .where('admin_sessions.id_hash', hash)
      .select('admin_sessions.id_hash', 'admin_sessions.csrf_token', 'admin_sessions.expires_at', 'admin_users.id', 'admin_users.username', 'admin_users.disabled_at')
      .first()) as { id_hash: string; csrf_token: string; expires_at: number | string; id: string; username: string; disabled_at: unknown } | undefined;
    if (!row || !digestsEqual(row.id_hash, hash) || Number(row.expires_at) <= this.clock() || row.disabled_at != null) return null;
    return { user: { id: row.id, username: row.username }, csrfToken: row.csrf_token, expiresAt: Number(row.expires_at) };
  }

  /** Every administrator (never a password hash). */
  async listUsers(): Promise<Array<{ id: string; username: string; createdAt: number; lockedUntil: number | null }>> {
    const rows = (await this.database('admin_users').orderBy('created_at', 'asc').select('id', 'username', 'created_at', 'locked_until')) as Array<{ id: string; username: string; created_at: number | string; locked_until: number | string | null }>;
    const now = this.clock();
    return rows.map((row) => ({ id: row.id, username: row.username, createdAt: Number(row.created_at), lockedUntil: row.locked_until !== null && Number(row.locked_until) > now ? Number(row.locked_until) : null }));
  }

  /** Removes an administrator and their sessions; never oneself, never the last one (nobody could sign in). */
  async deleteUser(userId: string, actingUserId: string | null): Promise<{ id: string; deleted: true }> {
    return this.database.transaction(async (transaction) => {
      const row = (await transaction('admin_users').where({ id: userId }).first()) as { id: string } | undefined;
      if (!row) throw new TollgateError('TG_ERR_NOT_FOUND', `no dashboard user "${userId}"`);
      if (userId === actingUserId) throw new TollgateError('TG_ERR_CONFLICT', 'you cannot remove yourself; another administrator can');
      const users = (await transaction('admin_users').count({ count: '*' }).first()) as { count: number | string };
      if (Number(users.count) <= 1) throw new TollgateError('TG_ERR_CONFLICT', 'the last administrator cannot be removed');
      await transaction('admin_sessions').where({ user_id: userId }).delete();
      await transaction('admin_users').where({ id: userId }).delete();
      return { id: userId, deleted: true as const };
    });
  }

  /** Changes one's own password after checking the current one; other sessions of the user end, this one stays. */
  async changeOwnPassword(userId: string, currentPassword: string, newPassword: string, keepSessionId: string | undefined): Promise<{ changed: true }> {
    const row = (await this.database('admin_users').where({ id: userId }).first()) as { id: string; password_hash: string } | undefined;
    if (!row || !(await verifyPassword(currentPassword, row.password_hash))) {
      throw new GatewayError('invalidRequest', 'The current password is wrong.', { reason: 'validation', fields: { currentPassword: ['is wrong'] } });
    }
    const passwordHash = await hashPassword(newPassword);
    const keep = typeof keepSessionId === 'string' ? hashToken(keepSessionId) : '';
    await this.database.transaction(async (transaction) => {
      await transaction('admin_users').where({ id: userId }).update({ password_hash: passwordHash });
      await transaction('admin_sessions').where({ user_id: userId }).whereNot({ id_hash: keep }).delete();
    });
    return { changed: true };
  }

  async signOut(sessionId: string | undefined): Promise<void> {
    if (typeof sessionId === 'string' && SESSION_PATTERN.test(sessionId)) await this.database('admin_sessions').where({ id_hash: hashToken(sessionId) }).delete();
  }
}

/** Constant-time equality of two CSRF tokens. */
export function csrfTokensEqual(expected: string, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}
