/**
 * Crash safety: SIGKILL in the middle of a burst of app and secret writes. After restart every acknowledged write is
 * present and readable (secrets decrypt to the acknowledged value), nothing half-written is visible, and SQLite's
 * integrity_check passes.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { CachedDirectory } from '../../core/storage/cached-directory';

describe('crash safety (SIGKILL during writes)', () => {
  let cwd: string;
  before(() => {
    cwd = mkdtempSync(path.join(os.tmpdir(), 'tollgate-crash-'));
  });
  after(() => rmSync(cwd, { recursive: true, force: true }));

  it('keeps every acknowledged write and a consistent database', async () => {
    const env = { PATH: process.env.PATH ?? '', TOLLGATE_DATA_DIR: path.join(cwd, 'data'), TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'), TOLLGATE_LOG_LEVEL: 'error' };
    const writer = spawn(process.execPath, [path.resolve(__dirname, '..', 'support', 'crash-writer.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    const acknowledgedApps = new Set<string>();
    const acknowledgedSecrets = new Map<string, string>();
    let buffer = '';
    await new Promise<void>((resolve) => {
      writer.stdout!.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split('\n');
        buffer = lines.pop()!;
        for (const line of lines) {
          const [kind, id, value] = line.split(' ');
          if (kind === 'app') acknowledgedApps.add(id!);
          if (kind === 'secret') acknowledgedSecrets.set(id!, value!);
        }
        if (acknowledgedSecrets.size >= 40 && writer.exitCode === null && !writer.killed) writer.kill('SIGKILL');
      });
      writer.once('exit', () => resolve());
    });
    expect(acknowledgedSecrets.size).to.be.at.least(40);

    const core = await createGatewayCore({ env, workingDirectory: cwd });
    try {
      const integrity = (await core.database.raw('PRAGMA integrity_check')) as Array<{ integrity_check: string }>;
      expect(integrity[0]!.integrity_check).to.equal('ok');
      const apps = new Map((await core.management.listApps()).map((app) => [app.id, app]));
      for (const id of acknowledgedApps) expect(apps.has(id), `acknowledged app ${id} lost`).to.equal(true);
      const directory = new CachedDirectory(core.database, core.cipher, { pollIntervalMs: 60_000, onError: () => undefined });
      for (const [appId, value] of acknowledgedSecrets) {
        const secret = await directory.findSecret(appId, 'openai');
        expect(secret?.value.reveal(), `acknowledged secret of ${appId}`).to.equal(value);
      }
      // Every secret row that exists, acknowledged or not, is whole: it decrypts under the master key.
      for (const app of apps.values()) {
        for (const listed of await core.management.listSecrets(app.id)) {
          const secret = await directory.findSecret(app.id, listed.provider);
          expect(secret?.value.reveal()).to.match(/^sk-crash-\d+-x{32}$/);
        }
      }
    } finally {
      await core.close();
    }
  });
});
