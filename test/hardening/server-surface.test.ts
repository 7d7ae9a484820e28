/**
 * The lower findings of issue 16 on the server's surface, each as it crosses the wire:
 * - what Node's HTTP parser refuses is answered with the protocol's error body (`Tollgate-Error`, a `reason`);
 * - override and client-address headers (`X-Original-URL`, `X-Rewrite-URL`, `X-HTTP-Method-Override`, `X-Forwarded-*`,
 *   `True-Client-IP`, …) never reach the upstream;
 * - `chat/completions/../../organization/...` over HTTP (raw and percent-encoded) is refused and nothing reaches the
 *   upstream (a path that stays under the provider's base path once resolved, so only the dot-segment check stops it);
 * - the dashboard ships no source maps, and a `.map` file is never served;
 * - a client that goes away mid-body is logged at `info` without a stack;
 * - the dashboard's Origin check uses `TOLLGATE_PUBLIC_URL` (or, with `TOLLGATE_TRUST_PROXY`, the proxy's
 *   `X-Forwarded-Proto`/`X-Forwarded-Host`), so it works behind an HTTPS reverse proxy.
 */
import { expect } from 'chai';
import express from 'express';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createDashboardRouter, DASHBOARD_ASSETS } from '../../core/admin/dashboard-assets';
import { loadConfiguration } from '../../core/configuration/configuration';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest, type ErrorBody } from '../support/http';
import { firstStatus, head, lastJsonBody, openRaw } from '../support/raw-socket';

