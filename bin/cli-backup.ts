/**
 * `tollgate backup --out FILE [--with-history]` and `tollgate restore --in FILE [--replace]` (core/storage/backup.ts):
 * a logical copy that moves a gateway between databases (SQLite → PostgreSQL, a rebuilt node) with every app token,
 * device token and admin key still working. The target runs with the source's master key.
 */
import { restoreBackup, writeBackup, type BackupSummary } from '../core/storage/backup';
import type { GatewayCore } from '../core/server/gateway';

export interface BackupOptions {
  readonly out?: string | undefined;
  readonly in?: string | undefined;
  readonly 'with-history'?: boolean | undefined;
  readonly replace?: boolean | undefined;
}

export function backup(core: GatewayCore, options: BackupOptions, gatewayVersion: string): Promise<BackupSummary> {
  if (!options.out) throw new RangeError('--out FILE is required (the file must not exist yet)');
  return writeBackup(core.database, { file: options.out, masterKey: core.masterKey.key, gatewayVersion, withHistory: options['with-history'] === true });
}

export function restore(core: GatewayCore, options: BackupOptions): Promise<BackupSummary> {
  if (!options.in) throw new RangeError('--in FILE is required');
  return restoreBackup(core.database, { file: options.in, masterKey: core.masterKey.key, replace: options.replace === true });
}
