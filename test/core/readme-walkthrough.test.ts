/**
 * The README's "Five minutes with curl" runs as written: the block between the walkthrough markers is executed with
 * bash against a real `tollgate serve` whose openai provider points at a fake upstream
 * (`TOLLGATE_PROVIDER_OPENAI_BASE_URL`). Only the port is changed, to a free one.
 */
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeUpstream, respondChunks, respondJson, sseEvents } from '../support/fake-upstream';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

function walkthroughScript(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- walkthrough:start -->\s*```sh\n([\s\S]*?)```\s*<!-- walkthrough:end -->/.exec(readme);
  if (!block) throw new Error('README.md has no walkthrough block');
  return block[1]!;
}

describe('README walkthrough', () => {
  let upstream: FakeUpstream;
  let cwd: string;
  let server: ChildProcess | undefined;

  before(async () => {
    const curl = spawnSync('curl', ['--version']);
    if (curl.error) throw new Error('curl is required for the README walkthrough test (apt-get install curl)');
    upstream = await FakeUpstream.start();
    cwd = mkdtempSync(path.join(os.tmpdir(), 'tollgate-readme-'));
  });
  after(async () => {
    server?.kill('SIGTERM');
    await upstream.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('creates an app, stores the key, attests a simulator, calls and streams OpenAI through the gateway', async () => {
    upstream.on(
      (request) => request.body.toString().includes('"stream":true'),
      respondChunks(sseEvents([{ choices: [{ delta: { content: 'Hi' } }] }, { choices: [{ delta: { content: '!' } }] }])),
    );
    upstream.respond(respondJson(200, { id: 'chatcmpl-readme', choices: [{ message: { role: 'assistant', content: 'Hello from the fake upstream' } }] }));

    server = spawn(process.execPath, [CLI, 'serve'], {
      cwd,
      env: { PATH: process.env.PATH ?? '', TOLLGATE_PORT: '0', TOLLGATE_PROVIDER_OPENAI_BASE_URL: upstream.url },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let banner = '';
    const url = await new Promise<string>((resolve, reject) => {
      server!.stderr!.on('data', (chunk: Buffer) => {
        banner += chunk.toString();
        const match = /listening on (http:\/\/\S+)[\s\S]*Get started/.exec(banner);
        if (match) resolve(match[1]!);
      });
      server!.once('exit', (code) => reject(new Error(`serve exited ${code}: ${banner}`)));
    });

    // The banner says where the dashboard is and how to sign in: on first run, a one-time set-up link that works.
    expect(banner).to.include(`dashboard:  ${url}/dashboard/`);
    const setupLink = new RegExp(`${url.replace(/[.]/g, '\\.')}/dashboard/setup#token=(su_[0-9A-Za-z]{43})`).exec(banner);
    expect(setupLink, banner).to.not.equal(null);
    expect((await fetch(`${url}/dashboard/setup`)).status).to.equal(200);
    const setup = await fetch(`${url}/v1/admin/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ setupToken: setupLink![1], username: 'owner', password: 'a long enough password' }),
    });
    expect(setup.status).to.equal(201);

    // `npx tollgate` in a checkout runs the package's own bin; here the shim does the same for the temp directory.
    const shims = path.join(cwd, 'shims');
    require('node:fs').mkdirSync(shims);
    writeFileSync(path.join(shims, 'npx'), `#!/bin/sh\n[ "$1" = tollgate ] && shift\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(path.join(shims, 'npx'), 0o755);
    const script = walkthroughScript().replaceAll('http://127.0.0.1:8080', url);
    // Asynchronous on purpose: the fake upstream lives in this process and must keep answering while bash runs.
    const result = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('bash', ['--norc', '--noprofile', '-euo', 'pipefail', '-c', script], {
        cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { PATH: `${shims}:${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('close', (status) => resolve({ status, stdout, stderr }));
    });
    expect(result.status, result.stderr).to.equal(0);
    expect(result.stdout).to.include('Hello from the fake upstream');
    expect(result.stdout).to.include('data: {"choices":[{"delta":{"content":"Hi"}}]}').and.include('data: [DONE]');
    expect(upstream.requests).to.have.length(2);
    for (const request of upstream.requests) expect(request.headers.authorization).to.equal('Bearer sk-demo-not-a-real-key');
  });
});