describe('server surface', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  let host: string;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    device = await gateway.provision({ openai: 'sk-surface-0123456789abcdef' });
    host = new URL(gateway.url).host;
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  describe('parser-level refusals are typed', () => {
    const cases: Array<[string, string, number, string[]]> = [
      ['Content-Length together with Transfer-Encoding', `POST /v1/proxy/openai/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400, ['malformed_framing', 'malformed_request']],
      ['a malformed Content-Length', `POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5x\r\n\r\n`, 400, ['malformed_framing']],
      ['not HTTP at all', `HELLO THERE\r\n\r\n`, 400, ['malformed_request']],
      ['a header line without a colon', `GET /healthz HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n`, 400, ['malformed_request']],
      ['an oversized head', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40 * 1024)}\r\n\r\n`, 431, ['headers_too_large']],
    ];
    for (const [name, bytes, status, reasons] of cases) {
      it(`${name}: ${status} with Tollgate-Error and a reason, then the connection closes`, async () => {
        const client = await openRaw(gateway.url);
        client.socket.write(bytes);
        const received = await client.closed;
        expect(firstStatus(received), received.slice(0, 200)).to.equal(status);
        expect(received).to.match(/\r\nTollgate-Error: invalidRequest\r\n/);
        expect(received).to.match(/\r\nTollgate-Request-Id: [0-9a-f-]{36}\r\n/);
        const body = lastJsonBody<ErrorBody>(received);
        expect(body.error.type).to.equal('invalidRequest');
        expect(reasons).to.include(body.error.reason);
        expect(upstream.requests).to.have.length(0);
      });
    }
  });

  it('strips override and client-address headers before forwarding', async () => {
    const overrides = {
      'X-Original-URL': '/v1/organization/admin_api_keys',
      'X-Rewrite-URL': '/v1/organization/admin_api_keys',
      'X-Original-Host': 'evil.example',
      'X-Original-Method': 'DELETE',
      'X-Override-URL': '/v1/organization',
      'X-Host': 'evil.example',
      'X-HTTP-Method-Override': 'DELETE',
      'X-HTTP-Method': 'DELETE',
      'X-Method-Override': 'DELETE',
      'X-Forwarded-Host': 'evil.example',
      'X-Forwarded-Prefix': '/v1/organization',
      'X-Forwarded-For': '203.0.113.9',
      Forwarded: 'for=203.0.113.9;host=evil.example',
      'X-Real-IP': '203.0.113.9',
      'X-Client-IP': '203.0.113.9',
      'X-Cluster-Client-IP': '203.0.113.9',
      'True-Client-IP': '203.0.113.9',
      'CF-Connecting-IP': '203.0.113.9',
      'X-Originating-IP': '203.0.113.9',
      Via: '1.1 evil',
    };
    const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...device.headers, ...overrides, 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).to.equal(200);
    const received = upstream.last().headers;
    for (const name of Object.keys(overrides)) expect(received[name.toLowerCase()], name).to.equal(undefined);
    expect(upstream.last().rawHeaders.join('\n')).to.not.match(/evil|203\.0\.113\.9|organization|DELETE/);
    expect(received['content-type']).to.equal('application/json');
  });

  describe('chat/completions/../../organization/... over HTTP', () => {
    const forms = [
      'chat/completions/../../organization/admin_api_keys',
      'chat/completions/%2e%2e/%2e%2e/organization/admin_api_keys',
      'chat/completions/%2E%2E/%2E%2E/organization/admin_api_keys',
      'chat/completions/..%2F..%2Forganization/admin_api_keys',
      'chat/completions%2F..%2F..%2Forganization%2Fadmin_api_keys',
      'chat/completions/%252e%252e/%252e%252e/organization/admin_api_keys',
      'chat/completions/.%2e/%2e./organization/admin_api_keys',
    ];
    for (const form of forms) {
      it(`refuses ${form} with invalidRequest and sends nothing upstream`, async () => {
        for (const method of ['GET', 'POST', 'DELETE']) {
          const response = await rawRequest(gateway.url, { method, path: `/v1/proxy/openai/v1/${form}`, headers: { ...device.headers, 'content-type': 'application/json' }, ...(method === 'GET' ? {} : { body: '{}' }) });
          expect(response.status, `${method} ${response.text()}`).to.be.oneOf([400, 405]);
          expect(response.headers['tollgate-error']).to.equal('invalidRequest');
        }
        expect(upstream.requests, 'a request reached the upstream').to.have.length(0);
      });
    }
  });

  describe('dashboard source maps', () => {
    it('the built dashboard has no source maps and no sourceMappingURL, and /dashboard/*.map is 404', async () => {
      const script = readFileSync(path.join(DASHBOARD_ASSETS, 'main.js'), 'utf8');
      expect(script).to.not.match(/sourceMappingURL/);
      const response = await rawRequest(gateway.url, { path: '/dashboard/main.js.map' });
      expect(response.status).to.equal(404);
      expect((await rawRequest(gateway.url, { path: '/dashboard/main.js' })).status).to.equal(200);
    });

    it('a .map file dropped next to the assets is not served', async () => {
      const assets = mkdtempSync(path.join(os.tmpdir(), 'tollgate-assets-'));
      writeFileSync(path.join(assets, 'index.html'), '<!doctype html><title>t</title>');
      writeFileSync(path.join(assets, 'main.js'), 'export {};\n');
      writeFileSync(path.join(assets, 'main.js.map'), '{"version":3,"sources":["../src/main.ts"],"sourcesContent":["secret source"]}');
      const app = express().use('/dashboard', createDashboardRouter(assets));
      const server = http.createServer(app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        expect((await rawRequest(url, { path: '/dashboard/main.js' })).status).to.equal(200);
        for (const file of ['/dashboard/main.js.map', '/dashboard/MAIN.JS.MAP', '/dashboard/main.js.map?x=1']) {
          const response = await rawRequest(url, { path: file });
          expect(response.status, file).to.equal(404);
          expect(response.text()).to.not.include('secret source');
        }
      } finally {
        server.close();
        rmSync(assets, { recursive: true, force: true });
      }
    });
  });

  describe('the access line of a proxied request', () => {
    /** The access line of the request with this id, once written (lines are written when the response closed). */
    async function accessLineOf(requestId: string): Promise<Record<string, unknown> | undefined> {
      for (let attempt = 0; attempt < 100; attempt += 1) {
        const line = gateway.logs.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => entry.msg === 'request' && entry.requestId === requestId);
        if (line) return line;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return undefined;
    }

    it('names the request, its app, device and provider, its outcome and sizes; the credential query value is redacted', async () => {
      upstream.respond((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"id":"chatcmpl-1","object":"chat.completion","choices":[]}');
      });
      const body = '{"model":"gpt-4o-mini","messages":[]}';
      const response = await rawRequest(gateway.url, {
        method: 'POST',
        path: '/v1/proxy/openai/v1/chat/completions?key=sk-client-supplied-secret&x=1',
        headers: { ...device.headers, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) },
        body,
      });
      expect(response.status).to.equal(200);
      const line = await accessLineOf(response.headers['tollgate-request-id'] as string);
      expect(line, 'one access line for the request').to.not.equal(undefined);
      expect(line).to.include({
        level: 30,
        service: 'tollgate',
        method: 'POST',
        path: '/v1/proxy/openai/v1/chat/completions?key=[redacted]&x=1',
        status: 200,
        app: device.appId,
        device: device.deviceId,
        provider: 'openai',
        bytesIn: Buffer.byteLength(body),
        bytesOut: response.body.length,
      });
      expect(line!.ms).to.be.a('number');
      expect(line).to.not.have.any.keys('aborted', 'reason', 'errorType', 'truncated');
      expect(JSON.stringify(line)).to.not.include('sk-client-supplied-secret');
      expect(JSON.stringify(line)).to.not.include(device.deviceToken);
    });

    it('a refused proxied request: its error type and reason, and the app it was refused for', async () => {
      const response = await rawRequest(gateway.url, { method: 'GET', path: '/v1/proxy/openai/v1/chat/completions', headers: { 'Tollgate-App-Token': device.appToken } });
      // No device token: refused after the app token was checked.
      expect(response.status).to.equal(403);
      const line = await accessLineOf(response.headers['tollgate-request-id'] as string);
      expect(line).to.include({ status: 403, errorType: response.headers['tollgate-error'], reason: response.json<ErrorBody>().error.reason, app: device.appId, provider: 'openai', bytesOut: 0 });
      expect(line).to.not.have.any.keys('device');
      expect(upstream.requests).to.have.length(0);
    });
  });

  describe('a client that goes away mid-body', () => {
    it('is logged at info with reason client_aborted, never at error level and never with a stack', async () => {
      const { adminKey } = await gateway.gateway.management.createAdminKey({ name: 'abort' });
      const firstLog = gateway.logs.length;
      const targets: Array<[string, Record<string, string>]> = [
        ['/v1/admin/apps', { Authorization: `Bearer ${adminKey}` }],
        ['/v1/attest/development', { 'Tollgate-App-Token': device.appToken }],
        ['/mcp', { Authorization: `Bearer ${adminKey}`, Accept: 'application/json, text/event-stream' }],
        ['/v1/admin/session', {}],
      ];
      for (const [target, headers] of targets) {
        const client = await openRaw(gateway.url);
        client.socket.write(head('POST', target, { Host: host, 'Content-Type': 'application/json', 'Content-Length': 1000, ...headers }));
        client.socket.write('{"name":"');
        // Let the route start reading, then vanish.
        await new Promise((resolve) => setTimeout(resolve, 150));
        client.socket.destroy();
      }
      const lines = () => gateway.logs.slice(firstLog).map((line) => JSON.parse(line) as { level: number; msg: string; reason?: string; err?: { stack?: string }; path?: string });
      // One access-log line per request, at info, with the reason.
      while (lines().filter((line) => line.reason === 'client_aborted' && line.msg === 'request').length < targets.length) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      for (const line of lines()) {
        expect(line.level, JSON.stringify(line)).to.be.below(40);
        expect(JSON.stringify(line)).to.not.match(/"stack"/);
      }
      const aborted = lines().filter((entry) => entry.reason === 'client_aborted');
      expect(aborted.map((line) => line.path).sort()).to.deep.equal(targets.map(([target]) => target).sort());
      for (const line of aborted) expect(line.level).to.equal(30);
    });
  });
});

