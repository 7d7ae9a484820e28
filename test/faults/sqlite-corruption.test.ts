/**
 * A corrupted SQLite file (pages overwritten on disk, as a failing disk or a bad copy leaves them): the server refuses
 * to start, naming the file and saying it is corrupted, instead of serving from the pages that still read.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { CLI } from '../support/nodes';

describe('a corrupted SQLite database at boot', function () {
  this.timeout(60_000);

  it('is refused with a clear message (quick_check), and serve exits non-zero', async () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-corrupt-'));
    try {
      const env = { TOLLGATE_DATA_DIR: directory, TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'), TOLLGATE_ENV: 'development', TOLLGATE_LOG_LEVEL: 'warn' };
      const core = await createGatewayCore({ env, workingDirectory: directory });
      for (let index = 0; index < 200; index += 1) await core.management.createApp({ name: `App ${index}` });
      await core.database.raw('PRAGMA wal_checkpoint(TRUNCATE)');
      await core.close();
      const file = path.join(directory, 'tollgate.db');
      const size = statSync(file).size;
      // Every page but the first (the header and schema) overwritten in its middle.
      const descriptor = openSync(file, 'r+');
      for (let offset = 4096 + 1024; offset < size; offset += 4096) writeSync(descriptor, randomBytes(512), 0, 512, offset);
      closeSync(descriptor);

      const result = spawnSync(process.execPath, [CLI, 'serve'], { env: { PATH: process.env.PATH ?? '', ...env, TOLLGATE_PORT: '0' }, encoding: 'utf8', timeout: 30_000 });
      expect(result.status).to.not.equal(0);
      expect(result.stderr).to.include(`the SQLite database ${file} is corrupted`);
      expect(result.stderr).to.not.include('listening on');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
