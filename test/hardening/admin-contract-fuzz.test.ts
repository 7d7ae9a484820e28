/**
 * Contract fuzzing of the management API: schemathesis (from PyPI, installed by .ci/python-tools into .ci/.venv, here
 * when .ci/run has not) generates requests from /v1/admin/openapi.json — examples, coverage, fuzzing and stateful
 * sequences — against a real gateway and checks that no answer is a 5xx, and that every status, content type and body
 * matches the document.
 */
import { expect } from 'chai';
import { requireTool } from '../support/services';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function runs(command: string): boolean {
  return spawnSync(command, ['--version'], { encoding: 'utf8' }).status === 0;
}

/**
 * schemathesis's `st`: TOLLGATE_SCHEMATHESIS when set; else the project's pinned copy, which .ci/python-tools sets up
 * (at once when .ci/run did, or a copied checkout's own again) and prints the path of; else an `st` on the PATH.
 */
function schemathesis(): string | null {
  const chosen = process.env.TOLLGATE_SCHEMATHESIS;
  if (chosen) return runs(chosen) ? chosen : null;
  const tools = spawnSync('bash', [path.join(ROOT, '.ci', 'python-tools')], { encoding: 'utf8', timeout: 8 * 60 * 1000 });
  if (tools.status !== 0) process.stderr.write(`.ci/python-tools failed: ${tools.stderr.slice(-2000)}\n`);
  const pinned = tools.status === 0 ? tools.stdout.trim().split('\n').pop() : undefined;
  if (pinned && existsSync(pinned) && runs(pinned)) return pinned;
  return runs('st') ? 'st' : null;
}

describe('management API contract fuzzing (schemathesis)', function () {
  this.timeout(10 * 60 * 1000);
  let gateway: TestGateway;
  let upstream: FakeUpstream;
  let st: string | null;

  before(async function () {
    st = schemathesis();
    requireTool(this, st !== null, 'schemathesis is missing and .ci/python-tools could not install it (python3 with its venv module, and PyPI, are needed)');
    // "Test this key" (POST …/secrets/openai/test) reaches this loopback fake, never the real provider.
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  it('finds no 5xx and no answer that breaks the OpenAPI document', async () => {
    const { adminKey } = await gateway.gateway.management.createAdminKey({ name: 'schemathesis' });
    // Something for the per-app routes to find.
    const app = await gateway.createApp({});
    await gateway.setSecret(app.appId, 'openai', 'sk-fuzz-0000000000000000');
    const args = [
      'run',
      `${gateway.url}/v1/admin/openapi.json`,
      '--header',
      `Authorization: Bearer ${adminKey}`,
      '--checks',
      'not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance',
      '--max-examples',
      process.env.TOLLGATE_FUZZ_EXAMPLES ?? '15',
      '--seed',
      process.env.TOLLGATE_FUZZ_SEED ?? '20261123',
      '--workers',
      '1',
    ];
    // schemathesis (and hypothesis under it) keep a cache in their working directory: a temporary one, so that the run
    // leaves nothing in the project tree (`git status` stays clean).
    const workingDirectory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-schemathesis-'));
    const output = await new Promise<{ status: number | null; text: string }>((resolve) => {
      // Asynchronous: the gateway under test runs in this process and must keep answering.
      const child = spawn(st!, args, { cwd: workingDirectory, env: { ...process.env, NO_COLOR: '1' } });
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.once('close', (status) => resolve({ status, text }));
    }).finally(() => rmSync(workingDirectory, { recursive: true, force: true }));
    expect(output.status, output.text.slice(-6000)).to.equal(0);
    const generated = /(\d+) generated, (\d+) passed/.exec(output.text);
    expect(generated, output.text.slice(-2000)).to.not.equal(null);
    expect(Number(generated![1])).to.be.greaterThan(500);
    expect(generated![1]).to.equal(generated![2]);
    expect(gateway.logText()).to.not.include('sk-fuzz-0000000000000000');
  });
});