describe('the dashboard Origin check behind a reverse proxy', () => {
  async function signedIn(gateway: TestGateway): Promise<{ cookie: string; csrf: string }> {
    const response = await fetch(`${gateway.url}/v1/admin/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ setupToken: gateway.gateway.setupToken, username: 'admin', password: 'correct horse battery staple' }),
    });
    expect(response.status).to.equal(201);
    const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
    const { csrfToken } = (await response.json()) as { csrfToken: string };
    return { cookie, csrf: csrfToken };
  }

  async function createApp(gateway: TestGateway, session: { cookie: string; csrf: string }, headers: Record<string, string>): Promise<{ status: number; reason?: string }> {
    const response = await rawRequest(gateway.url, {
      method: 'POST',
      path: '/v1/admin/apps',
      headers: { cookie: session.cookie, 'x-csrf-token': session.csrf, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ name: 'origin-check' }),
    });
    return { status: response.status, reason: response.status >= 400 ? response.json<ErrorBody>().error.reason : undefined };
  }

  it('with TOLLGATE_PUBLIC_URL: accepts that origin (the browser’s, over HTTPS) and refuses the listen address', async () => {
    const gateway = await TestGateway.start({ env: { TOLLGATE_PUBLIC_URL: 'https://tollgate.example.com/' } });
    try {
      const session = await signedIn(gateway);
      // What a browser sends behind an HTTPS proxy that forwards to http://127.0.0.1:port with its own Host.
      expect(await createApp(gateway, session, { Origin: 'https://tollgate.example.com' })).to.deep.equal({ status: 201, reason: undefined });
      expect(await createApp(gateway, session, { Origin: gateway.url })).to.deep.equal({ status: 403, reason: 'cross_origin' });
      expect(await createApp(gateway, session, { Origin: 'http://tollgate.example.com' })).to.deep.equal({ status: 403, reason: 'cross_origin' });
      expect(await createApp(gateway, session, { Origin: 'https://evil.example' })).to.deep.equal({ status: 403, reason: 'cross_origin' });
      expect(await createApp(gateway, session, { Origin: 'null' })).to.deep.equal({ status: 403, reason: 'cross_origin' });
    } finally {
      await gateway.close();
    }
  });

  it('with TOLLGATE_TRUST_PROXY: uses X-Forwarded-Proto and X-Forwarded-Host; without it they are ignored', async () => {
    const trusting = await TestGateway.start({ env: { TOLLGATE_TRUST_PROXY: 'true' } });
    const plain = await TestGateway.start();
    try {
      const forwarded = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'dash.example.org' };
      const session = await signedIn(trusting);
      expect(await createApp(trusting, session, { Origin: 'https://dash.example.org', ...forwarded })).to.deep.equal({ status: 201, reason: undefined });
      expect(await createApp(trusting, session, { Origin: 'https://evil.example', ...forwarded })).to.deep.equal({ status: 403, reason: 'cross_origin' });
      const plainSession = await signedIn(plain);
      expect(await createApp(plain, plainSession, { Origin: 'https://dash.example.org', ...forwarded })).to.deep.equal({ status: 403, reason: 'cross_origin' });
      expect(await createApp(plain, plainSession, { Origin: plain.url })).to.deep.equal({ status: 201, reason: undefined });
    } finally {
      await trusting.close();
      await plain.close();
    }
  });
});

describe('per-address sign-in limits behind a reverse proxy', () => {
  async function signInFrom(gateway: TestGateway, forwardedFor: string, attempt: number): Promise<string> {
    const response = await rawRequest(gateway.url, {
      method: 'POST',
      path: '/v1/admin/session',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
      body: JSON.stringify({ username: `user${attempt}`, password: 'not the password' }),
    });
    return response.json<ErrorBody>().error.reason;
  }

  it('with TOLLGATE_TRUST_PROXY, counts the address the proxy appended last; without it, X-Forwarded-For is ignored', async () => {
    const trusting = await TestGateway.start({ env: { TOLLGATE_TRUST_PROXY: 'true' } });
    const plain = await TestGateway.start();
    try {
      // The client's own claim comes first; the proxy appends the address it saw.
      for (let attempt = 0; attempt < 10; attempt += 1) expect(await signInFrom(trusting, `10.0.0.${attempt}, 198.51.100.1`, attempt)).to.equal('sign_in_failed');
      expect(await signInFrom(trusting, '10.0.0.99, 198.51.100.1', 10)).to.equal('rate_limited_signin_address');
      expect(await signInFrom(trusting, '198.51.100.1, 198.51.100.2', 11)).to.equal('sign_in_failed');
      for (let attempt = 0; attempt < 10; attempt += 1) expect(await signInFrom(plain, `198.51.100.${attempt}`, attempt)).to.equal('sign_in_failed');
      expect(await signInFrom(plain, '198.51.100.200', 10)).to.equal('rate_limited_signin_address');
    } finally {
      await trusting.close();
      await plain.close();
    }
  });
});

describe('the server settings (docs/reference/configuration.md)', () => {
  it('have their documented defaults and refuse malformed values naming the variable', () => {
    const defaults = loadConfiguration({}, os.tmpdir());
    expect([defaults.requestTimeoutMs, defaults.bodyIdleTimeoutMs, defaults.keepAliveTimeoutMs, defaults.headersTimeoutMs, defaults.trustProxy]).to.deep.equal([30_000, 15_000, 65_000, 20_000, false]);
    const set = loadConfiguration({ TOLLGATE_REQUEST_TIMEOUT_MS: '5000', TOLLGATE_BODY_IDLE_TIMEOUT_MS: '2000', TOLLGATE_KEEP_ALIVE_TIMEOUT_MS: '9000', TOLLGATE_TRUST_PROXY: 'true' }, os.tmpdir());
    expect([set.requestTimeoutMs, set.bodyIdleTimeoutMs, set.keepAliveTimeoutMs, set.trustProxy]).to.deep.equal([5000, 2000, 9000, true]);
    for (const [name, value] of [['TOLLGATE_REQUEST_TIMEOUT_MS', '0'], ['TOLLGATE_BODY_IDLE_TIMEOUT_MS', 'soon'], ['TOLLGATE_KEEP_ALIVE_TIMEOUT_MS', '-1'], ['TOLLGATE_TRUST_PROXY', 'maybe']] as const) {
      expect(() => loadConfiguration({ [name]: value }, os.tmpdir()), name).to.throw(new RegExp(name));
    }
  });
});
