/**
 * Two servers on one SQLite data directory from separate PID namespaces (`unshare --pid --fork`, as two containers on
 * one volume): each is PID 1 in its namespace. The PID-file lock took the other's file for its own and both served;
 * the kernel-held lock refuses the second, frees itself when the first is killed with SIGKILL, and a read-only data
 * directory is named as such.
 */
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI } from '../support/nodes';
import { requireTool } from '../support/services';

function serveInNamespace(env: Record<string, string>): { child: ChildProcess; listening: Promise<string>; exited: Promise<{ code: number | null; output: string }> } {
  const child = spawn('unshare', ['--pid', '--fork', '--kill-child', process.execPath, CLI, 'serve'], { env: { PATH: process.env.PATH ?? '', ...env, TOLLGATE_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const listening = new Promise<string>((resolve) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
  });
  child.stdout!.on('data', () => undefined);
  const exited = new Promise<{ code: number | null; output: string }>((resolve) => child.once('exit', (code) => resolve({ code, output })));
  return { child, listening, exited };
}

describe('the SQLite data directory lock across PID namespaces', function () {
  this.timeout(60_000);
  let directory: string;
  before(function () {
    requireTool(this, spawnSync('unshare', ['--pid', '--fork', 'true']).status === 0, 'unshare --pid (root, or user namespaces) for separate PID namespaces');
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-namespaces-'));
  });
  after(() => rmSync(directory, { recursive: true, force: true }));

  it('refuses a second server that is PID 1 too, and lets one start once the holder is killed', async () => {
    const env = { TOLLGATE_DATA_DIR: directory, TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'), TOLLGATE_LOG_LEVEL: 'warn', TOLLGATE_HOST: '127.0.0.1' };
    const first = serveInNamespace(env);
    const url = await first.listening;
    const second = serveInNamespace(env);
    const refused = await Promise.race([second.exited, second.listening.then(() => ({ code: -1, output: 'the second server is serving' }))]);
    expect(refused.code, refused.output).to.equal(1);
    expect(refused.output).to.include('another Tollgate server (pid 1 on host');
    expect(refused.output).to.include(`is already serving from the data directory ${directory}`);
    expect((await fetch(`${url}/healthz`)).status).to.equal(200);

    first.child.kill('SIGKILL');
    await first.exited;
    const third = serveInNamespace(env);
    const thirdUrl = await Promise.race([third.listening, third.exited.then(({ output }) => Promise.reject(new Error(output)))]);
    expect((await fetch(`${thirdUrl}/healthz`)).status).to.equal(200);
    third.child.kill('SIGKILL');
    await third.exited;
  });

  it('names a read-only data directory as such', async function () {
    requireTool(this, process.getuid?.() !== 0 || spawnSync('runuser', ['-u', 'nobody', '--', 'true']).status === 0, 'runuser to drop root (root ignores file modes)');
    const readOnly = mkdtempSync(path.join(os.tmpdir(), 'tollgate-readonly-'));
    try {
      chmodSync(readOnly, 0o555);
      const asRoot = process.getuid?.() === 0;
      const [command, args] = asRoot ? ['runuser', ['-u', 'nobody', '--', process.execPath, CLI, 'serve']] : [process.execPath, [CLI, 'serve']];
      const result = spawnSync(command, args as string[], { env: { PATH: process.env.PATH ?? '', TOLLGATE_DATA_DIR: readOnly, TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'), TOLLGATE_PORT: '0' }, encoding: 'utf8', timeout: 30_000 });
      expect(result.status).to.not.equal(0);
      expect(result.stderr).to.match(new RegExp(`the data directory ${readOnly.replace(/[/.]/g, '\\$&')} cannot be written`));
    } finally {
      rmSync(readOnly, { recursive: true, force: true });
    }
  });
});
