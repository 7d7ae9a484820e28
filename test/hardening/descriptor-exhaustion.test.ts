/**
 * Issue 16's reproduction, as a test: a gateway process limited to 300 file descriptors (`ulimit -n 300`) faces 300
 * clients that trickle request bodies (one byte every 200 ms) to `/v1/attest/development`, `/mcp` and
 * `/v1/admin/session`, and reconnect as soon as they are cut off, for as long as the test runs. Before the fix they held
 * every descriptor and `/healthz` failed for as long as they wished; now they are cut off by the body deadlines or
 * refused before their body is read, so `/healthz` answers 200 while they are still at it.
 *
 * No timing is asserted: the test waits (within mocha's timeout) for a 200 from `/healthz` while every attacker is still
 * running, and checks that the attackers were really served and really cut off.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { head, openRaw } from '../support/raw-socket';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');
const CLIENTS = 300;

function healthz(url: string): Promise<number> {
  return new Promise((resolve) => {
    const request = http.get(`${url}/healthz`, { agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
      response.on('error', () => resolve(0));
    });
    request.on('error', () => resolve(0));
    request.setTimeout(2000, () => request.destroy());
  });
}

describe('300 trickling clients against a gateway with 300 file descriptors', function () {
  this.timeout(90_000);
  let cwd: string;
  let child: ChildProcess | undefined;

  after(() => {
    child?.kill('SIGKILL');
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('keeps /healthz answering 200 while they trickle', async () => {
    cwd = mkdtempSync(path.join(os.tmpdir(), 'tollgate-fds-'));
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      TOLLGATE_DATA_DIR: path.join(cwd, 'data'),
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_LOG_LEVEL: 'warn',
    };
    const core = await createGatewayCore({ env, workingDirectory: cwd });
    const app = await core.management.createApp({ name: 'fds', allowDevelopmentAttestation: true });
    const { adminKey } = await core.management.createAdminKey({ name: 'fds' });
    await core.close();

    child = spawn('bash', ['-c', `ulimit -n ${CLIENTS} && exec "${process.execPath}" "${CLI}" serve`], {
      env: { ...env, TOLLGATE_PORT: '0', TOLLGATE_REQUEST_TIMEOUT_MS: '1000', TOLLGATE_BODY_IDLE_TIMEOUT_MS: '600' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let text = '';
      child!.stderr!.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(text);
        if (match) resolve(match[1]!);
      });
      child!.once('exit', (code) => reject(new Error(`serve exited ${code}: ${text}`)));
    });
    expect(await healthz(url)).to.equal(200);
    const host = new URL(url).host;
    const targets: Array<[string, Record<string, string>]> = [
      ['/v1/attest/development', { 'Tollgate-App-Token': app.appToken }],
      ['/mcp', { Authorization: `Bearer ${adminKey}`, Accept: 'application/json, text/event-stream' }],
      ['/v1/admin/session', {}],
    ];

    let running = true;
    const stats = { connected: 0, cutWhileTrickling: 0, answered: 0 };
    const attacker = async (index: number) => {
      const [target, headers] = targets[index % targets.length]!;
      while (running) {
        try {
          const client = await openRaw(url);
          stats.connected += 1;
          client.socket.write(head('POST', target, { Host: host, 'Content-Type': 'application/json', 'Content-Length': 10_000, ...headers }));
          client.socket.write('{"x":"');
          const trickle = client.trickle(200);
          const stopper = setInterval(() => {
            if (!running) client.socket.destroy();
          }, 100);
          const received = await client.closed;
          clearInterval(stopper);
          if (received.startsWith('HTTP/1.1 ')) stats.answered += 1;
          if (running && trickle.written() > 0) stats.cutWhileTrickling += 1;
        } catch {
          // refused at accept (descriptors exhausted): try again, as an attacker would
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const attackers = Array.from({ length: CLIENTS }, (_, index) => attacker(index));

    // Wait until the attackers fill the server and the deadlines have cut some of them off while they were still
    // sending; then /healthz must answer 200 while every attacker keeps going.
    while (stats.connected < CLIENTS || stats.cutWhileTrickling === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    let status = 0;
    let attempts = 0;
    while (status !== 200) {
      attempts += 1;
      status = await healthz(url);
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    running = false;
    await Promise.all(attackers);

    expect(status).to.equal(200);
    expect(attempts).to.be.at.least(1);
    // The attackers were really there, got answers (408 or a cheap refusal), and were cut off by the server while still
    // sending (the test never closed them before it ended).
    expect(stats.connected).to.be.at.least(CLIENTS);
    expect(stats.cutWhileTrickling).to.be.greaterThan(0);
    expect(stats.answered).to.be.greaterThan(0);
    expect(child.exitCode).to.equal(null);
  });
});
