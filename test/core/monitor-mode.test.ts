/**
 * Monitor-only rollout (issue "A dashboard an operator would choose"): an app in `attestationMode: "monitor"` forwards a
 * request without a valid device token and counts it as unverified; a revoked device is still refused; the mode can be
 * narrowed to some providers; a production gateway refuses the mode unless the operator opts in explicitly.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';

describe('monitor-only attestation mode', () => {
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

  const chat = (headers: Record<string, string>, path = '/v1/proxy/openai/v1/chat/completions') =>
    rawRequest(gateway.url, { method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body: '{"model":"m","messages":[]}' });

  it('forwards a request without a device token, with the key injected, and counts it as unverified', async () => {
    const device = await gateway.provision({ openai: 'sk-monitor-0123456789abcdef' }, { attestationMode: 'monitor' });
    upstream.reset();
    const unverified = await chat({ 'Tollgate-App-Token': device.appToken });
    expect(unverified.status, unverified.text()).to.equal(200);
    const forged = await chat({ 'Tollgate-App-Token': device.appToken, 'Tollgate-Device-Token': 'not-a-token' });
    expect(forged.status).to.equal(200);
    expect(upstream.requests).to.have.length(2);
    expect(upstream.last().headers.authorization).to.equal('Bearer sk-monitor-0123456789abcdef');
    expect(upstream.last().headers['tollgate-device-token']).to.equal(undefined);
    expect((await chat(device.headers)).status).to.equal(200);
    await gateway.recordedUsage(device.appId, 0, (events) => events.length === 3);
    const usage = await gateway.gateway.management.usageSummary(device.appId, 0, Date.now() + 1);
    expect(usage.verification).to.deep.equal({ verified: 1, unverified: 2 });
    // An unverified request is never recorded as a device.
    expect(usage.topDevices).to.deep.equal([{ deviceId: device.deviceId, requests: 1 }]);
  });

  it('still refuses a revoked device, and an app in enforce mode', async () => {
    const device = await gateway.provision({ openai: 'sk-monitor-revoked-0123456789' }, { attestationMode: 'monitor' });
    await gateway.gateway.management.revokeDevice(device.appId, device.deviceId);
    const revoked = await chat(device.headers);
    expect(revoked.status).to.equal(403);
    expect(revoked.json<{ error: { reason: string } }>().error.reason).to.equal('device_revoked');
    const enforced = await gateway.provision({ openai: 'sk-enforce-0123456789abcdef' });
    const refused = await chat({ 'Tollgate-App-Token': enforced.appToken });
    expect(refused.status).to.equal(403);
    expect(refused.json<{ error: { reason: string } }>().error.reason).to.equal('device_token_missing');
  });

  it('monitors only the providers named in monitorProviders', async () => {
    const device = await gateway.provision({ openai: 'sk-monitor-some-0123456789', anthropic: 'sk-ant-monitor-0123456789' }, { attestationMode: 'monitor', monitorProviders: ['openai'] });
    expect((await chat({ 'Tollgate-App-Token': device.appToken })).status).to.equal(200);
    const anthropic = await chat({ 'Tollgate-App-Token': device.appToken }, '/v1/proxy/anthropic/v1/messages');
    expect(anthropic.status).to.equal(403);
  });

  it('is refused on a production gateway unless allowMonitorInProduction is set with it', async () => {
    const production = await TestGateway.start({ env: { TOLLGATE_ENV: 'production', TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64') } });
    try {
      const app = await production.gateway.management.createApp({ name: 'Prod app' });
      let refusal: unknown;
      try {
        await production.gateway.management.updateApp(app.id, { attestationMode: 'monitor' });
      } catch (error) {
        refusal = error;
      }
      expect(refusal).to.have.property('code', 'TG_ERR_VALIDATION');
      expect((await production.gateway.management.getApp(app.id)).settings.attestationMode).to.equal('enforce');
      const opted = await production.gateway.management.updateApp(app.id, { attestationMode: 'monitor', allowMonitorInProduction: true });
      expect(opted.settings.attestationMode).to.equal('monitor');
    } finally {
      await production.close();
    }
  });
});
