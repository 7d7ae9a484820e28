/**
 * Slow and oversized input before authentication (issue 16; docs/security.md, "Slow and oversized input"):
 * - a client that trickles its body to `/v1/attest/development`, `/mcp` or `/v1/admin/session` is cut off by the
 *   whole-request deadline (`TOLLGATE_REQUEST_TIMEOUT_MS`, with a 408 `body_timeout`), and a proxy body that stalls by
 *   the body-idle deadline (`TOLLGATE_BODY_IDLE_TIMEOUT_MS`);
 * - the credential and per-address checks answer before a byte of the body is read: the answer arrives while the
 *   client has not finished sending (an unauthenticated 1 MB body to `/mcp` included), and 20 of those do not stop
 *   `/healthz`;
 * - a declared over-limit `Content-Length` is refused with 413 before the body is read (proxy, attestation, management,
 *   MCP), and nothing reaches the upstream;
 * - `100 Continue` goes out only after the checks passed.
 *
 * Deadlines are set short here; the assertions are about what crossed the wire (who closed, which status), never about
 * how long it took.
 */
import { expect } from 'chai';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest } from '../support/http';
import { firstStatus, head, lastJsonBody, openRaw } from '../support/raw-socket';

const MAX_BODY = 4096;

describe('slow and oversized request bodies', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  let adminKey: string;
  let host: string;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({
      upstreams: { openai: upstream.url, bedrock: upstream.url },
      env: { TOLLGATE_REQUEST_TIMEOUT_MS: '800', TOLLGATE_BODY_IDLE_TIMEOUT_MS: '400', TOLLGATE_MAX_BODY_BYTES: String(MAX_BODY) },
    });
    device = await gateway.provision({ openai: 'sk-slow-bodies-0123456789abcdef', bedrock: JSON.stringify({ accessKeyId: 'AKIASLOWBODIES0000000', secretAccessKey: 'slow-bodies-secret-access-key-0123456789' }) });
    ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'slow-bodies' }));
    host = new URL(gateway.url).host;
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  describe('a trickled body is cut off by the server', () => {
    const routes: Array<[string, () => Record<string, string>]> = [
      ['/v1/attest/development', () => ({ 'Tollgate-App-Token': device.appToken })],
      ['/mcp', () => ({ Authorization: `Bearer ${adminKey}`, Accept: 'application/json, text/event-stream' })],
      ['/v1/admin/session', () => ({})],
    ];
    for (const [path, credentials] of routes) {
      it(`POST ${path}: a byte every 100 ms (never idle) ends in 408 body_timeout and a closed connection`, async () => {
        const client = await openRaw(gateway.url);
        client.socket.write(head('POST', path, { Host: host, 'Content-Type': 'application/json', 'Content-Length': 10_000, ...credentials() }));
        client.socket.write('{"x":"');
        const trickle = client.trickle(100);
        // The test never closes the connection: it ends because the server closed it.
        const received = await client.closed;
        expect(trickle.written(), `the client was still trickling; received ${received}`).to.be.greaterThan(0);
        expect(firstStatus(received), received.slice(0, 200)).to.equal(408);
        expect(received).to.match(/\r\nTollgate-Error: invalidRequest\r\n/i);
        expect(lastJsonBody(received).error.reason).to.equal('body_timeout');
      });
    }

    it('a small proxied body that stalls is cut by the body-idle deadline, and nothing reaches the upstream', async () => {
      // A declared length of at most 64 KiB is read whole before the upstream request starts (forward.ts, readWholeBody).
      upstream.respond(() => undefined);
      const client = await openRaw(gateway.url);
      client.socket.write(head('POST', '/v1/proxy/openai/v1/chat/completions', { Host: host, 'Content-Type': 'application/json', 'Content-Length': 1000, ...device.headers }));
      client.socket.write('{"model":"gpt-4o-mini","messages":');
      await client.closed;
      expect(client.text()).to.not.match(/^HTTP\/1\.1 2/);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(upstream.requests, 'an unfinished small body must not start an upstream request').to.have.length(0);
    });

    it('a streamed (chunked) proxied body that stalls is cut by the body-idle deadline, and the upstream request is abandoned', async () => {
      upstream.respond(() => undefined);
      const client = await openRaw(gateway.url);
      client.socket.write(head('POST', '/v1/proxy/openai/v1/chat/completions', { Host: host, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', ...device.headers }));
      const part = '{"model":"gpt-4o-mini","messages":';
      client.socket.write(`${part.length.toString(16)}\r\n${part}\r\n`);
      await client.closed;
      // Nothing of the body was completed, and no answer could have been sent: the server closed the connection.
      expect(client.text()).to.not.match(/^HTTP\/1\.1 2/);
      // The upstream got the head and the first bytes, and then the gateway abandoned it.
      await upstream.waitForRequests(1);
      await upstream.last().closed;
      expect(upstream.last().aborted).to.equal(true);
    });
  });

  describe('checks before the body', () => {
    it('an unauthenticated 1 MB body to /mcp gets 401 before the client has finished sending it', async () => {
      const client = await openRaw(gateway.url);
      client.socket.write(head('POST', '/mcp', { Host: host, 'Content-Type': 'application/json', 'Content-Length': 1024 * 1024 }));
      client.socket.write('['.repeat(16 * 1024));
      // Only 16 KiB of the 1 MB were sent; the answer must come anyway.
      const received = await client.waitFor(/\r\n\r\n\{.*\}$/s);
      expect(firstStatus(received)).to.equal(401);
      expect(lastJsonBody(received).error.reason).to.equal('admin_key_invalid');
      await client.closed;
    });

    it('20 unauthenticated 1 MB nested-array bodies to /mcp are refused and /healthz keeps answering', async () => {
      const body = '['.repeat(512 * 1024) + ']'.repeat(512 * 1024);
      const attacks = Array.from({ length: 20 }, () =>
        rawRequest(gateway.url, { method: 'POST', path: '/mcp', headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, body }).then(
          (response) => response.status,
          () => 401, // the server may close before the client finished writing (EPIPE): refused either way
        ),
      );
      const health = await rawRequest(gateway.url, { path: '/healthz' });
      expect(health.status).to.equal(200);
      const statuses = await Promise.all(attacks);
      expect(statuses.every((status) => status === 401), String(statuses)).to.equal(true);
      expect((await rawRequest(gateway.url, { path: '/healthz' })).status).to.equal(200);
    });

    it('attestation: a missing app token is refused before the body is read', async () => {
      const client = await openRaw(gateway.url);
      client.socket.write(head('POST', '/v1/attest/development', { Host: host, 'Content-Type': 'application/json', 'Content-Length': 10_000 }));
      client.socket.write('{"developmentToken":"');
      const received = await client.waitFor(/\r\n\r\n\{.*\}$/s);
      expect(firstStatus(received)).to.equal(401);
      await client.closed;
    });
  });

  describe('a declared over-limit Content-Length is refused with 413 before the body is read', () => {
    const cases: Array<[string, string, () => Record<string, string>, number]> = [
      ['the proxy (streamed)', '/v1/proxy/openai/v1/chat/completions', () => device.headers, MAX_BODY + 1],
      ['the proxy (body read whole for a payload signature)', '/v1/proxy/bedrock/v1/model/anthropic.claude-3-haiku/invoke', () => device.headers, MAX_BODY + 1],
      ['attestation', '/v1/attest/development', () => ({ 'Tollgate-App-Token': device.appToken }), 32 * 1024 + 1],
      ['the management API', '/v1/admin/apps', () => ({ Authorization: `Bearer ${adminKey}` }), 64 * 1024 + 1],
      ['MCP', '/mcp', () => ({ Authorization: `Bearer ${adminKey}`, Accept: 'application/json, text/event-stream' }), 256 * 1024 + 1],
    ];
    for (const [name, path, credentials, length] of cases) {
      it(name, async () => {
        const client = await openRaw(gateway.url);
        // The head only: not one byte of the declared body is ever sent.
        client.socket.write(head('POST', path, { Host: host, 'Content-Type': 'application/json', 'Content-Length': length, ...credentials() }));
        const received = await client.waitFor(/\r\n\r\n\{.*\}$/s);
        expect(firstStatus(received), received.slice(0, 300)).to.equal(413);
        expect(lastJsonBody(received).error.reason).to.equal('body_too_large');
        expect(upstream.requests).to.have.length(0);
        client.socket.destroy();
      });
    }
  });

  describe('100 Continue', () => {
    it('is not sent to a request that fails its checks: the refusal comes instead', async () => {
      for (const [path, headers] of [
        ['/mcp', {}],
        ['/v1/attest/development', { 'Tollgate-App-Token': 'at_00000000000000000000000000000000' }],
        ['/v1/proxy/openai/v1/chat/completions', { 'Tollgate-App-Token': device.appToken }],
      ] as Array<[string, Record<string, string>]>) {
        const client = await openRaw(gateway.url);
        client.socket.write(head('POST', path, { Host: host, 'Content-Type': 'application/json', 'Content-Length': 2, Expect: '100-continue', ...headers }));
        const received = await client.waitFor(/\r\n\r\n\{.*\}$/s);
        expect(received, path).to.not.match(/100 Continue/);
        expect([401, 403], path).to.include(firstStatus(received));
        client.socket.destroy();
      }
    });

    it('is sent once the checks passed, and the request then completes', async () => {
      const client = await openRaw(gateway.url);
      client.socket.write(head('POST', '/v1/proxy/openai/v1/chat/completions', { Host: host, 'Content-Type': 'application/json', 'Content-Length': 2, Expect: '100-continue', ...device.headers }));
      await client.waitFor(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
      client.socket.write('{}');
      const received = await client.waitFor(/HTTP\/1\.1 200 OK[\s\S]*\r\n\r\n\{.*\}$/);
      expect(received.indexOf('100 Continue')).to.be.lessThan(received.indexOf('200 OK'));
      expect(upstream.requests).to.have.length(1);
      client.socket.destroy();
    });
  });

  describe('per-address limit before the body (public sign-in route)', () => {
    it('refuses the 11th sign-in from one address with 429 before reading its body', async () => {
      // This gateway's other tests used one sign-in attempt (the trickle case); use up the rest of the 10.
      for (let attempt = 0; attempt < 20; attempt += 1) {
        const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/admin/session', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: `nobody${attempt}`, password: 'wrong-password' }) });
        if (response.status === 429) break;
      }
      const client = await openRaw(gateway.url);
      client.socket.write(head('POST', '/v1/admin/session', { Host: host, 'Content-Type': 'application/json', 'Content-Length': 10_000 }));
      client.socket.write('{"username":"');
      const received = await client.waitFor(/\r\n\r\n\{.*\}$/s);
      expect(firstStatus(received)).to.equal(429);
      expect(lastJsonBody(received).error.reason).to.equal('rate_limited_signin_address');
      await client.closed;
    });
  });
});
