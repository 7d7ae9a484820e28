/**
 * Bearer credentials the gateway issues: app tokens (`at_`), development tokens (`dt_`) and admin keys (`ak_`).
 *
 * Each is a prefix plus 32 base62 characters (≈190 bits) from the CSPRNG. Only SHA-256 of the whole token is stored, so
 * a lookup compares hashes in an index: the secret itself is never compared byte by byte, and a stolen database holds no
 * usable token. (A slow hash is not needed: the tokens are random, not passwords.)
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as crypto from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The kinds of issued credentials and their prefixes. */
export const TOKEN_PREFIXES = Object.freeze({ app: 'at_', development: 'dt_', admin: 'ak_' });
export type TokenKind = keyof typeof TOKEN_PREFIXES;

const TOKEN_BODY_LENGTH = 32;
const TOKEN_PATTERN: Readonly<Record<TokenKind, RegExp>> = {
  app: /^at_[0-9A-Za-z]{32}$/,
  development: /^dt_[0-9A-Za-z]{32}$/,
  admin: /^ak_[0-9A-Za-z]{32}$/,
};

/** Uniform random base62 text: bytes ≥ 248 are rejected so that every character is equally likely. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** A new token of the given kind, e.g. `at_3fQ…` (shown once, never stored). */
export function generateToken(kind: TokenKind): string {
  return TOKEN_PREFIXES[kind] + randomBase62(TOKEN_BODY_LENGTH);
}

/** True when `value` has the exact shape of a token of `kind` (cheap check before any lookup). */
export function isWellFormedToken(kind: TokenKind, value: string): boolean {
  return TOKEN_PATTERN[kind].test(value);
}

const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** The stored form of a token: lower-case hex SHA-256. */
export function hashToken(token: string): string {
  // crypto.hash (Node ≥ 20.12): one call instead of a Hash object per request.
  return oneShotHash ? oneShotHash('sha256', token, 'hex') : createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The last 4 characters, kept for display (`at_…wxyz`). */
export function tokenHint(token: string): string {
  return `${token.slice(0, 3)}…${token.slice(-4)}`;
}

/** Constant-time comparison of two hex digests of equal length. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}

/** A random identifier with a readable prefix, e.g. `app_7Hc…` (not a secret). */
export function generateId(prefix: string): string {
  return `${prefix}_${randomBase62(16)}`;
}
