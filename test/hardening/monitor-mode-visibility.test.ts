/**
 * Monitor mode (attestationMode "monitor", a rollout aid that forwards requests without a valid device token) is never
 * on silently and never lets a revoked device back in (docs/decisions/2026-12-05-monitor-mode.md):
 * - a warn line at boot for each app in monitor mode, and on every change of a security setting;
 * - the gauge tollgate_apps_in_monitor_mode on /metrics;
 * - audit entries with the old and the new value of each security setting changed;
 * - revoking a device of an app in monitor mode ends monitor mode (a revoked device could otherwise come back by sending
 *   no token), and a revoked device's expired token is refused even while monitor mode is on;
 * - TOLLGATE_MONITOR_MODE=off enforces attestation on every app.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { DeviceTokenService } from '../../core/attestation/device-tokens';
import { AuditRepository } from '../../core/storage/repositories';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';
import { metricSample, scrapeMetrics } from '../support/metrics';

interface LogLine {
  level: number;
  msg: string;
  appId?: string;
  changes?: Record<string, { from: unknown; to: unknown }>;
}

const warnings = (gateway: TestGateway): LogLine[] => gateway.logs.map((line) => JSON.parse(line) as LogLine).filter((line) => line.level === 40);

describe('monitor mode: visible, audited, and revocation still holds', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;

  before(async () => {
    upstream = await FakeUpstream.start();
  });
  after(async () => {
    await upstream.close();
  });

  const chat = (gateway: TestGateway, headers: Record<string, string>) =>
    rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { 'content-type': 'application/json', ...headers }, body: '{"model":"m","messages":[]}' });
  const reasonOf = (reply: { json<T>(): T }) => reply.json<{ error: { reason: string } }>().error.reason;

  it('warns at boot for each app in monitor mode, counts them on /metrics, and warns and audits old and new values on change', async () => {
    const env = { TOLLGATE_ENV: 'production', TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'), TOLLGATE_PROVIDER_OPENAI_BASE_URL: upstream.url };
    const first = await TestGateway.start({ env });
    let appId: string;
    try {
      const adminKey = (await first.gateway.management.createAdminKey({ name: 'ops' })).adminKey;
      appId = (await first.gateway.management.createApp({ name: 'Rollout' })).id;
      expect(metricSample(await scrapeMetrics(first), 'tollgate_apps_in_monitor_mode')).to.equal(0);
      const patched = await fetch(`${first.url}/v1/admin/apps/${appId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ attestationMode: 'monitor', allowMonitorInProduction: true, monitorProviders: ['openai'], openAccountRoutes: ['openai'], deviceLimitPerMinute: 30 }),
      });
      expect(patched.status, await patched.clone().text()).to.equal(200);
      // The audit entry holds each security setting's old and new value (a plain limit is only named in fields).
      const [entry] = await new AuditRepository(first.gateway.database).list({ action: 'admin.app.update', limit: 1 });
      expect(entry!.details).to.deep.include({
        changes: {
          attestationMode: { from: 'enforce', to: 'monitor' },
          allowMonitorInProduction: { from: false, to: true },
          monitorProviders: { from: null, to: ['openai'] },
          openAccountRoutes: { from: null, to: ['openai'] },
        },
      });
      expect((entry!.details as { fields: string[] }).fields).to.include('deviceLimitPerMinute');
      // The change is a warn line, with the same values.
      const switched = warnings(first).find((line) => line.appId === appId && /switched to attestation monitor mode/.test(line.msg));
      expect(switched, first.logs.join('\n')).to.not.equal(undefined);
      expect(switched!.changes!.attestationMode).to.deep.equal({ from: 'enforce', to: 'monitor' });
      expect(metricSample(await scrapeMetrics(first), 'tollgate_apps_in_monitor_mode')).to.equal(1);
      // A change of the opened routes alone is a warn line too.
      await first.gateway.management.updateApp(appId, { openAccountRoutes: null });
      expect(warnings(first).some((line) => line.appId === appId && line.changes?.openAccountRoutes !== undefined && /security settings/.test(line.msg))).to.equal(true);
    } finally {
      // Its data directory is kept for the next start (removed below).
      await first.gateway.close();
    }
    // The next start says so at boot.
    const second = await TestGateway.start({ env: { ...env, TOLLGATE_DATA_DIR: first.env.TOLLGATE_DATA_DIR! } });
    try {
      const boot = warnings(second).find((line) => line.appId === appId && /in attestation monitor mode/.test(line.msg));
      expect(boot, second.logs.join('\n')).to.not.equal(undefined);
      expect(metricSample(await scrapeMetrics(second), 'tollgate_apps_in_monitor_mode')).to.equal(1);
    } finally {
      await second.close();
      rmSync(first.dataDirectory, { recursive: true, force: true });
    }
  });

  it('ends monitor mode when a device is revoked, so that the device cannot come back without its token', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    try {
      const adminKey = (await gateway.gateway.management.createAdminKey({ name: 'ops', scopes: ['apps'] })).adminKey;
      const device = await gateway.provision({ openai: 'sk-monitor-revocation-0123456789' }, { attestationMode: 'monitor' });
      expect((await chat(gateway, { 'Tollgate-App-Token': device.appToken })).status, 'unverified, before').to.equal(200);
      const revoked = await fetch(`${gateway.url}/v1/admin/apps/${device.appId}/devices/${device.deviceId}/revoke`, { method: 'POST', headers: { authorization: `Bearer ${adminKey}` } });
      expect(revoked.status).to.equal(200);
      expect(await revoked.json()).to.deep.include({ revoked: true, attestationMode: 'enforce', monitorModeEnded: true });
      // Without its token (or with it), the revoked device stays out.
      const tokenless = await chat(gateway, { 'Tollgate-App-Token': device.appToken });
      expect(tokenless.status).to.equal(403);
      expect(reasonOf(tokenless)).to.equal('device_token_missing');
      const withToken = await chat(gateway, device.headers);
      expect(reasonOf(withToken)).to.equal('device_revoked');
      const [entry] = await new AuditRepository(gateway.gateway.database).list({ action: 'admin.device.revoke', limit: 1 });
      expect(entry!.details).to.deep.equal({ changes: { attestationMode: { from: 'monitor', to: 'enforce' } } });
      expect(warnings(gateway).some((line) => line.appId === device.appId && /left attestation monitor mode/.test(line.msg))).to.equal(true);
      expect(metricSample(await scrapeMetrics(gateway), 'tollgate_apps_in_monitor_mode')).to.equal(0);

      // Monitor mode switched on again, explicitly: the revoked device's expired token still names it, and is refused.
      await gateway.gateway.management.updateApp(device.appId, { attestationMode: 'monitor' });
      const past = new DeviceTokenService(gateway.gateway.database, gateway.gateway.cipher, () => Date.now() - 3_600_000);
      await past.initialize();
      const { token: expired } = await past.issue({ appId: device.appId, deviceId: device.deviceId, method: 'development', ttlSeconds: 60 });
      const stale = await chat(gateway, { 'Tollgate-App-Token': device.appToken, 'Tollgate-Device-Token': expired });
      expect(stale.status).to.equal(403);
      expect(reasonOf(stale)).to.equal('device_revoked');
      // The expired token of a device that was never revoked is still just unverified traffic.
      const { token: otherExpired } = await past.issue({ appId: device.appId, deviceId: 'device-never-revoked', method: 'development', ttlSeconds: 60 });
      expect((await chat(gateway, { 'Tollgate-App-Token': device.appToken, 'Tollgate-Device-Token': otherExpired })).status).to.equal(200);

      // Revoking every device ends it too.
      const all = await gateway.gateway.management.revokeAllDevices(device.appId);
      expect(all).to.deep.include({ attestationMode: 'enforce', monitorModeEnded: true });
      expect((await chat(gateway, { 'Tollgate-App-Token': device.appToken })).status).to.equal(403);
    } finally {
      await gateway.close();
    }
  });

  it('enforces attestation on every app with TOLLGATE_MONITOR_MODE=off, whatever the app says', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_MONITOR_MODE: 'off' } });
    try {
      const device = await gateway.provision({ openai: 'sk-monitor-off-0123456789abcdef' }, { attestationMode: 'monitor' });
      const refused = await chat(gateway, { 'Tollgate-App-Token': device.appToken });
      expect(refused.status).to.equal(403);
      expect(reasonOf(refused)).to.equal('device_token_missing');
      expect((await chat(gateway, device.headers)).status).to.equal(200);
      expect(metricSample(await scrapeMetrics(gateway), 'tollgate_apps_in_monitor_mode')).to.equal(0);
    } finally {
      await gateway.close();
    }
  });
});
