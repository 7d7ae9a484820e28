/**
 * The log destination fails under a running gateway: stdout is a file on a full volume (a 64 KiB tmpfs, `ENOSPC`) or
 * a file past the process's file-size limit (`ulimit -f`, `EFBIG`). The gateway keeps serving every request, counts
 * the lines it could not write (`tollgate_log_lines_dropped_total`), and once space returns (the volume emptied, the
 * limit raised with prlimit) writes again, first a line saying how many were dropped and why.
 */
import { expect } from 'chai';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rawRequest } from '../support/http';
import { metricSample } from '../support/metrics';
import { CLI } from '../support/nodes';
import { requireTool } from '../support/services';

const CHAT = '/v1/proxy/openai/v1/chat/completions';

/** Starts `tollgate serve` with stdout on `logFile` (opened for append), through `sh -c` so that `ulimit` applies. */
async function serveWithStdout(logFile: string, dataDirectory: string, fileSizeLimitBlocks?: number): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const stdout = openSync(logFile, 'a');
  const limit = fileSizeLimitBlocks === undefined ? '' : `ulimit -S -f ${fileSizeLimitBlocks}; `;
  const child = spawn('sh', ['-c', `${limit}exec "${process.execPath}" "${CLI}" serve`], {
    env: {
      PATH: process.env.PATH ?? '',
      TOLLGATE_PORT: '0',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_ENV: 'development',
      TOLLGATE_DATA_DIR: dataDirectory,
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', stdout, 'pipe'],
  });
  closeSync(stdout);
  let text = '';
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(text);
      if (match) resolve({ child, url: match[1]!, stderr: () => text });
    });
    child.once('exit', (code, signal) => reject(new Error(`serve exited ${code ?? signal}: ${text}`)));
  });
}

/** Fires `count` requests (each makes an access line) and answers their statuses. */
async function fire(url: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let batch = 0; batch < count; batch += 20) {
    const responses = await Promise.all(Array.from({ length: Math.min(20, count - batch) }, () => rawRequest(url, { method: 'POST', path: CHAT, headers: { 'content-type': 'application/json' }, body: '{}' })));
    statuses.push(...responses.map((response) => response.status));
  }
  return statuses;
}

async function dropped(url: string): Promise<number> {
  return metricSample(await (await fetch(`${url}/metrics`)).text(), 'tollgate_log_lines_dropped_total');
}

/** Waits until `condition` holds (the writer flushes its batch within a second). */
async function eventually(condition: () => boolean | Promise<boolean>, what: string, waitMs = 10_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${waitMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function notices(logFile: string): Array<{ dropped: number; cause: string }> {
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('log lines were dropped'))
    .map((line) => JSON.parse(line) as { dropped: number; cause: string });
}

describe('a log volume that cannot be written', function () {
  this.timeout(90_000);
  let directory: string;

  beforeEach(() => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-logs-'));
  });
  afterEach(() => {
    spawnSync('umount', ['-l', path.join(directory, 'volume')]);
    rmSync(directory, { recursive: true, force: true });
  });

  it('ENOSPC (stdout on a full 64 KiB tmpfs): keeps serving, counts dropped lines, writes again when space returns', async function () {
    const volume = path.join(directory, 'volume');
    mkdirSync(volume);
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', volume]).status === 0;
    requireTool(this, mounted, 'mounting a tmpfs (root, or a container allowing mount) for a full log volume');
    const logFile = path.join(volume, 'gateway.log');
    const filler = path.join(volume, 'filler');
    const node = await serveWithStdout(logFile, path.join(directory, 'data'));
    try {
      await eventually(() => statSync(logFile).size > 0, 'the boot lines are written');
      // The volume full: every byte left taken by another file.
      try {
        writeFileSync(filler, Buffer.alloc(64 * 1024, 0x2e));
      } catch {
        // ENOSPC once full, as intended.
      }
      const sizeWhenFull = statSync(logFile).size;
      const statuses = await fire(node.url, 400);
      expect(statuses.every((status) => status === 401), `statuses: ${[...new Set(statuses)].join(',')}`).to.equal(true);
      await eventually(async () => (await dropped(node.url)) >= 300, 'at least 300 lines counted as dropped');
      expect(node.child.exitCode).to.equal(null);
      expect(statSync(logFile).size).to.be.at.most(sizeWhenFull + 4096);

      // Space returns: the next batch is written, led by a line saying what was dropped.
      const droppedWhileFull = await dropped(node.url);
      rmSync(filler);
      expect(await fire(node.url, 20)).to.deep.equal(Array(20).fill(401));
      await eventually(() => notices(logFile).length > 0, 'the notice of dropped lines is written');
      const [notice] = notices(logFile);
      expect(notice!.cause).to.equal('ENOSPC');
      // The notice counts what was dropped until it could be written, the metric as much (both count the same lines).
      expect(notice!.dropped).to.equal(droppedWhileFull);
      expect(await dropped(node.url)).to.equal(droppedWhileFull);
      await eventually(() => readFileSync(logFile, 'utf8').split('\n').filter((line) => line.includes('"msg":"request"')).length > 0, 'access lines are written again');
      expect(node.child.exitCode).to.equal(null);
    } finally {
      node.child.kill('SIGKILL');
    }
  });

  it('EFBIG (stdout past ulimit -f): keeps serving, counts dropped lines, writes again once the limit is raised', async function () {
    requireTool(this, spawnSync('prlimit', ['--version']).status === 0, 'prlimit (util-linux) to raise the file-size limit of the running node');
    const logFile = path.join(directory, 'gateway.log');
    // The limit applies to every file the process writes (the database too): 8 MiB (ulimit -f counts 1024-byte blocks),
    // with the log already 4 KiB short of it, so the boot lines fit and the traffic's do not.
    const LIMIT_BLOCKS = 8192;
    writeFileSync(logFile, `${'.'.repeat(1023)}\n`.repeat(LIMIT_BLOCKS - 4));
    const node = await serveWithStdout(logFile, path.join(directory, 'data'), LIMIT_BLOCKS);
    try {
      const statuses = await fire(node.url, 400);
      expect(statuses.every((status) => status === 401)).to.equal(true);
      await eventually(async () => (await dropped(node.url)) > 0, 'lines counted as dropped');
      expect(node.child.exitCode).to.equal(null);
      expect(statSync(logFile).size).to.be.at.most(LIMIT_BLOCKS * 1024);

      // Only the soft limit was lowered, so an unprivileged process may raise it again.
      execFileSync('prlimit', ['--pid', String(node.child.pid), '--fsize=unlimited:']);
      await fire(node.url, 20);
      await eventually(() => notices(logFile).length > 0, 'the notice of dropped lines is written');
      expect(notices(logFile)[0]!.cause).to.equal('EFBIG');
      expect(notices(logFile)[0]!.dropped).to.be.greaterThan(0);
      expect(node.child.exitCode).to.equal(null);
    } finally {
      node.child.kill('SIGKILL');
    }
  });
});
