/**
 * Graceful shutdown: on SIGTERM the server stops accepting connections, lets in-flight streams finish up to
 * `TOLLGATE_SHUTDOWN_GRACE_MS`, flushes usage events and exits 0. No in-flight stream is cut before the deadline.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { FakeUpstream, sseEvents } from '../support/fake-upstream';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

describe('graceful shutdown', () => {
  let upstream: FakeUpstream;
  let cwd: string;
  const env: Record<string, string> = {};

  before(async () => {
    upstream = await FakeUpstream.start();
    cwd = mkdtempSync(path.join(os.tmpdir(), 'tollgate-shutdown-'));
    Object.assign(env, {
      PATH: process.env.PATH ?? '',
      TOLLGATE_DATA_DIR: path.join(cwd, 'data'),
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_PROVIDER_OPENAI_BASE_URL: upstream.url,
      TOLLGATE_LOG_LEVEL: 'warn',
    });
  });
  after(async () => {
    await upstream.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  async function provisionAndServe(graceMs: number): Promise<{ child: ChildProcess; url: string; headers: Record<string, string>; appId: string }> {
    const core = await createGatewayCore({ env, workingDirectory: cwd });
    const app = await core.management.createApp({ name: 'shutdown', allowDevelopmentAttestation: true });
    await core.management.setSecret({ appId: app.id, provider: 'openai', value: 'sk-shutdown-0123456789abcdef' });
    const { developmentToken } = await core.management.createDevelopmentToken(app.id);
    await core.close();
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: { ...env, TOLLGATE_PORT: '0', TOLLGATE_SHUTDOWN_GRACE_MS: String(graceMs) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      let text = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(text);
        if (match) resolve(match[1]!);
      });
      child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${text}`)));
    });
    const attested = await fetch(`${url}/v1/attest/development`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken },
      body: JSON.stringify({ developmentToken, deviceId: 'shutdown-device' }),
    });
    const { deviceToken } = (await attested.json()) as { deviceToken: string };
    return { child, url, appId: app.id, headers: { 'Tollgate-App-Token': app.appToken, 'Tollgate-Device-Token': deviceToken } };
  }

  function stream(url: string, headers: Record<string, string>, onFirstChunk: () => void): Promise<{ body: string; complete: boolean }> {
    return new Promise((resolve, reject) => {
      const request = http.request(`${url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, agent: false }, (response) => {
        let body = '';
        let first = true;
        response.on('data', (chunk: Buffer) => {
          body += chunk.toString();
          if (first) {
            first = false;
            onFirstChunk();
          }
        });
        response.on('error', () => undefined);
        response.on('close', () => resolve({ body, complete: response.complete }));
      });
      request.on('error', reject);
      request.end('{"stream":true}');
    });
  }

  it('lets an in-flight stream finish after SIGTERM, refuses new connections, flushes usage and exits 0', async () => {
    const frames = sseEvents(Array.from({ length: 8 }, (_, index) => ({ index })));
    let releaseRest: () => void = () => undefined;
    const rest = new Promise<void>((resolve) => (releaseRest = resolve));
    upstream.respond(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(frames[0]);
      await rest;
      for (const frame of frames.slice(1)) {
        response.write(frame);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      response.end();
    });
    const { child, url, headers, appId } = await provisionAndServe(30_000);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const result = stream(url, headers, () => {
      child.kill('SIGTERM');
      // The listener closes at once: a new connection is refused while the stream goes on.
      setTimeout(() => {
        fetch(`${url}/healthz`).then(
          () => releaseRest(),
          () => {
            refusedAfterSigterm = true;
            releaseRest();
          },
        );
      }, 100);
    });
    let refusedAfterSigterm = false;
    const { body, complete } = await result;
    expect(complete).to.equal(true);
    expect(body).to.equal(frames.join(''));
    expect(refusedAfterSigterm).to.equal(true);
    expect(await exited).to.equal(0);

    const core = await createGatewayCore({ env, workingDirectory: cwd });
    try {
      const events = await core.management.usage(appId, 0, Date.now() + 1000);
      expect(events.some((event) => event.status === 200 && event.bytesOut === Buffer.byteLength(frames.join('')))).to.equal(true);
    } finally {
      await core.close();
    }
  });

  it('cuts a stream that outlives the grace period only after the deadline, then exits 0', async () => {
    upstream.reset();
    let sigtermAt = 0;
    upstream.respond(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      // Never ends on its own: one event every 50 ms.
      const timer = setInterval(() => response.write('data: {"tick":true}\n\n'), 50);
      response.on('close', () => clearInterval(timer));
    });
    const graceMs = 600;
    const { child, url, headers } = await provisionAndServe(graceMs);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const { body, complete } = await stream(url, headers, () => {
      sigtermAt = Date.now();
      child.kill('SIGTERM');
    });
    const cutAt = Date.now();
    expect(complete).to.equal(false);
    expect(cutAt - sigtermAt).to.be.at.least(graceMs);
    expect(body.split('\n\n').filter(Boolean).length).to.be.greaterThan(3);
    expect(await exited).to.equal(0);
  });
});
