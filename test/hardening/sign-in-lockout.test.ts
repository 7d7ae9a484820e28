/**
 * Dashboard sign-in lockout under concurrency, on SQLite and on PostgreSQL: 40 wrong passwords sent at once lock the
 * account (a failed attempt is counted before its password is checked, by one atomic update), then the right password
 * is refused until the lock ends, and accepted after. Through the real DashboardAuth on a migrated database; the clock
 * is the test's, so the lock's end is reached without waiting.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { DashboardAuth, MAX_FAILED_SIGN_INS, SIGN_IN_LOCK_MS } from '../../core/admin/dashboard-auth';
import { loadConfiguration } from '../../core/configuration/configuration';
import { migrate, openDatabase } from '../../core/storage/database';
import { requireService, startPostgres, type RunningPostgres } from '../support/services';

const PASSWORD = 'the right password, long enough';

function suite(name: string, env: () => Record<string, string>) {
  describe(`dashboard sign-in lockout under concurrency (${name})`, function () {
    this.timeout(60_000);
    let directory: string;
    let database: Knex;
    let now = 1_800_000_000_000;
    let auth: DashboardAuth;

    before(async () => {
      directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-lockout-'));
      database = openDatabase(loadConfiguration({ TOLLGATE_DATA_DIR: directory, ...env() }, directory));
      await migrate(database);
      auth = new DashboardAuth(database, { clock: () => now });
      await auth.createUser('owner', PASSWORD);
    });
    after(async () => {
      await database?.destroy();
      if (directory) rmSync(directory, { recursive: true, force: true });
    });

    it('40 concurrent wrong passwords lock the account; the right password is refused until the lock ends', async () => {
      const results = await Promise.all(Array.from({ length: 40 }, (_, index) => auth.signIn('owner', `wrong guess ${index}`)));
      const checked = results.filter((result) => result === null).length;
      const locked = results.filter((result) => result !== null && 'lockedForSeconds' in result).length;
      // At most the allowed number of guesses had their password checked; every other one found the lock.
      expect(checked).to.be.at.most(MAX_FAILED_SIGN_INS);
      expect(checked + locked).to.equal(40);
      expect(results.some((result) => result !== null && 'sessionId' in result)).to.equal(false);

      const during = await auth.signIn('owner', PASSWORD);
      expect(during).to.have.property('lockedForSeconds').that.is.greaterThan(0);
      now += SIGN_IN_LOCK_MS - 1_000;
      expect(await auth.signIn('owner', PASSWORD)).to.have.property('lockedForSeconds');
      now += 2_000;
      const after = await auth.signIn('owner', PASSWORD);
      expect(after).to.have.property('sessionId');
    });

    it('a series of failures below the limit is ended by the right password; at the limit the account locks', async () => {
      for (let index = 0; index < MAX_FAILED_SIGN_INS - 1; index += 1) expect(await auth.signIn('owner', 'wrong')).to.equal(null);
      expect(await auth.signIn('owner', PASSWORD)).to.have.property('sessionId');
      for (let index = 0; index < MAX_FAILED_SIGN_INS; index += 1) expect(await auth.signIn('owner', 'wrong')).to.equal(null);
      expect(await auth.signIn('owner', PASSWORD)).to.have.property('lockedForSeconds');
      now += SIGN_IN_LOCK_MS + 1;
      expect(await auth.signIn('owner', 'wrong')).to.equal(null);
      expect(await auth.signIn('owner', PASSWORD)).to.have.property('sessionId');
    });

    it('an unknown name answers null, as a wrong password does', async () => {
      expect(await auth.signIn('nobody', PASSWORD)).to.equal(null);
    });
  });
}

suite('SQLite', () => ({}));

let postgres: RunningPostgres | undefined;
describe('(PostgreSQL)', function () {
  this.timeout(60_000);
  before(async function () {
    postgres = await requireService(this, startPostgres);
  });
  after(() => postgres?.stop());
  suite('PostgreSQL', () => ({ TOLLGATE_DATABASE_URL: postgres!.createDatabase('sign_in_lockout') }));
});
