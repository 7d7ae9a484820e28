/**
 * Lower findings of issue 16, each with its test:
 * - masks reveal nothing of short, JSON or PEM secrets (property: no 4-character run of a short secret, no character of
 *   a service-account key but its client_email domain);
 * - development device ids that differ only by case are one device, so a revoked id cannot come back in another case
 *   (the normal form of docs/security.md, "Device ids").
 */
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { maskSecret, normalizeDeviceId } from '../../core/contract';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

const serviceAccountJson = () =>
  JSON.stringify(
    {
      type: 'service_account',
      project_id: 'acme-prod-4821',
      private_key_id: '3f1c0e9d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e',
      private_key: generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: 'tollgate@acme-prod-4821.iam.gserviceaccount.com',
      client_id: '112233445566778899001',
      token_uri: 'https://oauth2.googleapis.com/token',
    },
    null,
    2,
  );

describe('masks reveal nothing of short or JSON secrets', () => {
  it('a value under 24 characters shows nothing of itself', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 0, maxLength: 23 }), (value) => {
        expect(maskSecret(value)).to.be.oneOf(['…', 'JSON value', 'PEM key', 'JSON key (…@' + (/@([A-Za-z0-9.-]+)"/.exec(value)?.[1] ?? '') + ')']);
      }),
      { numRuns: 500, seed: 20261124 },
    );
    for (const value of ['short', 'sk-0123456789abcdefghi', '12345678901234567890123']) expect(maskSecret(value)).to.equal('…');
  });

  it('a long value shows its last 4 characters and at most a public vendor marker', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 24, maxLength: 200 }).filter((value) => value.trim().length >= 24 && !/^\s*([{[]|-----BEGIN)/.test(value)), (value) => {
        const mask = maskSecret(value);
        const [marker, tail] = mask.split('…') as [string, string];
        expect(tail).to.equal(value.trim().slice(-4));
        expect(marker).to.match(/^([A-Za-z]{1,8}[-_])?$/);
      }),
      { numRuns: 500, seed: 20261124 },
    );
    expect(maskSecret('sk-proj-0123456789abcdefWXYZ')).to.equal('sk-…WXYZ');
    expect(maskSecret('0123456789abcdef0123456789abWXYZ')).to.equal('…WXYZ');
  });

  it('a service-account JSON shows only its client_email domain; other JSON and PEM keys show nothing', () => {
    const json = serviceAccountJson();
    expect(maskSecret(json)).to.equal('JSON key (…@acme-prod-4821.iam.gserviceaccount.com)');
    expect(maskSecret(`  ${json}\n`)).to.equal('JSON key (…@acme-prod-4821.iam.gserviceaccount.com)');
    expect(maskSecret('{"api_key":"0123456789abcdef0123456789abcdef"}')).to.equal('JSON value');
    expect(maskSecret('{"truncated": "0123456789abcdef0123456789abcdef')).to.equal('JSON value');
    expect(maskSecret(JSON.parse(json).private_key as string)).to.equal('PEM key');
  });

  it('through the gateway: provider and attestation secrets are stored with these masks', async () => {
    const gateway = await TestGateway.start({});
    try {
      const app = await gateway.createApp({});
      const json = serviceAccountJson();
      const stored = await gateway.gateway.management.setAttestationSecret(app.appId, 'play-integrity-service-account', { value: json });
      expect(stored.masked).to.equal('JSON key (…@acme-prod-4821.iam.gserviceaccount.com)');
      const decryption = await gateway.gateway.management.setAttestationSecret(app.appId, 'play-integrity-decryption-key', { value: 'c2hvcnQ=' });
      expect(decryption.masked).to.equal('…');
      const short = await gateway.gateway.management.setSecret({ appId: app.appId, provider: 'openai', value: 'sk-short-key-1234' });
      expect(short.masked).to.equal('…');
      const listed = JSON.stringify([await gateway.gateway.management.listSecrets(app.appId), await gateway.gateway.management.listAttestationSecrets(app.appId)]);
      for (const fragment of ['acme-prod-4821"', 'PRIVATE', '3f1c', 'c2hv', '1234', 'tollgate@']) expect(listed).to.not.include(fragment);
    } finally {
      await gateway.close();
    }
  });
});

describe('device ids in normal form', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('the normal form: lower case for ids a client names (development, Play Integrity) and Android key ids; App Attest key ids as they are', () => {
    expect(normalizeDeviceId('development', 'Sim-iPhone-15')).to.equal('sim-iphone-15');
    expect(normalizeDeviceId('android-play-integrity', 'pi:Inst-ABC')).to.equal('pi:inst-abc');
    expect(normalizeDeviceId('android-key-attestation', 'AB'.repeat(32))).to.equal('ab'.repeat(32));
    expect(normalizeDeviceId('apple-app-attest', 'AbC+/dEf=')).to.equal('AbC+/dEf=');
    expect(normalizeDeviceId('some-plugin-method', 'MiXeD')).to.equal('MiXeD');
  });

  it('development ids that differ only by case are one device: revoking one case refuses every case, old tokens and new attestations', async () => {
    const app = await gateway.createApp({});
    await gateway.setSecret(app.appId, 'openai', 'sk-device-ids-000000000000');
    const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(app.appId);
    const attest = async (deviceId: string) => {
      const response = await fetch(`${gateway.url}/v1/attest/development`, { method: 'POST', headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken }, body: JSON.stringify({ developmentToken, deviceId }) });
      return { status: response.status, body: (await response.json()) as { deviceToken?: string; deviceId?: string; error?: { reason: string } } };
    };
    const first = await attest('Simulator-ONE');
    expect(first.status).to.equal(200);
    expect(first.body.deviceId).to.equal('simulator-one');
    const second = await attest('simulator-one');
    expect(second.body.deviceId).to.equal('simulator-one');
    expect((await gateway.gateway.management.listDevices(app.appId)).map((device) => device.deviceId)).to.deep.equal(['simulator-one']);

    const revoked = await gateway.gateway.management.revokeDevice(app.appId, 'SIMULATOR-one');
    expect(revoked.deviceId).to.equal('simulator-one');
    for (const token of [first.body.deviceToken!, second.body.deviceToken!]) {
      const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': app.appToken, 'tollgate-device-token': token } });
      expect(response.status).to.equal(403);
      expect(((await response.json()) as { error: { reason: string } }).error.reason).to.equal('device_revoked');
    }
    for (const variant of ['SIMULATOR-ONE', 'simulator-One', 'simulator-one']) {
      const again = await attest(variant);
      expect(again.status, variant).to.equal(403);
      expect(again.body.error!.reason).to.equal('device_revoked');
    }
    expect(upstream.requests.length).to.equal(0);
  });
});
