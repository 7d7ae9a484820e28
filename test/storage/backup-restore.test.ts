/**
 * `tollgate backup` and `tollgate restore`, run as real processes: a SQLite gateway with apps, a provider key, devices
 * (one revoked), an admin key, a dashboard administrator, a price and traffic is backed up while it serves, restored
 * into a real PostgreSQL, and a gateway on that PostgreSQL serves the old app token and device token, accepts the old
 * admin key and the old password, keeps the revoked device revoked, and injects the same provider key. Refusals: a
 * wrong master key, a non-empty target, a file that is not a backup; nothing is written then.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeUpstream, chatCompletion, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { requireService, startPostgres, type RunningPostgres } from '../support/services';
import { DashboardAuth } from '../../core/admin/dashboard-auth';
import { HISTORY_TABLES, TABLES_NOT_COPIED } from '../../core/storage/backup';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');
const CHAT = '/v1/proxy/openai/v1/chat/completions';

function cli(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function chat(url: string, headers: Record<string, string>): Promise<Response> {
  return fetch(`${url}${CHAT}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }) });
}

describe('backup and restore: SQLite with traffic into PostgreSQL', function () {
  // Each step is a CLI process that opens the database; the machine running the suite may be shared.
  this.timeout(180_000);
  let postgres: RunningPostgres;
  let upstream: FakeUpstream;
  let source: TestGateway;
  let work: string;
  let device: Provisioned;
  let revoked: Provisioned;
  let adminKey: string;
  const providerKey = 'sk-backup-0123456789abcdefghij';

  before(async function () {
    postgres = await requireService(this, startPostgres);
    upstream = await FakeUpstream.start();
    // An OpenAI chat completion (https://platform.openai.com/docs/api-reference/chat/object) reporting its usage.
    upstream.respond(respondJson(200, chatCompletion('Hello', { prompt: 12, completion: 5 })));
    source = await TestGateway.start({ upstreams: { openai: upstream.url } });
    work = mkdtempSync(path.join(os.tmpdir(), 'tollgate-backup-'));
    device = await source.provision({ openai: providerKey });
    const revokedToken = await source.deviceToken(device.appId, device.appToken, 'to-revoke');
    revoked = { ...device, deviceId: 'to-revoke', deviceToken: revokedToken, headers: { ...device.headers, 'Tollgate-Device-Token': revokedToken } };
    await source.gateway.management.revokeDevice(device.appId, 'to-revoke');
    adminKey = (await source.gateway.management.createAdminKey({ name: 'ops' })).adminKey;
    await new DashboardAuth(source.gateway.database).createUser('owner', 'a long password 123');
    await source.gateway.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 0.15, outputUsdPerMillion: 0.6 });
    const started = Date.now();
    for (let index = 0; index < 3; index += 1) expect((await chat(source.url, device.headers)).status).to.equal(200);
    await source.recordedUsage(device.appId, started, (events) => events.length >= 3);
  });
  after(async () => {
    await source?.close();
    await upstream?.close();
    postgres?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('backs up while the gateway serves (mode 0600), restores into PostgreSQL, and the old tokens and keys work there', async () => {
    const file = path.join(work, 'tollgate.backup');
    const backedUp = await cli(['backup', '--out', file, '--with-history'], source.env);
    expect(backedUp.status, backedUp.stderr).to.equal(0);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    const text = readFileSync(file, 'utf8');
    // Sealed, never decrypted: the provider key's value is nowhere in the file, nor any token.
    expect(text).to.not.include(providerKey).and.not.include(device.appToken).and.not.include(adminKey).and.not.include(device.deviceToken);
    const summary = JSON.parse(backedUp.stdout) as { tables: Record<string, number> };
    expect(summary.tables).to.include({ apps: 1, secrets: 1, admin_keys: 1, admin_users: 1, prices: 1 });
    expect(summary.tables.devices).to.equal(2);
    expect(summary.tables.signing_keys).to.be.greaterThan(0);
    expect(summary.tables.usage_events).to.be.greaterThan(2);
    for (const table of TABLES_NOT_COPIED) expect(summary.tables, table).to.not.have.property(table);

    const target = { ...source.env, TOLLGATE_DATABASE_URL: postgres.createDatabase('restored'), TOLLGATE_DATA_DIR: path.join(work, 'unused') };
    const restored = await cli(['restore', '--in', file], target);
    expect(restored.status, restored.stderr).to.equal(0);
    expect(JSON.parse(restored.stdout).tables).to.deep.equal(summary.tables);

    const moved = await TestGateway.start({ upstreams: { openai: upstream.url }, env: { TOLLGATE_DATABASE_URL: target.TOLLGATE_DATABASE_URL, TOLLGATE_MASTER_KEY: source.env.TOLLGATE_MASTER_KEY! } });
    try {
      const before = upstream.requests.length;
      const answer = await chat(moved.url, device.headers);
      expect(answer.status, await answer.clone().text()).to.equal(200);
      expect(upstream.requests.length).to.equal(before + 1);
      expect(upstream.last().headers.authorization).to.equal(`Bearer ${providerKey}`);
      const refused = await chat(moved.url, revoked.headers);
      expect(refused.status).to.equal(403);
      expect(((await refused.json()) as { error: { reason: string } }).error.reason).to.equal('device_revoked');
      expect(upstream.requests.length).to.equal(before + 1);
      const apps = await fetch(`${moved.url}/v1/admin/apps`, { headers: { authorization: `Bearer ${adminKey}` } });
      expect(apps.status).to.equal(200);
      expect(((await apps.json()) as Array<{ id: string }>).map((app) => app.id)).to.deep.equal([device.appId]);
      const signIn = await fetch(`${moved.url}/v1/admin/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'owner', password: 'a long password 123' }) });
      expect(signIn.status).to.equal(200);
      expect(await moved.gateway.management.listPrices()).to.have.length(1);
      // History came along, and the two new requests (one answered, one refused) were stored after it: the sequences were
      // moved past the restored ids.
      const events = await moved.recordedUsage(device.appId, 0, (rows) => rows.length >= summary.tables.usage_events! + 2);
      expect(events.length).to.equal(summary.tables.usage_events! + 2);
      // A new device still attests on the restored signing keys.
      expect(await moved.deviceToken(device.appId, device.appToken, 'new-after-restore')).to.match(/\./);
    } finally {
      await moved.close();
    }
  });

  it('refuses a wrong master key, a non-empty target and a file that is not a backup, writing nothing', async () => {
    const file = path.join(work, 'second.backup');
    expect((await cli(['backup', '--out', file], source.env)).status).to.equal(0);
    const history = JSON.parse(readFileSync(file, 'utf8').split('\n')[0]!) as { withHistory: boolean; tables: Record<string, number> };
    expect(history.withHistory).to.equal(false);
    for (const table of HISTORY_TABLES) expect(history.tables).to.not.have.property(table);
    // The file is never overwritten.
    const again = await cli(['backup', '--out', file], source.env);
    expect(again.status).to.equal(1);

    const url = postgres.createDatabase('refusals');
    const wrongKey = await cli(['restore', '--in', file], { ...source.env, TOLLGATE_DATABASE_URL: url, TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64') });
    expect(wrongKey.status).to.equal(1);
    expect(wrongKey.stderr).to.match(/master key differs/);
    const target = { ...source.env, TOLLGATE_DATABASE_URL: url };
    expect((await cli(['restore', '--in', file], target)).status).to.equal(0);
    const twice = await cli(['restore', '--in', file], target);
    expect(twice.status).to.equal(1);
    expect(twice.stderr).to.match(/not empty .*--replace/);
    expect((await cli(['restore', '--in', file, '--replace'], target)).status).to.equal(0);

    const bogus = path.join(work, 'bogus.json');
    writeFileSync(bogus, '{"hello":1}\n');
    const notBackup = await cli(['restore', '--in', bogus], { ...source.env, TOLLGATE_DATABASE_URL: postgres.createDatabase('bogus') });
    expect(notBackup.status).to.equal(1);
    expect(notBackup.stderr).to.match(/not a Tollgate backup/);
    expect((await cli(['backup'], source.env)).status).to.equal(2);
    expect(existsSync(path.join(work, 'unused'))).to.equal(false);
  });
});
