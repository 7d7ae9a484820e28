/**
 * Two nodes on one PostgreSQL, one of them with its clock 2 s ahead (TOLLGATE_TEST_CLOCK_OFFSET_MS, honoured outside
 * production only, shifts the node process's clock). "Revoke every device token issued until now", made on the node
 * with the right clock, refuses every token issued before it by the node that runs ahead, on both nodes; a token
 * issued after it works on both. Both nodes read time as the database's (core/storage/database-clock.ts); before, the
 * node ahead stamped its tokens 2 s in the future and they survived the revocation for their whole hour.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';
import { requireService, startPostgres, type RunningPostgres } from '../support/services';

const CHAT = '/v1/proxy/openai/v1/chat/completions';
const SKEW_MS = 2000;

describe('revoke-all across nodes whose clocks disagree by 2 s', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;
  let upstream: FakeUpstream;
  let right: TestGateway;
  let ahead: TestGateway;

  before(async function () {
    postgres = await requireService(this, startPostgres);
    upstream = await FakeUpstream.start();
    const shared = { TOLLGATE_DATABASE_URL: postgres.createDatabase('clock_skew'), TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64') };
    right = await TestGateway.start({ upstreams: { openai: upstream.url }, env: shared });
    ahead = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { ...shared, TOLLGATE_TEST_CLOCK_OFFSET_MS: String(SKEW_MS) } });
  });
  after(async () => {
    await ahead?.close();
    await right?.close();
    await upstream?.close();
    postgres?.stop();
  });

  it('refuses on both nodes every token the node ahead issued before the revocation, and accepts later ones', async () => {
    const { appId, appToken } = await right.createApp({ deviceLimitPerMinute: 1000, appLimitPerMinute: 1000 });
    await right.setSecret(appId, 'openai', 'sk-skew-0123456789abcdef');
    const issuedBefore = await ahead.deviceToken(appId, appToken, 'device-before');
    const send = (node: TestGateway, deviceToken: string) => rawRequest(node.url, { method: 'POST', path: CHAT, headers: { 'tollgate-app-token': appToken, 'tollgate-device-token': deviceToken }, body: '{}' });
    await right.gateway.directory.poll();
    await ahead.gateway.directory.poll();
    expect((await send(right, issuedBefore)).status).to.equal(200);
    expect((await send(ahead, issuedBefore)).status).to.equal(200);

    // The revocation comes after the token, by more than the clocks' stated tolerance (a few ms).
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { revokedBefore } = await right.gateway.management.revokeAllDevices(appId);
    await right.gateway.directory.poll();
    await ahead.gateway.directory.poll();
    for (const node of [right, ahead]) {
      const refused = await send(node, issuedBefore);
      expect(refused.status, `${node === right ? 'right' : 'ahead'} node, revoked before ${revokedBefore}: ${refused.text()}`).to.equal(403);
      expect(refused.json<{ error: { reason: string } }>().error.reason).to.equal('device_revoked');
    }

    await new Promise((resolve) => setTimeout(resolve, 100));
    const issuedAfter = await ahead.deviceToken(appId, appToken, 'device-after');
    expect((await send(right, issuedAfter)).status).to.equal(200);
    expect((await send(ahead, issuedAfter)).status).to.equal(200);
  });
});
