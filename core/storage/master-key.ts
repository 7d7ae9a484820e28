/**
 * The master key that encrypts secrets at rest (operations.md): `TOLLGATE_MASTER_KEY` (base64 of 32 bytes) or
 * `TOLLGATE_MASTER_KEY_FILE`; outside production, generated once into the data directory with mode 0600.
 * Production refuses to start without one, so that secrets are never encrypted under a key lying next to the database.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { TollgateError } from '../contract';
import type { Configuration } from '../configuration/configuration';

export const MASTER_KEY_FILE_NAME = 'master.key';

function decode(text: string, origin: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) {
    throw new TollgateError('TG_ERR_MASTER_KEY', `${origin} must be 32 bytes encoded in base64 (got ${key.length} bytes)`);
  }
  return key;
}

/** The master key and where it came from (for the boot message; never the key itself). */
export interface MasterKey {
  readonly key: Buffer;
  readonly origin: string;
  readonly generated: boolean;
}

/** Resolves the master key, generating one outside production when none is configured. */
export function resolveMasterKey(configuration: Configuration): MasterKey {
  if (configuration.masterKey) return { key: decode(configuration.masterKey, 'TOLLGATE_MASTER_KEY'), origin: 'TOLLGATE_MASTER_KEY', generated: false };
  if (configuration.masterKeyFile) {
    let text: string;
    try {
      text = readFileSync(configuration.masterKeyFile, 'utf8');
    } catch (error) {
      throw new TollgateError('TG_ERR_MASTER_KEY', `TOLLGATE_MASTER_KEY_FILE cannot be read: ${(error as Error).message}`);
    }
    return { key: decode(text, 'TOLLGATE_MASTER_KEY_FILE'), origin: configuration.masterKeyFile, generated: false };
  }
  if (configuration.production) {
    throw new TollgateError(
      'TG_ERR_MASTER_KEY',
      'production requires TOLLGATE_MASTER_KEY or TOLLGATE_MASTER_KEY_FILE (32 random bytes, base64: `openssl rand -base64 32`)',
    );
  }
  const file = path.join(configuration.dataDirectory, MASTER_KEY_FILE_NAME);
  if (existsSync(file)) {
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
    return { key: decode(readFileSync(file, 'utf8'), file), origin: file, generated: false };
  }
  mkdirSync(configuration.dataDirectory, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  // `wx`: never overwrite a key another process just wrote (two commands racing on a fresh data directory).
  try {
    writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return { key: decode(readFileSync(file, 'utf8'), file), origin: file, generated: false };
    throw error;
  }
  return { key, origin: file, generated: true };
}
