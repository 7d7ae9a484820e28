/**
 * A client that goes away in the middle of a stream: the upstream request is aborted, and nothing goes upstream again.
 * undici starts a request again on a fresh connection when the connection it was on fails before the answer ended;
 * an abort that destroys the connection must not become a second request to the provider. (undici still dials a fresh
 * connection after such an abort, which stays idle: docs/security.md lists it.)
 */
import { expect } from 'chai';
import { FakeUpstream, respondChunks } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { openStream } from '../support/nodes';

const CHAT = '/v1/proxy/openai/v1/chat/completions';

describe('a client gone mid-stream', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  it('sends its request upstream once', async () => {
    const device = await gateway.provision({ openai: 'sk-gone-0123456789abcdef' }, { deviceLimitPerMinute: 1000, maxConcurrentStreamsPerDevice: 100 });
    // An SSE stream (https://platform.openai.com/docs/api-reference/chat/streaming) that keeps sending for 10 s.
    upstream.respond(respondChunks(Array.from({ length: 200 }, (_, index) => `data: {"choices":[{"delta":{"content":"${index}"}}]}\n\n`), { intervalMs: 50 }));
    for (let round = 1; round <= 5; round += 1) {
      const stream = await openStream(gateway.url, CHAT, device.headers, '{"stream":true}');
      expect(stream.status).to.equal(200);
      // The answer's head arrived, chunks are flowing: the client leaves.
      await new Promise((resolve) => setTimeout(resolve, 200));
      stream.close();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(upstream.requests.length, `upstream requests after ${round} clients left`).to.equal(round);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(upstream.requests.length).to.equal(5);
    // Each stream took a connection of its own (the one it was on is destroyed by the abort).
    expect(upstream.connectionsAccepted).to.be.at.least(5);
  });
});
