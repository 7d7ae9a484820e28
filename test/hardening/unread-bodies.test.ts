/**
 * Connections whose body a route never reads. `/healthz`, `/metrics`, `/dashboard/`, `POST /v1/attest/challenge`,
 * admin GETs and unknown routes answer without reading a body; the connection must not outlive that answer while the
 * client trickles the rest of its body (RFC 9112 §9.6: the server says `Connection: close` and closes).
 *
 * The acceptance run: a gateway process limited to 300 descriptors (`ulimit -n 300`) and 300 clients trickling unread
 * bodies to those routes (one byte every 200 ms, reconnecting as soon as they are cut off): `/healthz` still answers
 * 200 while they are at it. No timing is asserted: the test waits (within mocha's timeout) for that 200.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { TestGateway } from '../support/gateway';
import { firstStatus, head, openRaw } from '../support/raw-socket';

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

/** The routes that answer without reading a body, with what each needs to answer. */
function targets(adminKey: string, appToken: string): Array<[string, string, Record<string, string>]> {
  return [
    ['GET', '/healthz', {}],
    ['GET', '/metrics', {}],
    ['GET', '/dashboard/', {}],
    ['POST', '/v1/attest/challenge', { 'Tollgate-App-Token': appToken }],
    ['GET', '/v1/admin/apps', { Authorization: `Bearer ${adminKey}` }],
    ['POST', '/no/such/route', {}],
  ];
}

