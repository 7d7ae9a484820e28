/**
 * Time-bound controls, checked with the gateway's injectable clock (no waiting, no timed assertion): each test moves
 * the clock to just before and just after a boundary and asserts what crossed the wire.
 * - "revoke every device" at instant T refuses the tokens issued at or before T and none issued after it, even in the
 *   same second (device tokens carry `iatMs`);
 * - an attestation challenge is refused once its 5 minutes are over;
 * - a dashboard session ends after its lifetime;
 * - a signing key retired by a rotation verifies only the tokens it signed before it was retired.
 */
import { expect } from 'chai';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { DeviceTokenService } from '../../core/attestation/device-tokens';
import { CHALLENGE_TTL_MS } from '../../core/routes/attest';
import { DeviceRepository } from '../../core/storage/repositories';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

/** 2027-01-15T08:00:00.250Z: a quarter of a second into a whole second, so that "the same second" has room on both sides. */
const START = 1_800_000_000_250;

describe('time-bound controls (injectable clock)', function () {
  this.timeout(60_000);
  let now = START;
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { ok: true }));
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, clock: () => now });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });
  beforeEach(() => {
    now += 3_600_000; // every test starts an hour later, on the same quarter second
  });

  const proxy = async (appToken: string, deviceToken: string) => {
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/models`, { headers: { 'tollgate-app-token': appToken, 'tollgate-device-token': deviceToken } });
    const body = (await response.json()) as { error?: { reason: string } };
    return { status: response.status, reason: body.error?.reason };
  };

  it('revoke-all refuses the tokens issued up to its instant and keeps one issued 100 ms later in the same second', async () => {
    const app = await gateway.createApp({});
    await gateway.setSecret(app.appId, 'openai', 'sk-clocked-0000000000000');
    const before = await gateway.deviceToken(app.appId, app.appToken, 'device-before');
    now += 100;
    const revoked = await gateway.gateway.management.revokeAllDevices(app.appId);
    expect(Date.parse(revoked.revokedBefore)).to.equal(now + 1);
    const atTheInstant = await gateway.deviceToken(app.appId, app.appToken, 'device-at');
    now += 100; // still the same second as the revocation and as the first token
    expect(Math.floor(now / 1000)).to.equal(Math.floor((now - 200) / 1000));
    const after = await gateway.deviceToken(app.appId, app.appToken, 'device-after');
    expect(await proxy(app.appToken, before)).to.deep.equal({ status: 403, reason: 'device_revoked' });
    expect(await proxy(app.appToken, atTheInstant)).to.deep.equal({ status: 403, reason: 'device_revoked' });
    expect((await proxy(app.appToken, after)).status).to.equal(200);
  });

  it('an attestation challenge is refused once its five minutes are over, and accepted a millisecond before', async () => {
    const app = await gateway.createApp({ androidPackage: 'com.example.clocked' });
    // An attested Android key, as the chain route stores it, so that a refresh (signature over the challenge) can be made.
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyId = createHash('sha256').update(publicKey.export({ format: 'der', type: 'spki' })).digest('hex');
    await new DeviceRepository(gateway.gateway.database).recordAttestation({ appId: app.appId, deviceId: keyId, method: 'android-key-attestation', publicKey: publicKey.export({ format: 'pem', type: 'spki' }).toString(), now });
    const challenge = async () => ((await (await fetch(`${gateway.url}/v1/attest/challenge`, { method: 'POST', headers: { 'tollgate-app-token': app.appToken } })).json()) as { challenge: string }).challenge;
    const refresh = async (issued: string) => {
      const response = await fetch(`${gateway.url}/v1/attest/android-key-attestation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken },
        body: JSON.stringify({ challenge: issued, keyId, signature: sign('sha256', Buffer.from(issued, 'utf8'), privateKey).toString('base64') }),
      });
      return { status: response.status, reason: ((await response.json()) as { error?: { reason: string } }).error?.reason };
    };
    const late = await challenge();
    const inTime = await challenge();
    now += CHALLENGE_TTL_MS - 1;
    expect((await refresh(inTime)).status).to.equal(200);
    now += 1; // exactly five minutes after issue: expired
    expect(await refresh(late)).to.deep.equal({ status: 403, reason: 'challenge_invalid' });
  });

  it('a dashboard session ends after its lifetime (12 hours): the cookie is refused from then on', async () => {
    const username = 'clocked-admin';
    const password = 'a long enough password';
    const setup = await fetch(`${gateway.url}/v1/admin/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: gateway.url },
      body: JSON.stringify({ setupToken: gateway.gateway.setupToken, username, password }),
    });
    expect(setup.status, await setup.clone().text()).to.equal(201);
    const cookie = setup.headers.getSetCookie().find((line) => line.startsWith('tollgate_session='))!.split(';')[0]!;
    const session = () => fetch(`${gateway.url}/v1/admin/session`, { headers: { cookie } });
    expect((await session()).status).to.equal(200);
    now += 12 * 3_600_000 - 1;
    expect((await session()).status).to.equal(200);
    now += 1;
    const expired = await session();
    expect(expired.status).to.equal(401);
    expect(((await expired.json()) as { error: { reason: string } }).error.reason).to.equal('no_credentials');
    expect((await fetch(`${gateway.url}/v1/admin/apps`, { headers: { cookie } })).status).to.equal(401);
  });

  it('a retired signing key verifies only what it signed before its retirement', async () => {
    const app = await gateway.createApp({});
    await gateway.setSecret(app.appId, 'openai', 'sk-clocked-0000000000000');
    // A second node that loaded the key set before the rotation and keeps signing with the old key.
    const lagging = new DeviceTokenService(gateway.gateway.database, gateway.gateway.cipher, () => now);
    await lagging.initialize();
    const signedBefore = await lagging.issue({ appId: app.appId, deviceId: 'device-lagging', method: 'development', ttlSeconds: 3600 });
    await gateway.gateway.database('devices').insert({ app_id: app.appId, device_id: 'device-lagging', method: 'development', public_key: null, counter: 0, created_at: now, last_attested_at: now, revoked_at: null });
    now += 1000;
    await gateway.gateway.deviceTokens.rotate();
    now += 1000;
    const signedAfter = await lagging.issue({ appId: app.appId, deviceId: 'device-lagging', method: 'development', ttlSeconds: 3600 });
    expect(signedAfter.token.split('.')[0]).to.equal(signedBefore.token.split('.')[0]); // the same (old) kid
    expect((await proxy(app.appToken, signedBefore.token)).status).to.equal(200);
    expect(await proxy(app.appToken, signedAfter.token)).to.deep.equal({ status: 403, reason: 'device_token_invalid' });
  });
});
