/**
 * One serving process per SQLite data directory: two nodes on one directory would each keep their own in-process rate
 * limits and enforce every limit per node. `tollgate serve` holds a lock on `tollgate.lock` in the data directory.
 *
 * The lock is held by the kernel: an fcntl (POSIX advisory) lock that SQLite takes on the file for an exclusive
 * transaction this process keeps open for as long as it serves. The kernel drops it when the process ends, however it
 * ends (kill -9, a crash, a power loss), and it is seen by every process that opens the same file, whatever its PID
 * namespace. The former lock, a PID file, was fooled by containers: two containers on one volume are both PID 1, each
 * took the other's file for its own, both served, and a limit of 20 a minute admitted 40.
 *
 * Who holds it is written beside it (`tollgate.lock.holder`: pid, host, start time), for the refusal message only.
 * CLI commands do not take the lock: they may write while the server runs (SQLite WAL and a busy timeout).
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TollgateError } from '../contract';

export const LOCK_FILE_NAME = 'tollgate.lock';

/** better-sqlite3, only what the lock needs (its type package is not installed). */
interface LockConnection {
  exec(sql: string): unknown;
  pragma(source: string): unknown;
  close(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Sqlite = require('better-sqlite3') as new (file: string, options?: { timeout?: number }) => LockConnection;

export interface DataDirectoryLock {
  readonly file: string;
  release(): void;
}

function codeOf(error: unknown): string {
  return String((error as { code?: unknown }).code ?? '');
}

/**
 * Takes the data directory's lock for this process, held until {@link DataDirectoryLock.release} or the process ends.
 *
 * @throws TollgateError `TG_ERR_CONFIGURATION` when another process holds it, or when the directory cannot be written.
 */
export function lockDataDirectory(dataDirectory: string): DataDirectoryLock {
  const file = path.join(dataDirectory, LOCK_FILE_NAME);
  const holderFile = `${file}.holder`;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    let connection: LockConnection | undefined;
    try {
      connection = new Sqlite(file, { timeout: 0 });
      // A rollback journal (not WAL, whose shared memory would let readers in) and an exclusive transaction never
      // committed: SQLite holds the file's fcntl write lock until the connection closes.
      connection.pragma('journal_mode = DELETE');
      connection.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      connection?.close();
      const code = codeOf(error);
      if (code === 'SQLITE_NOTADB' && attempt === 0) {
        // The PID file of an older version: the kernel lock replaces it.
        unlinkSync(file);
        continue;
      }
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
        let holder = 'another process';
        try {
          const recorded = JSON.parse(readFileSync(holderFile, 'utf8')) as { pid: number; host: string; startedAt: string };
          holder = `pid ${recorded.pid} on host ${recorded.host}, since ${recorded.startedAt}`;
        } catch {
          // not written yet, or unreadable: the lock itself is what counts
        }
        throw new TollgateError(
          'TG_ERR_CONFIGURATION',
          `another Tollgate server (${holder}) is already serving from the data directory ${dataDirectory}; two servers on one SQLite directory would each enforce every limit on its own. Stop it, or run several nodes on PostgreSQL and Redis (docs/guides/scale-out.md). The lock (${file}) is held by the kernel for that process and ends with it; a pid in another container's namespace may not be a pid here`,
        );
      }
      if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || code === 'SQLITE_PERM') {
        throw new TollgateError('TG_ERR_CONFIGURATION', `the data directory ${dataDirectory} cannot be written (${code}): the server needs to write its database and lock there; check the mount (read-only?) and its owner`);
      }
      throw error;
    }
    try {
      writeFileSync(holderFile, JSON.stringify({ pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString() }), { mode: 0o600 });
    } catch {
      // informational only
    }
    const held = connection;
    let released = false;
    return {
      file,
      release() {
        if (released) return;
        released = true;
        held.close();
      },
    };
  }
  throw new TollgateError('TG_ERR_CONFIGURATION', `could not take the lock ${file}`);
}