describe('connections whose body was not read', function () {
  this.timeout(90_000);

  describe('one client per route', () => {
    let gateway: TestGateway;
    let adminKey: string;
    let appToken: string;
    before(async () => {
      gateway = await TestGateway.start();
      adminKey = (await gateway.gateway.management.createAdminKey({ name: 'unread' })).adminKey;
      appToken = (await gateway.createApp()).appToken;
    });
    after(async () => gateway?.close());

    it('answers, says Connection: close and closes the connection while the client is still sending its body', async () => {
      const host = new URL(gateway.url).host;
      for (const [method, target, headers] of targets(adminKey, appToken)) {
        const client = await openRaw(gateway.url);
        client.socket.write(head(method, target, { Host: host, 'Content-Type': 'application/json', 'Content-Length': 10_000, ...headers }));
        client.socket.write('{"x":"');
        const trickle = client.trickle(50);
        // The server closes the connection itself: the test never does.
        const received = await client.closed;
        expect(firstStatus(received), `${method} ${target}`).to.be.greaterThan(0);
        expect(received.split('\r\n\r\n')[0]!.toLowerCase(), `${method} ${target}`).to.include('connection: close');
        expect(trickle.written(), `${method} ${target} was still sending`).to.be.lessThan(10_000);
      }
    });

    it('keeps a connection whose body was read reusable', async () => {
      const host = new URL(gateway.url).host;
      const client = await openRaw(gateway.url);
      const body = JSON.stringify({ name: 'reused' });
      client.socket.write(head('POST', '/v1/admin/apps', { Host: host, Authorization: `Bearer ${adminKey}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }) + body);
      await client.waitFor(/\r\n\r\n\{.*\}$/s);
      expect(client.text().split('\r\n\r\n')[0]!.toLowerCase()).to.include('keep-alive');
      client.socket.write(head('GET', '/healthz', { Host: host }));
      await client.waitFor(/HTTP\/1\.1 [0-9]{3}[\s\S]*HTTP\/1\.1 200/);
      client.socket.destroy();
    });
  });

  describe('a proxied answer that starts before the upload arrived', () => {
    // The provider answers 413 as soon as it has the head (OpenAI documents 413 for a request entity too large,
    // https://platform.openai.com/docs/guides/error-codes), without reading the streamed upload.
    let upstream: http.Server;
    let gateway: TestGateway;
    before(async () => {
      upstream = http.createServer((request, response) => {
        response.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
        response.end(JSON.stringify({ error: { message: 'Request too large', type: 'invalid_request_error' } }));
        request.resume();
      });
      await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
      const port = (upstream.address() as { port: number }).port;
      gateway = await TestGateway.start({ upstreams: { openai: `http://127.0.0.1:${port}` } });
    });
    after(async () => {
      await gateway?.close();
      upstream?.close();
    });

    it('relays the answer with Connection: close and closes the connection while the client is still sending', async () => {
      const device = await gateway.provision({ openai: 'sk-upstream-early-answer' });
      const host = new URL(gateway.url).host;
      const client = await openRaw(gateway.url);
      client.socket.write(head('POST', '/v1/proxy/openai/v1/files', { Host: host, 'Content-Type': 'application/octet-stream', 'Content-Length': 4_000_000, ...device.headers }));
      client.socket.write(Buffer.alloc(64 * 1024, 0x61));
      const trickle = client.trickle(50);
      const received = await client.closed;
      expect(firstStatus(received)).to.equal(413);
      expect(received.split('\r\n\r\n')[0]!.toLowerCase()).to.include('connection: close');
      expect(trickle.written()).to.be.lessThan(4_000_000);
    });
  });

  describe('300 trickling clients against a gateway with 300 file descriptors', () => {
    let cwd: string;
    let child: ChildProcess | undefined;
    after(() => {
      child?.kill('SIGKILL');
      if (cwd) rmSync(cwd, { recursive: true, force: true });
    });

    it('keeps /healthz answering 200 while they trickle', async () => {
      cwd = mkdtempSync(path.join(os.tmpdir(), 'tollgate-unread-'));
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? '',
        TOLLGATE_DATA_DIR: path.join(cwd, 'data'),
        TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
        TOLLGATE_LOG_LEVEL: 'warn',
      };
      const core = await createGatewayCore({ env, workingDirectory: cwd });
      const { adminKey } = await core.management.createAdminKey({ name: 'unread' });
      const { appToken } = await core.management.createApp({ name: 'unread' });
      await core.close();
      // Default body deadlines (the trickle never goes idle): only the closing of unread bodies frees the descriptors.
      child = spawn('bash', ['-c', `ulimit -n ${CLIENTS} && exec "${process.execPath}" "${CLI}" serve`], {
        env: { ...env, TOLLGATE_PORT: '0' },
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
      // Only routes whose answer needs no descriptor of its own: with descriptors exhausted, /metrics and /dashboard/
      // answer 500 (they open files) and the attestation route soon answers 429 (its per-address limit), error answers
      // that always closed their connection; attackers churning through them would free descriptors for /healthz and
      // the run would prove nothing. The test above covers those routes one by one.
      const routes = targets(adminKey, appToken).filter(([, target]) => ['/healthz', '/v1/admin/apps', '/no/such/route'].includes(target));

      let running = true;
      const stats = { connected: 0, answeredThenClosed: 0 };
      const attacker = async (index: number) => {
        const [method, target, headers] = routes[index % routes.length]!;
        while (running) {
          try {
            const client = await openRaw(url);
            stats.connected += 1;
            client.socket.write(head(method, target, { Host: host, 'Content-Type': 'application/json', 'Content-Length': 10_000, ...headers }));
            client.socket.write('{"x":"');
            client.trickle(200);
            const stopper = setInterval(() => {
              if (!running) client.socket.destroy();
            }, 100);
            const received = await client.closed;
            clearInterval(stopper);
            if (running && firstStatus(received) > 0) stats.answeredThenClosed += 1;
          } catch {
            // refused at accept (descriptors exhausted): try again, as an attacker would
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const attackers = Array.from({ length: CLIENTS }, (_, index) => attacker(index));

      while (stats.connected < CLIENTS) await new Promise((resolve) => setTimeout(resolve, 50));
      let status = 0;
      while (status !== 200) {
        status = await healthz(url);
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const closedBeforeEnd = stats.answeredThenClosed;
      running = false;
      await Promise.all(attackers);

      expect(status).to.equal(200);
      expect(stats.connected).to.be.at.least(CLIENTS);
      // The attackers were answered and then closed by the server while they were still sending.
      expect(closedBeforeEnd).to.be.greaterThan(0);
      expect(child.exitCode).to.equal(null);
    });
  });
});
