/**
 * Telling "the gateway's own database cannot answer right now" apart from a fault of the gateway: the first is refused
 * with `serviceUnavailable` (503, `Retry-After`, reason `database_unavailable`), never a generic 500.
 */
import { GatewayError } from '../contract';

/** Node system error codes of a connection that cannot be made or was lost. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** PostgreSQL SQLSTATEs of an unavailable server (class 08 connection exceptions, 57P01-57P03 shutdown, 57014 statement timeout). */
const POSTGRES_UNAVAILABLE = /^(08|57P0)|^57014$|^53300$/;
/**
 * SQLite result codes of a database that cannot answer: locked past the busy timeout, or a storage fault (a full or
 * failing disk, a read-only or vanished file, a corrupted page). better-sqlite3 reports extended codes
 * (https://www.sqlite.org/rescode.html#extrc): `SQLITE_IOERR_WRITE`, `SQLITE_IOERR_FSYNC`, `SQLITE_BUSY_SNAPSHOT`,
 * `SQLITE_READONLY_DBMOVED`, `SQLITE_CORRUPT_INDEX`…, so the primary code is the part before the second underscore.
 * These were answered 500 internalError; they are the database's state, not a fault of the gateway's.
 */
const SQLITE_UNAVAILABLE = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_CANTOPEN', 'SQLITE_CORRUPT', 'SQLITE_NOTADB', 'SQLITE_READONLY', 'SQLITE_PROTOCOL']);

/** `SQLITE_IOERR_WRITE` → `SQLITE_IOERR`; other codes unchanged. */
function primaryCode(code: string): string {
  if (!code.startsWith('SQLITE_')) return code;
  const second = code.indexOf('_', 'SQLITE_'.length);
  return second === -1 ? code : code.slice(0, second);
}

/**
 * True when `error` says the database is unreachable, too slow (a bounded wait ran out) or busy. Only signatures of the
 * database drivers count (knex's pool timeout, PostgreSQL SQLSTATEs, pg's connection messages and its connection
 * deadline, SQLite result codes), plus a bare socket error of a connection attempt (what pg rejects with when the server
 * refuses the connection); an error that merely wraps a socket error (an outbound fetch) is not the database's.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const top = error as { code?: unknown; syscall?: unknown } | undefined;
  if (top && typeof top.code === 'string' && CONNECTION_CODES.has(top.code) && typeof top.syscall === 'string') return true;
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth += 1) {
    const candidate = current as { name?: string; code?: unknown; message?: unknown; severity?: unknown };
    if (candidate.name === 'KnexTimeoutError') return true;
    const code = typeof candidate.code === 'string' ? candidate.code : '';
    if ((typeof candidate.severity === 'string' && POSTGRES_UNAVAILABLE.test(code)) || SQLITE_UNAVAILABLE.has(primaryCode(code))) return true;
    const message = typeof candidate.message === 'string' ? candidate.message : '';
    if (/Query read timeout|Connection terminated|timeout exceeded when trying to connect|Connection ended unexpectedly|Client has encountered a connection error/i.test(message)) return true;
    // pg's own connection deadline (connectionTimeoutMillis) ran out: a server that accepts the connection but never
    // answers it (frozen, overloaded). pg 8 destroys the socket with exactly this message and no code.
    if (message === 'timeout expired') return true;
  }
  return false;
}

/** The refusal for a request the gateway could not serve because its database did not answer in time. */
export function databaseUnavailable(cause: unknown): GatewayError {
  return new GatewayError('serviceUnavailable', 'The gateway’s database cannot answer right now; nothing was changed. Retry shortly.', {
    retryAfterSeconds: 2,
    reason: 'database_unavailable',
    cause,
  });
}
