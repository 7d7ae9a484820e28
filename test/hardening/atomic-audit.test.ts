/**
 * An admin change and its audit entry are one write (issue 17): with the audit insert failing (a trigger that refuses
 * every row of audit_log), a change made through the admin API, the assistant server's management service or the CLI
 * leaves nothing changed and the caller gets a typed error; once the audit log accepts rows again the same change
 * goes through with its entry. On SQLite and on PostgreSQL. CLI changes are audited with actor `cli:<os user>`.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { AuditRepository } from '../../core/storage/repositories';
import { TestGateway } from '../support/gateway';
import { CLI } from '../support/nodes';
import { requireService, startPostgres, type RunningPostgres } from '../support/services';

interface Reply {
  status: number;
  headers: Headers;
  body: { error?: { type: string; reason: string }; [key: string]: unknown };
}

function suite(name: string, databaseUrl: () => string | undefined, failAudit: (gateway: TestGateway) => Promise<void>, restoreAudit: (gateway: TestGateway) => Promise<void>) {
  describe(`admin changes and their audit entry are one transaction (${name})`, function () {
    this.timeout(60_000);
    let gateway: TestGateway;
    let adminKey: string;
    const call = async (method: string, path: string, body?: unknown): Promise<Reply> => {
      const response = await fetch(`${gateway.url}/v1/admin${path}`, {
        method,
        headers: { authorization: `Bearer ${adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as Reply['body'] };
    };
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...gateway.env, TOLLGATE_LOG_LEVEL: 'error' }, cwd: gateway.dataDirectory, encoding: 'utf8', timeout: 30_000 });

    before(async () => {
      const url = databaseUrl();
      gateway = await TestGateway.start(url ? { env: { TOLLGATE_DATABASE_URL: url } } : {});
      ({ adminKey } = await gateway.gateway.management.createAdminKey({ name: 'auditor' }));
    });
    after(async () => {
      await gateway?.close();
    });

    it('a failing audit insert undoes rotate-token, update, create and revoke, with a typed error; the old token keeps working', async () => {
      const { appId, appToken } = await gateway.createApp({ name: 'Kept' });
      const before = await gateway.gateway.management.getApp(appId);
      const appsBefore = (await gateway.gateway.management.listApps()).length;
      const auditBefore = (await new AuditRepository(gateway.gateway.database).list({ limit: 1000 })).length;
      await failAudit(gateway);
      try {
        const rotated = await call('POST', `/apps/${appId}/rotate-token`);
        expect(rotated.status).to.equal(500);
        expect(rotated.headers.get('tollgate-error')).to.equal('internalError');
        expect(rotated.body.error).to.include({ type: 'internalError', reason: 'audit_write_failed' });
        expect(JSON.stringify(rotated.body)).to.not.match(/at_[A-Za-z0-9]{32}/);

        const renamed = await call('PATCH', `/apps/${appId}`, { name: 'Changed', deviceLimitPerMinute: 7 });
        expect(renamed.body.error?.reason).to.equal('audit_write_failed');
        const created = await call('POST', '/apps', { name: 'Never' });
        expect(created.body.error?.reason).to.equal('audit_write_failed');
        const disabled = await call('POST', `/apps/${appId}/disable`);
        expect(disabled.body.error?.reason).to.equal('audit_write_failed');
        const secret = await call('PUT', `/apps/${appId}/secrets/openai`, { value: 'sk-never-stored-0123456789' });
        expect(secret.body.error?.reason).to.equal('audit_write_failed');

        // The assistant server's path (ManagementService.audited, as the MCP tools use it).
        let mcpError: unknown;
        await gateway.gateway.management
          .audited(() => ({ actor: 'auditor', action: 'mcp.rotate_app_token', target: appId, details: null }), () => gateway.gateway.management.rotateAppToken(appId))
          .catch((error: unknown) => (mcpError = error));
        expect((mcpError as { reason?: string }).reason).to.equal('audit_write_failed');

        // The CLI: refused with a non-zero exit, nothing changed.
        const cliRotate = cli('apps', 'rotate-token', '--app', appId);
        expect(cliRotate.status, cliRotate.stderr).to.equal(1);
        expect(cliRotate.stdout).to.not.match(/at_[A-Za-z0-9]{32}/);

        // Nothing changed: same token, name, settings, status; no new app, no secret; no audit row.
        const after = await gateway.gateway.management.getApp(appId);
        expect(after).to.deep.equal(before);
        expect((await gateway.gateway.management.listApps()).length).to.equal(appsBefore);
        expect(await gateway.gateway.management.listSecrets(appId)).to.deep.equal([]);
        expect((await new AuditRepository(gateway.gateway.database).list({ limit: 1000 })).length).to.equal(auditBefore);
      } finally {
        await restoreAudit(gateway);
      }
      // The old app token still works on the wire (it was never rotated away).
      const attested = await gateway.deviceToken(appId, appToken);
      expect(attested).to.be.a('string');

      // With the audit log back, the same change goes through with its entry, written by the same transaction.
      const rotated = await call('POST', `/apps/${appId}/rotate-token`);
      expect(rotated.status).to.equal(200);
      const entries = await new AuditRepository(gateway.gateway.database).list({ limit: 1000 });
      expect(entries.map((entry) => [entry.actor, entry.action, entry.target])).to.deep.include(['key:auditor', 'admin.app.rotate_token', appId]);
    });

    it('audits CLI changes with actor cli:<os user>', async () => {
      const created = cli('apps', 'create', '--name', 'From the shell');
      expect(created.status, created.stderr).to.equal(0);
      const app = JSON.parse(created.stdout) as { id: string };
      const rotated = cli('apps', 'rotate-token', '--app', app.id);
      expect(rotated.status, rotated.stderr).to.equal(0);
      const entries = await new AuditRepository(gateway.gateway.database).list({ actor: `cli:${os.userInfo().username}` });
      expect(entries.map((entry) => [entry.action, entry.target])).to.deep.include.members([
        ['cli.app.create', app.id],
        ['cli.app.rotate_token', app.id],
      ]);
      expect(JSON.stringify(entries)).to.not.match(/at_[A-Za-z0-9]{32}/);
    });
  });
}

suite(
  'SQLite',
  () => undefined,
  async (gateway) => {
    await gateway.gateway.database.raw("CREATE TRIGGER audit_down BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit log unavailable'); END");
  },
  async (gateway) => {
    await gateway.gateway.database.raw('DROP TRIGGER audit_down');
  },
);

let postgres: RunningPostgres | undefined;
describe('(PostgreSQL)', function () {
  this.timeout(60_000);
  before(async function () {
    postgres = await requireService(this, startPostgres);
  });
  after(() => postgres?.stop());
  suite(
    'PostgreSQL',
    () => postgres!.createDatabase('audit_atomic'),
    async (gateway) => {
      await gateway.gateway.database.raw("CREATE FUNCTION audit_down() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'audit log unavailable'; END $$ LANGUAGE plpgsql");
      await gateway.gateway.database.raw('CREATE TRIGGER audit_down BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_down()');
    },
    async (gateway) => {
      await gateway.gateway.database.raw('DROP TRIGGER audit_down ON audit_log');
      await gateway.gateway.database.raw('DROP FUNCTION audit_down()');
    },
  );
});
