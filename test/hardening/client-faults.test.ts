/**
 * Hostile or broken clients: slow-loris request heads are cut, oversized heads are refused with 431, a body that never
 * finishes does not hold an upstream forever, and the process stays up and keeps serving.
 */
import { expect } from 'chai';
import net from 'node:net';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest } from '../support/http';

function connect(url: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

function readUntilClosed(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
  });
}

describe('client-side faults', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_HEADERS_TIMEOUT_MS: '400' } });
    device = await gateway.provision({ openai: 'sk-faults-0123456789abcdef' });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('cuts a slow-loris client that never finishes its request head', async () => {
    const socket = await connect(gateway.url);
    const closed = readUntilClosed(socket);
    socket.write('POST /v1/proxy/openai/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const drip = setInterval(() => socket.write('a'), 100);
    const answer = await closed;
    clearInterval(drip);
    expect(answer).to.match(/^HTTP\/1\.1 408|^$/);
    expect(upstream.requests).to.have.length(0);
  });

  it('refuses an oversized request head with 431 and sends nothing upstream', async () => {
    const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...device.headers, 'x-big': 'a'.repeat(40 * 1024) }, body: '{}' });
    expect(response.status).to.equal(431);
    expect(upstream.requests).to.have.length(0);
  });

  it('answers malformed JSON and invalid UTF-8 on attestation routes with invalidRequest, and keeps serving', async () => {
    for (const body of [Buffer.from('{"developmentToken":'), Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), Buffer.from('[1,2,3]')]) {
      const response = await rawRequest(gateway.url, {
        method: 'POST',
        path: '/v1/attest/development',
        headers: { 'content-type': 'application/json', 'Tollgate-App-Token': device.appToken },
        body,
      });
      expect(response.status).to.equal(400);
      expect(response.headers['tollgate-error']).to.equal('invalidRequest');
    }
    expect((await rawRequest(gateway.url, { path: '/healthz' })).status).to.equal(200);
  });
});
