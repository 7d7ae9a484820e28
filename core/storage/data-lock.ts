/**
 * One serving process per SQLite data directory (issue 17): two nodes on one directory would each keep their own
 * in-process rate limits and enforce every limit per node. `tollgate serve` takes `tollgate.lock` in the data directory
 * (created with O_EXCL, holding its pid); a second server finds the lock held by a live process and refuses to start.
 * A lock left by a process that died (kill -9, power loss) is taken over. CLI commands do not take it: they may write
 * while the server runs (SQLite WAL and a busy timeout).
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { TollgateError } from '../contract';

export const LOCK_FILE_NAME = 'tollgate.lock';

/** True when `pid` names a running process (other than this one). */
function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface DataDirectoryLock {
  readonly file: string;
  release(): void;
}

/**
 * Takes the data directory's lock for this process.
 *
 * @throws TollgateError `TG_ERR_CONFIGURATION` when another live process holds it.
 */
export function lockDataDirectory(dataDirectory: string): DataDirectoryLock {
  const file = path.join(dataDirectory, LOCK_FILE_NAME);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    let descriptor: number;
    try {
      descriptor = openSync(file, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let holder = NaN;
      try {
        holder = Number(readFileSync(file, 'utf8').trim());
      } catch {
        // removed meanwhile: try again
      }
      if (isAlive(holder)) {
        throw new TollgateError(
          'TG_ERR_CONFIGURATION',
          `another Tollgate server (pid ${holder}) is already serving from the data directory ${dataDirectory}; two servers on one SQLite directory would each enforce every limit on its own. Stop it, or run several nodes on PostgreSQL and Redis (docs/guides/scale-out.md). If no such server runs, remove ${file}`,
        );
      }
      // A stale lock (its process is gone): take it over, unless another starter just did.
      try {
        if (Number(readFileSync(file, 'utf8').trim()) === holder || Number.isNaN(holder)) unlinkSync(file);
      } catch {
        // another starter took it over first: try again
      }
      continue;
    }
    writeSync(descriptor, `${process.pid}\n`);
    closeSync(descriptor);
    let released = false;
    return {
      file,
      release() {
        if (released) return;
        released = true;
        try {
          if (Number(readFileSync(file, 'utf8').trim()) === process.pid) unlinkSync(file);
        } catch {
          // already gone
        }
      },
    };
  }
  throw new TollgateError('TG_ERR_CONFIGURATION', `could not take the lock ${file}`);
}
