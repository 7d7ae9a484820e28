/**
 * Rate-limit policies beyond the per-device and per-app minute limits: per provider, daily quotas, and a cap on open
 * streams per device. Each refusal is `rateLimited` with `Retry-After`, names its policy in the headers, and sends
 * nothing upstream.
 */
import { expect } from 'chai';
import http from 'node:http';
import { FakeUpstream, respondChunks, sseEvents } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';

describe('rate-limit policies', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, anthropic: upstream.url } });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());

  const post = (headers: Record<string, string>, route = 'openai/v1/chat/completions') => rawRequest(gateway.url, { method: 'POST', path: `/v1/proxy/${route}`, headers, body: '{}' });

  it('limits one provider without touching the others', async () => {
    const device = await gateway.provision({ openai: 'sk-prov-limit-0123456789', anthropic: 'sk-ant-prov-limit-0123456789' }, { providerLimitsPerMinute: { openai: 2 } });
    expect((await post(device.headers)).status).to.equal(200);
    const second = await post(device.headers);
    expect(second.headers['ratelimit-policy']).to.include('"provider";q=2;w=60');
    const refused = await post(device.headers);
    expect(refused.status).to.equal(429);
    expect(refused.headers['tollgate-error']).to.equal('rateLimited');
    expect(refused.json<{ error: { reason: string } }>().error.reason).to.equal('rate_limited_provider');
    expect((await post(device.headers, 'anthropic/v1/messages')).status).to.equal(200);
  });

  it('applies a daily quota per device on a rolling day', async () => {
    const device = await gateway.provision({ openai: 'sk-daily-0123456789abcdef' }, { deviceDailyQuota: 3 });
    for (let index = 0; index < 3; index += 1) expect((await post(device.headers)).status).to.equal(200);
    const refused = await post(device.headers);
    expect(refused.status).to.equal(429);
    expect(refused.headers['ratelimit-policy']).to.include('"device-day";q=3;w=86400');
    // The policy's name in the reason, its hyphen as an underscore.
    expect(refused.json<{ error: { reason: string } }>().error.reason).to.equal('rate_limited_device_day');
    expect(Number(refused.headers['retry-after'])).to.be.greaterThan(60);
  });

  it('caps open streams per device and frees the slot when a stream ends', async () => {
    const device = await gateway.provision({ openai: 'sk-streams-0123456789abcdef' }, { maxConcurrentStreamsPerDevice: 2 });
    upstream.respond(respondChunks(sseEvents([{ a: 1 }], { done: false }), { holdOpen: true }));
    const open: http.ClientRequest[] = [];
    for (let index = 0; index < 2; index += 1) {
      await new Promise<void>((resolve, reject) => {
        const request = http.request(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: device.headers, agent: false }, (response) => {
          response.once('data', () => resolve());
        });
        request.on('error', reject);
        request.end('{}');
        open.push(request);
      });
    }
    const before = upstream.requests.length;
    const refused = await post(device.headers);
    expect(refused.status).to.equal(429);
    expect(refused.headers['tollgate-error']).to.equal('rateLimited');
    expect(refused.json<{ error: { reason: string; message: string } }>().error).to.include({ reason: 'rate_limited_concurrent', message: 'Too many open requests from this device (at most 2 at once).' });
    expect(Number(refused.headers['retry-after'])).to.equal(1);
    expect(upstream.requests.length).to.equal(before);
    open[0]!.destroy();
    await upstream.requests[0]!.closed;
    upstream.reset();
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt += 1) {
      status = (await post(device.headers)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(status).to.equal(200);
    open[1]!.destroy();
  });
});
