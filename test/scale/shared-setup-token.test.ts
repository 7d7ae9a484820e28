/**
 * The first-run set-up link in a fleet: two gateways on one PostgreSQL print the same one-time link, a node that
 * restarts prints it again instead of replacing it, the link printed by one node works on the other (once), and a
 * production node issues none.
 */
import { expect } from 'chai';
import { TestGateway } from '../support/gateway';
import { requireService, startPostgres, type RunningPostgres } from '../support/services';

describe('fleet-safe first run: one set-up link shared through the database', function () {
  this.timeout(120_000);
  let postgres: RunningPostgres;

  before(async function () {
    postgres = await requireService(this, startPostgres);
  });
  after(() => postgres?.stop());

  it('every node prints the same link, a restart keeps it, and it works once on any node', async () => {
    const env = { TOLLGATE_DATABASE_URL: postgres.createDatabase('fleet_setup'), TOLLGATE_MASTER_KEY: Buffer.alloc(32, 9).toString('base64') };
    const first = await TestGateway.start({ env });
    const second = await TestGateway.start({ env });
    try {
      const token = first.gateway.setupToken;
      expect(token).to.match(/^su_[0-9A-Za-z]{43}$/);
      expect(second.gateway.setupToken).to.equal(token);
      await first.close();
      const restarted = await TestGateway.start({ env });
      expect(restarted.gateway.setupToken).to.equal(token);
      await restarted.close();

      const setup = (url: string, username: string) =>
        fetch(`${url}/v1/admin/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ setupToken: token, username, password: 'correct horse battery' }) });
      // Printed by the first node, used on the second.
      expect((await setup(second.url, 'owner')).status).to.equal(201);
      const again = await setup(second.url, 'intruder');
      expect(again.status).to.equal(401);
      expect(((await again.json()) as { error: { reason: string } }).error.reason).to.equal('setup_token_invalid');
      const later = await TestGateway.start({ env });
      expect(later.gateway.setupToken).to.equal(null);
      await later.close();
    } finally {
      await second.close();
    }
  });

  it('a production node issues no set-up link', async () => {
    const gateway = await TestGateway.start({ env: { TOLLGATE_DATABASE_URL: postgres.createDatabase('fleet_setup_prod'), TOLLGATE_ENV: 'production' } });
    try {
      expect(gateway.gateway.setupToken).to.equal(null);
      expect(gateway.logText()).to.not.include('su_');
    } finally {
      await gateway.close();
    }
  });
});
