/**
 * No silent upstream queue (issue 17): without a configured cap, many concurrent streams to one provider host each get
 * a socket at once; with a cap, a queued request waits at most TOLLGATE_UPSTREAM_QUEUE_TIMEOUT_MS and then gets the
 * gateway's own typed error, while /metrics shows the queue and the open sockets. A started stream that goes silent is
 * cut after TOLLGATE_UPSTREAM_IDLE_TIMEOUT_MS. Descriptor exhaustion is the gateway's fault, not the provider's.
 */
import { expect } from 'chai';
import http from 'node:http';
import { classifyUpstreamError } from '../../core/pipeline/forward';
import { FakeUpstream, respondChunks } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';
import { metricSample, scrapeMetrics } from '../support/metrics';
import { openStream } from '../support/nodes';

const CHAT = '/v1/proxy/openai/v1/chat/completions';
/** One OpenAI chat-completion chunk (https://platform.openai.com/docs/api-reference/chat-streaming). */
const CHUNK = `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'hi' } }] })}\n\n`;

async function metric(gateway: TestGateway, name: string): Promise<number> {
  return metricSample(await scrapeMetrics(gateway), name);
}

describe('upstream pool: no silent queue', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  before(async () => {
    upstream = await FakeUpstream.start();
    upstream.on((request) => request.body.includes('"stream":true'), respondChunks([CHUNK], { holdOpen: true }));
  });
  after(async () => upstream.close());

  it('has no socket cap by default: 40 concurrent held streams each get a socket, none queues', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    try {
      const device = await gateway.provision({ openai: 'sk-pool-0123456789abcdef' }, { maxConcurrentStreamsPerDevice: 100, deviceLimitPerMinute: 1000 });
      const streams = await Promise.all(Array.from({ length: 40 }, () => openStream(gateway.url, CHAT, device.headers)));
      expect(streams.map((stream) => stream.status)).to.deep.equal(Array(40).fill(200));
      expect(await metric(gateway, 'tollgate_upstream_queued_requests')).to.equal(0);
      expect(await metric(gateway, 'tollgate_upstream_sockets')).to.be.at.least(40);
      for (const stream of streams) stream.close();
    } finally {
      await gateway.close();
    }
  });

  it('with a cap, a queued request shows in /metrics and ends in serviceUnavailable/upstream_pool_exhausted, not a hang', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_UPSTREAM_MAX_SOCKETS: '1', TOLLGATE_UPSTREAM_QUEUE_TIMEOUT_MS: '1500' } });
    try {
      const device = await gateway.provision({ openai: 'sk-pool-0123456789abcdef' });
      const held = await openStream(gateway.url, CHAT, device.headers);
      expect(held.status).to.equal(200);
      const before = upstream.requests.length;
      const queued = rawRequest(gateway.url, { method: 'POST', path: CHAT, headers: device.headers, body: '{}' });
      let seen = 0;
      for (let attempt = 0; attempt < 100 && seen === 0; attempt += 1) {
        seen = await metric(gateway, 'tollgate_upstream_queued_requests');
        if (seen === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(seen).to.equal(1);
      const refused = await queued;
      expect(refused.status).to.equal(503);
      expect(refused.headers['tollgate-error']).to.equal('serviceUnavailable');
      expect(refused.headers['retry-after']).to.equal('1');
      expect(refused.json<{ error: { reason: string } }>().error.reason).to.equal('upstream_pool_exhausted');
      expect(upstream.requests.length).to.equal(before);
      held.close();
    } finally {
      await gateway.close();
    }
  });

  it('a queued request whose client leaves never reaches the provider once a connection frees', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_UPSTREAM_MAX_SOCKETS: '1', TOLLGATE_UPSTREAM_QUEUE_TIMEOUT_MS: '10000' } });
    try {
      const device = await gateway.provision({ openai: 'sk-pool-0123456789abcdef' });
      const held = await openStream(gateway.url, CHAT, device.headers);
      expect(held.status).to.equal(200);
      const before = upstream.requests.length;
      const url = new URL(CHAT, gateway.url);
      const departing = http.request(url, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json', 'content-length': '2' } });
      departing.on('error', () => undefined);
      departing.end('{}');
      let seen = 0;
      for (let attempt = 0; attempt < 200 && seen === 0; attempt += 1) {
        seen = await metric(gateway, 'tollgate_upstream_queued_requests');
        if (seen === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(seen, 'the request waits for the one connection').to.equal(1);
      departing.destroy();
      await new Promise((resolve) => setTimeout(resolve, 200));
      // The connection frees: undici would start the queued request now.
      held.close();
      for (let attempt = 0; attempt < 100 && (await metric(gateway, 'tollgate_upstream_queued_requests')) !== 0; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(upstream.requests.length, 'nothing of the departed client reached the provider').to.equal(before);
    } finally {
      await gateway.close();
    }
  });

  it('cuts a started stream that stays silent past the idle timeout', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_UPSTREAM_IDLE_TIMEOUT_MS: '500' } });
    try {
      const device = await gateway.provision({ openai: 'sk-idle-0123456789abcdef' });
      const stream = await openStream(gateway.url, CHAT, device.headers);
      expect(stream.status).to.equal(200);
      // Without the idle timeout this would wait for ever (the fake provider holds the stream open).
      expect(await stream.text()).to.equal(CHUNK);
      const upstreamRequest = upstream.last();
      await upstreamRequest.closed;
      expect(upstreamRequest.aborted).to.equal(true);
      const events = await gateway.recordedUsage(device.appId, 0, (recorded) => recorded.length > 0);
      expect(events.map((event) => event.truncated)).to.deep.equal([true]);
    } finally {
      await gateway.close();
    }
  });

  it('types descriptor exhaustion as the gateway\'s own serviceUnavailable, not the provider\'s fault', () => {
    for (const code of ['EMFILE', 'ENFILE']) {
      const error = classifyUpstreamError(Object.assign(new Error(`${code}: too many open files`), { code }), 1024);
      expect([error.type, error.status, error.reason, error.retryAfterSeconds]).to.deep.equal(['serviceUnavailable', 503, 'descriptors_exhausted', 1]);
    }
    expect(classifyUpstreamError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), 1024).type).to.equal('upstreamUnavailable');
  });
});
