/**
 * A power cut 0.1 s after an acknowledged revocation, on SQLite.
 *
 * How the cut is modelled, and why it is honest: the data directory is an ext4 file system on a loop device (its
 * journal committed every 60 s, `commit=60`, so the file system's own periodic commit cannot happen to save the
 * change). 0.1 s after the gateway answered 200 to "revoke every device token", the gateway is frozen (SIGSTOP, so it
 * issues nothing more) and the loop device's backing file is copied: the copy holds exactly what the kernel had
 * handed to the block device by then, and nothing of what was still only in the file system's page cache, which is
 * what a machine that loses power keeps. The copy is then mounted (ext4 replays its journal) and the database opened
 * (SQLite replays its WAL), as after a reboot. Killing the process (even with the page cache dropped) would not be a
 * power cut: the kernel writes dirty pages back whatever happens to the process.
 * Not modelled: a disk that acknowledges a flush it has not done (a volatile write cache that lies).
 *
 * The same cut with `TOLLGATE_SQLITE_SYNCHRONOUS=normal` loses the revocation: the model sees what it must see.
 */
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** better-sqlite3 (no type package installed): only what this test calls. */
type SqliteDatabase = { prepare(sql: string): { get(...parameters: unknown[]): unknown }; close(): void };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Database = require('better-sqlite3') as new (file: string) => SqliteDatabase;
import { createGatewayCore } from '../../core/server/gateway';
import { serveNode } from '../support/nodes';
import { requireTool } from '../support/services';

interface Volume {
  readonly image: string;
  readonly mountPoint: string;
  readonly device: string;
}

function attach(image: string, mountPoint: string, options = 'commit=60'): Volume {
  const device = execFileSync('losetup', ['-f', '--show', image], { encoding: 'utf8' }).trim();
  mkdirSync(mountPoint, { recursive: true });
  try {
    execFileSync('mount', ['-o', options, device, mountPoint]);
  } catch (error) {
    spawnSync('losetup', ['-d', device]);
    throw error;
  }
  return { image, mountPoint, device };
}

function detach(volume: Volume): void {
  spawnSync('umount', [volume.mountPoint]);
  spawnSync('losetup', ['-d', volume.device]);
}

/** Whether this machine lets the test make and mount a loop device (root with loop devices, as here). */
function loopDevicesWork(directory: string): boolean {
  const image = path.join(directory, 'probe.img');
  try {
    execFileSync('truncate', ['-s', '8M', image]);
    execFileSync('mkfs.ext4', ['-q', '-F', image]);
    detach(attach(image, path.join(directory, 'probe')));
    return true;
  } catch {
    return false;
  } finally {
    rmSync(image, { force: true });
  }
}

/** Revokes every device of an app on a served node, cuts the power 0.1 s after the 200, answers what the copy holds. */
async function revokeThenCut(directory: string, synchronous: 'full' | 'normal'): Promise<{ acknowledged: number; storedCutOff: number; auditEntries: number }> {
  const image = path.join(directory, `${synchronous}.img`);
  execFileSync('truncate', ['-s', '64M', image]);
  execFileSync('mkfs.ext4', ['-q', '-F', image]);
  const volume = attach(image, path.join(directory, `${synchronous}-mounted`));
  const dataDirectory = path.join(volume.mountPoint, 'data');
  const env = { TOLLGATE_DATA_DIR: dataDirectory, TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'), TOLLGATE_ENV: 'development', TOLLGATE_SQLITE_SYNCHRONOUS: synchronous, TOLLGATE_LOG_LEVEL: 'warn' };
  let node: Awaited<ReturnType<typeof serveNode>> | undefined;
  try {
    const core = await createGatewayCore({ env, workingDirectory: dataDirectory });
    const app = await core.management.createApp({ name: 'Power cut' });
    const { adminKey } = await core.management.createAdminKey({ name: 'ops' });
    await core.close();
    node = await serveNode({ ...env, TOLLGATE_HOST: '127.0.0.1' });
    // Everything before the revocation is on the device: only the revocation's own durability is in question.
    execFileSync('sync');
    const response = await fetch(`${node.url}/v1/admin/apps/${app.id}/devices/revoke-all`, { method: 'POST', headers: { authorization: `Bearer ${adminKey}` } });
    expect(response.status).to.equal(200);
    const acknowledged = Date.parse(((await response.json()) as { revokedBefore: string }).revokedBefore);
    await new Promise((resolve) => setTimeout(resolve, 100));
    node.child.kill('SIGSTOP');
    // The power cut: what the block device holds now.
    const snapshot = path.join(directory, `${synchronous}-after-cut.img`);
    copyFileSync(image, snapshot);
    node.child.kill('SIGKILL');
    detach(volume);

    const rebooted = attach(snapshot, path.join(directory, `${synchronous}-rebooted`), 'rw');
    try {
      const database = new Database(path.join(rebooted.mountPoint, 'data', 'tollgate.db'));
      try {
        const row = database.prepare('select devices_revoked_before as cutOff from apps where id = ?').get(app.id) as { cutOff: number };
        const audit = database.prepare("select count(*) as entries from audit_log where action = 'admin.device.revoke_all'").get() as { entries: number };
        return { acknowledged, storedCutOff: Number(row.cutOff), auditEntries: audit.entries };
      } finally {
        database.close();
      }
    } finally {
      detach(rebooted);
    }
  } finally {
    node?.child.kill('SIGKILL');
    detach(volume);
  }
}

describe('SQLite: a power cut 0.1 s after an acknowledged revocation', function () {
  this.timeout(120_000);
  let directory: string;

  before(function () {
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-power-'));
    requireTool(this, loopDevicesWork(directory), 'loop devices and mount (root with /dev/loop-control) to cut the power under SQLite');
  });
  after(() => rmSync(directory, { recursive: true, force: true }));

  it('keeps the revocation and its audit entry (synchronous=FULL, the default)', async () => {
    const outcome = await revokeThenCut(directory, 'full');
    expect(outcome.storedCutOff).to.equal(outcome.acknowledged);
    expect(outcome.auditEntries).to.equal(1);
  });

  it('the same cut with synchronous=NORMAL loses it: the model catches a lost acknowledgement', async () => {
    const outcome = await revokeThenCut(directory, 'normal');
    expect(outcome.storedCutOff).to.equal(0);
    expect(outcome.auditEntries).to.equal(0);
  });
});
