/**
 * Forwarding over TLS, as every real provider is reached (undici's pools, core/pipeline/forward.ts):
 * - a provider whose certificate the gateway's trust store vouches for is reached over HTTPS, with the injected key and
 *   nothing of the client's credentials;
 * - a provider whose certificate nobody vouches for (self-signed, not in the store) is refused during the handshake:
 *   `upstreamUnavailable`, and not one byte of the request (let alone the key) reaches it. Certificates are never
 *   unchecked (docs/security.md).
 *
 * The fake provider answers in OpenAI's documented chat completion format
 * (https://platform.openai.com/docs/api-reference/chat/object). Its certificate is made by `openssl` for 127.0.0.1; the
 * trusting gateway is a separate `tollgate serve` process started with NODE_EXTRA_CA_CERTS naming that certificate
 * (Node reads the variable at start-up only).
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createGatewayCore } from '../../core/server/gateway';
import { chatCompletion } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';
import { attestOnNode, serveNode } from '../support/nodes';

const COMPLETION = chatCompletion('Hello over TLS', { prompt: 5, completion: 4 }, { id: 'chatcmpl-tls' });
const CHAT = '/v1/proxy/openai/v1/chat/completions';
const KEY = 'sk-tls-0123456789abcdef0123';

describe('forwarding over TLS', function () {
  this.timeout(60_000);
  let directory: string;
  let certificate: string;
  let server: https.Server;
  let origin: string;
  /** Requests that completed a TLS handshake and an HTTP request head. */
  const received: Array<{ method: string; url: string; headers: Record<string, unknown> }> = [];

  before(async () => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-tls-'));
    certificate = path.join(directory, 'provider.pem');
    const key = path.join(directory, 'provider.key');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', certificate, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    server = https.createServer({ key: readFileSync(key), cert: readFileSync(certificate) }, (request, response) => {
      received.push({ method: request.method ?? '', url: request.url ?? '', headers: { ...request.headers } });
      request.resume();
      request.on('end', () => {
        const body = JSON.stringify(COMPLETION);
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        response.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(directory, { recursive: true, force: true });
  });

  it('refuses a provider whose certificate nobody vouches for, before any of the request is sent', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: origin } });
    try {
      const device = await gateway.provision({ openai: KEY });
      const before = received.length;
      const response = await rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: { ...device.headers, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
      expect(response.status, response.text()).to.equal(502);
      expect(response.headers['tollgate-error']).to.equal('upstreamUnavailable');
      expect(response.json<{ error: { reason: string } }>().error.reason).to.equal('upstream_depth_zero_self_signed_cert');
      expect(received.length, 'no request head reached the provider').to.equal(before);
      expect(response.text()).to.not.include(KEY);
    } finally {
      await gateway.close();
    }
  });

  it('reaches a provider whose certificate is trusted over HTTPS, with the injected key only', async () => {
    const dataDirectory = path.join(directory, 'node');
    const env: Record<string, string> = {
      TOLLGATE_DATA_DIR: dataDirectory,
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_PROVIDER_OPENAI_BASE_URL: origin,
      TOLLGATE_LOG_LEVEL: 'warn',
    };
    const core = await createGatewayCore({ env, workingDirectory: dataDirectory });
    const app = await core.management.createApp({ name: 'tls', allowDevelopmentAttestation: true });
    await core.management.setSecret({ appId: app.id, provider: 'openai', value: KEY });
    await core.close();
    let child: ChildProcess | undefined;
    try {
      const node = await serveNode({ ...env, NODE_EXTRA_CA_CERTS: certificate });
      child = node.child;
      const device = await attestOnNode(node.url, { env, dataDirectory }, app, 'tls-device');
      const before = received.length;
      const response = await rawRequest(node.url, {
        method: 'POST',
        path: CHAT,
        headers: { ...device, authorization: 'Bearer sk-client-own-key', 'content-type': 'application/json' },
        body: '{"model":"gpt-4o-mini","messages":[]}',
      });
      expect(response.status, response.text()).to.equal(200);
      expect(response.json()).to.deep.equal(COMPLETION);
      expect(received.length).to.equal(before + 1);
      const sent = received[received.length - 1]!;
      expect(sent).to.deep.include({ method: 'POST', url: '/v1/chat/completions' });
      expect(sent.headers.authorization).to.equal(`Bearer ${KEY}`);
      expect(sent.headers.host).to.equal(new URL(origin).host);
      expect(Object.keys(sent.headers).filter((name) => name.startsWith('tollgate-'))).to.deep.equal([]);
    } finally {
      child?.kill('SIGKILL');
    }
  });
});
