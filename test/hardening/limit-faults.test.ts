/**
 * Rate limits under the cases the suite missed (issue 16, "The suite's own holes"):
 * - when several policies refuse at once, `Retry-After` is the LONGEST wait (retrying sooner would be refused again);
 * - a rate-limit store that cannot count refuses the request with 503 `serviceUnavailable`
 *   (`rate_limit_store_unavailable`, `Retry-After`), even when its stream-slot calls succeed: nothing reaches the provider.
 */
import { expect } from 'chai';
import path from 'node:path';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { FaultyConsumeStore } from '../support/faulty-store-plugin';
import { metricSample, scrapeMetrics } from '../support/metrics';

const FAULTY_STORE_PLUGIN = path.resolve(__dirname, '..', 'support', 'faulty-store-plugin.js');

describe('rate limits: the longest Retry-After, and a store that cannot count', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;

  before(async () => {
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
  });
  after(() => upstream.close());

  it('Retry-After is the longest wait of the refusing policies (device-day, not device-minute)', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    try {
      // Two per minute and two per day: the third request is refused by both, for ~30 s and for ~12 h.
      const device = await gateway.provision({ openai: 'sk-retry-after-000000000000' }, { deviceLimitPerMinute: 2, deviceDailyQuota: 2 });
      for (let index = 0; index < 2; index += 1) expect((await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: device.headers })).status).to.equal(200);
      const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: device.headers });
      expect(refused.status).to.equal(429);
      const body = (await refused.json()) as { error: { message: string } };
      expect(body.error.message).to.match(/device and device-day/);
      const retryAfter = Number(refused.headers.get('retry-after'));
      // The day quota refills one request every 12 hours (43 200 s); the minute limit one every 30 s.
      expect(retryAfter).to.be.within(43_000, 43_200);
      expect(refused.headers.get('ratelimit')).to.match(/"device";r=0;t=\d+, "app";r=\d+;t=\d+, "device-day";r=0;t=\d+/);
    } finally {
      await gateway.close();
    }
  });

  for (const mode of ['reject', 'throw'] as const) {
    it(`a store whose consume ${mode === 'reject' ? 'rejects' : 'throws'} refuses with 503 serviceUnavailable while its slot calls succeed`, async () => {
      const gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_PLUGINS: FAULTY_STORE_PLUGIN, TOLLGATE_TEST_FAULTY_CONSUME: mode } });
      try {
        const app = await gateway.createApp({});
        await gateway.setSecret(app.appId, 'openai', 'sk-faulty-store-000000000000');
        // The attest route counts with the same store (and so refuses too): the device token is minted directly.
        const { token } = await gateway.gateway.deviceTokens.issue({ appId: app.appId, deviceId: 'device-faulty', method: 'development', ttlSeconds: 600 });
        const calls = FaultyConsumeStore.consumeCalls;
        const before = upstream.requests.length;
        const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': token } });
        expect(response.status).to.equal(503);
        expect(response.headers.get('tollgate-error')).to.equal('serviceUnavailable');
        expect(response.headers.get('retry-after')).to.match(/^\d+$/);
        expect(((await response.json()) as { error: { reason: string } }).error.reason).to.equal('rate_limit_store_unavailable');
        expect(FaultyConsumeStore.consumeCalls).to.equal(calls + 1);
        expect(upstream.requests.length).to.equal(before);
        const attest = await fetch(`${gateway.url}/v1/attest/challenge`, { method: 'POST', headers: { 'tollgate-app-token': app.appToken } });
        expect(attest.status).to.equal(503);
        expect(((await attest.json()) as { error: { reason: string } }).error.reason).to.equal('rate_limit_store_unavailable');
        // Both refusals are logged and counted, the attestation's as the proxy's.
        expect(metricSample(await scrapeMetrics(gateway), 'tollgate_dependency_refusals_total{cause="rate_limit_store_unavailable"}')).to.equal(2);
        const refusalLines = gateway.logs.map((line) => JSON.parse(line) as { msg: string; reason?: string }).filter((line) => line.msg.startsWith('request refused') && line.reason === 'rate_limit_store_unavailable');
        expect(refusalLines).to.have.length(2);
      } finally {
        await gateway.close();
      }
    });
  }
});
