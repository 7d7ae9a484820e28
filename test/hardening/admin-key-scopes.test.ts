/**
 * Admin keys with scopes and an expiry (core/management/admin-scopes.ts), over real HTTP on the management API and the
 * assistant server: a read key reads every GET route and is refused every write with 403 `scope_insufficient`, before
 * anything changes; an apps key changes apps but cannot mint keys or administrators nor touch provider keys; a key
 * never creates or revokes beyond itself; an expired key is refused `admin_key_expired`; keys made before scopes
 * existed keep the full scope; the OpenAPI document names each operation's scope.
 */
import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { authenticateAdminKey } from '../../core/management/admin-auth';
import { MIGRATIONS, type Migration } from '../../core/storage/migrations';
import { generateToken, hashToken, tokenHint } from '../../core/security/tokens';
import { TestGateway } from '../support/gateway';
import { spawnSync } from 'node:child_process';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

interface Reply {
  status: number;
  json: any;
  text: string;
}

describe('admin key scopes and expiry', function () {
  this.timeout(120_000);
  let gateway: TestGateway;
  let full: string;
  let readKey: { id: string; adminKey: string };
  let appsKey: { id: string; adminKey: string };
  let appId: string;

  const call = async (key: string, method: string, route: string, body?: unknown): Promise<Reply> => {
    const response = await fetch(`${gateway.url}/v1/admin${route}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // CSV or empty
    }
    return { status: response.status, json, text };
  };

  before(async () => {
    gateway = await TestGateway.start();
    full = (await gateway.gateway.management.createAdminKey({ name: 'root' })).adminKey;
    const read = await call(full, 'POST', '/admin-keys', { name: 'reader', scopes: ['read'] });
    expect(read.status, read.text).to.equal(201);
    expect(read.json).to.deep.include({ name: 'reader', scopes: ['read'], expiresAt: null });
    readKey = read.json;
    const apps = await call(full, 'POST', '/admin-keys', { name: 'app-manager', scopes: ['apps'] });
    expect(apps.status, apps.text).to.equal(201);
    appsKey = apps.json;
    appId = (await gateway.gateway.management.createApp({ name: 'Scoped app' })).id;
  });
  after(async () => {
    await gateway.close();
  });

  it('lets a read key GET every route, and refuses every write with 403 scope_insufficient before anything changes', async () => {
    const document = (await call(full, 'GET', '/openapi.json')).json as { paths: Record<string, Record<string, { 'x-tollgate-scope'?: string; security?: unknown[] }>> };
    const auditBefore = (await call(full, 'GET', '/audit?limit=1000')).json.length;
    const appsBefore = JSON.stringify((await call(full, 'GET', '/apps')).json);
    let writes = 0;
    let reads = 0;
    for (const [template, operations] of Object.entries(document.paths)) {
      const route = template
        .replace('{appId}', appId)
        .replace('{provider}', 'openai')
        .replace('{name}', 'play-integrity-decryption-key')
        .replace(/\{\w+\}/g, 'x_missing');
      for (const [method, operation] of Object.entries(operations)) {
        if (operation.security?.length === 0) continue; // sign-in and set-up: public
        if (template.startsWith('/session')) continue; // the caller's own dashboard session (a key has none: 401 no_session)
        const reply = await call(readKey.adminKey, method.toUpperCase(), route, method === 'get' ? undefined : {});
        if (method === 'get') {
          reads += 1;
          expect(operation['x-tollgate-scope'], `${method} ${template}`).to.equal('read');
          // Read: answered (a missing object is 404; an app without sign-in has no end users, 409), never refused.
          expect(reply.status, `${method} ${template}: ${reply.text}`).to.be.oneOf([200, 404, 409]);
        } else {
          writes += 1;
          expect(operation['x-tollgate-scope'], `${method} ${template}`).to.be.oneOf(['apps', 'secrets', 'admin']);
          expect(reply.status, `${method} ${template}: ${reply.text}`).to.equal(403);
          expect(reply.json.error.type).to.equal('forbidden');
          expect(reply.json.error.reason, `${method} ${template}`).to.equal('scope_insufficient');
          expect(reply.json.error.message).to.include(`"${operation['x-tollgate-scope']}" scope`);
        }
      }
    }
    expect(reads).to.be.greaterThan(20);
    expect(writes).to.be.greaterThan(25);
    expect((await call(full, 'GET', '/audit?limit=1000')).json.length).to.equal(auditBefore);
    expect(JSON.stringify((await call(full, 'GET', '/apps')).json)).to.equal(appsBefore);
  });

  it('lets an apps key change apps, but not create keys or administrators, nor touch provider keys', async () => {
    const updated = await call(appsKey.adminKey, 'PATCH', `/apps/${appId}`, { deviceLimitPerMinute: 7 });
    expect(updated.status, updated.text).to.equal(200);
    expect(updated.json.settings.deviceLimitPerMinute).to.equal(7);
    const created = await call(appsKey.adminKey, 'POST', '/apps', { name: 'Made by apps key' });
    expect(created.status, created.text).to.equal(201);
    const refusals: Array<[string, string, unknown]> = [
      ['POST', '/admin-keys', { name: 'escalate', scopes: ['admin'] }],
      ['POST', '/admin-keys', { name: 'sideways', scopes: ['apps'] }],
      ['DELETE', `/admin-keys/${readKey.id}`, undefined],
      ['POST', '/users', { username: 'intruder', password: 'a-long-enough-password' }],
      ['PUT', `/apps/${appId}/secrets/openai`, { value: 'sk-should-never-be-stored-0123456789' }],
      ['POST', `/apps/${appId}/secrets/openai/test`, {}],
      ['DELETE', `/apps/${appId}/secrets/openai`, undefined],
      ['PUT', `/apps/${appId}/attestation-secrets/play-integrity-decryption-key`, { value: 'AAAA' }],
    ];
    for (const [method, route, body] of refusals) {
      const reply = await call(appsKey.adminKey, method, route, body);
      expect(reply.status, `${method} ${route}: ${reply.text}`).to.equal(403);
      expect(reply.json.error.reason).to.equal('scope_insufficient');
    }
    const keys = (await call(full, 'GET', '/admin-keys')).json as Array<{ name: string; scopes: string[]; revokedAt: string | null }>;
    expect(keys.map((key) => key.name)).to.not.include.members(['escalate', 'sideways']);
    expect(keys.find((key) => key.name === 'reader')!.revokedAt).to.equal(null);
    expect(keys.find((key) => key.name === 'root')!.scopes).to.deep.equal(['admin']);
    expect((await call(full, 'GET', `/apps/${appId}/secrets`)).json).to.deep.equal([]);
    expect(((await call(full, 'GET', '/users')).json as Array<{ username: string }>).map((user) => user.username)).to.not.include('intruder');
  });

  it('never lets a key create or revoke beyond its own scope or expiry', async () => {
    const management = gateway.gateway.management;
    const appsGrant = { scopes: ['apps' as const], expiresAt: null };
    for (const scopes of [['secrets'], ['admin'], ['apps', 'secrets']] as const) {
      let refusal: any;
      await management.createAdminKey({ name: 'beyond', scopes: [...scopes] }, appsGrant).catch((error: unknown) => (refusal = error));
      expect(refusal?.reason, scopes.join(',')).to.equal('scope_exceeds_own');
    }
    // Within its scope it may (the management API's own route also asks for admin, checked above).
    expect((await management.createAdminKey({ name: 'narrower', scopes: ['read'] }, appsGrant)).scopes).to.deep.equal(['read']);
    let revokeRefusal: any;
    await management.revokeAdminKey((await call(full, 'GET', '/admin-keys')).json.find((key: { name: string }) => key.name === 'root').id, appsGrant).catch((error: unknown) => (revokeRefusal = error));
    expect(revokeRefusal?.reason).to.equal('scope_exceeds_own');

    // An admin key that expires cannot mint one that outlives it, over HTTP.
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    const temporary = await call(full, 'POST', '/admin-keys', { name: 'temporary', scopes: ['admin'], expiresAt: soon });
    expect(temporary.status, temporary.text).to.equal(201);
    expect(temporary.json.expiresAt).to.equal(soon);
    const forever = await call(temporary.json.adminKey, 'POST', '/admin-keys', { name: 'forever', scopes: ['read'] });
    expect(forever.status, forever.text).to.equal(403);
    expect(forever.json.error.reason).to.equal('scope_exceeds_own');
    const later = await call(temporary.json.adminKey, 'POST', '/admin-keys', { name: 'later', scopes: ['read'], expiresAt: new Date(Date.now() + 7_200_000).toISOString() });
    expect(later.status).to.equal(403);
    const within = await call(temporary.json.adminKey, 'POST', '/admin-keys', { name: 'within', scopes: ['read'], expiresAt: new Date(Date.now() + 1_800_000).toISOString() });
    expect(within.status, within.text).to.equal(201);
    // Nor a dashboard administrator, who never expires.
    const administrator = await call(temporary.json.adminKey, 'POST', '/users', { username: 'outliver', password: 'a-long-enough-password' });
    expect(administrator.status, administrator.text).to.equal(403);
    expect(administrator.json.error.reason).to.equal('scope_exceeds_own');
    // Bad input changes nothing: a past expiry, an unknown scope.
    const past = await call(full, 'POST', '/admin-keys', { name: 'past', expiresAt: '2001-01-01T00:00:00Z' });
    expect(past.status).to.equal(400);
    expect(past.json.error.fields).to.have.property('expiresAt');
    const unknown = await call(full, 'POST', '/admin-keys', { name: 'unknown', scopes: ['root'] });
    expect(unknown.status).to.equal(400);
    expect(unknown.json.error.fields).to.have.property('scopes');
  });

  it('refuses an expired key with unauthorized admin_key_expired, on the management API and the assistant server', async () => {
    const key = await call(full, 'POST', '/admin-keys', { name: 'short-lived', scopes: ['read'], expiresAt: new Date(Date.now() + 600_000).toISOString() });
    expect((await call(key.json.adminKey, 'GET', '/apps')).status).to.equal(200);
    // Its end, moved to the past in the database (as time passing would).
    await gateway.gateway.database('admin_keys').where({ id: key.json.id }).update({ expires_at: Date.now() - 1000 });
    const refused = await call(key.json.adminKey, 'GET', '/apps');
    expect(refused.status).to.equal(401);
    expect(refused.json.error).to.deep.include({ type: 'unauthorized', reason: 'admin_key_expired' });
    expect(refused.json.error.message).to.match(/expired at \d{4}-/);
    const mcp = await fetch(`${gateway.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.json.adminKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(mcp.status).to.equal(401);
    expect(((await mcp.json()) as { error: { reason: string } }).error.reason).to.equal('admin_key_expired');
  });

  it('bounds the assistant server by the key scope, and takes the scope on key creation', async () => {
    const connect = async (key: string) => {
      const client = new Client({ name: 'scope-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
      return client;
    };
    const text = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text;
    const reader = await connect(readKey.adminKey);
    try {
      const listed = await reader.callTool({ name: 'list_apps', arguments: {} });
      expect(listed.isError ?? false).to.equal(false);
      for (const [name, args] of [
        ['create_app', { name: 'nope' }],
        ['set_secret', { appId, provider: 'openai', value: 'sk-never-0123456789abcdef' }],
        ['create_admin_key', { name: 'nope', scopes: ['read'] }],
      ] as const) {
        const result = await reader.callTool({ name, arguments: args });
        expect(result.isError, name).to.equal(true);
        expect(JSON.parse(text(result)).error).to.deep.include({ type: 'forbidden', reason: 'scope_insufficient' });
      }
    } finally {
      await reader.close();
    }
    const root = await connect(full);
    try {
      const created = await root.callTool({ name: 'create_admin_key', arguments: { name: 'from-assistant', scopes: ['apps', 'secrets'] } });
      expect(created.isError ?? false, text(created)).to.equal(false);
      const key = JSON.parse(text(created)) as { adminKey: string; scopes: string[] };
      expect(key.scopes).to.deep.equal(['apps', 'secrets']);
      const identity = await authenticateAdminKey(gateway.gateway.database, key.adminKey);
      expect(identity?.scopes).to.deep.equal(['apps', 'secrets']);
    } finally {
      await root.close();
    }
    const apps = await connect(appsKey.adminKey);
    try {
      const result = await apps.callTool({ name: 'set_secret', arguments: { appId, provider: 'openai', value: 'sk-never-0123456789abcdef' } });
      expect(JSON.parse(text(result)).error.reason).to.equal('scope_insufficient');
      expect((await apps.callTool({ name: 'update_app', arguments: { appId, deviceLimitPerMinute: 9 } })).isError ?? false).to.equal(false);
    } finally {
      await apps.close();
    }
  });

  it('takes the scope and the expiry on key creation in the CLI, lists and revokes keys', async () => {
    const cli = (args: string[]) => {
      const result = spawnSync(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...gateway.env, TOLLGATE_LOG_LEVEL: 'warn' }, encoding: 'utf8' });
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    };
    const created = cli(['admin-keys', 'create', '--name', 'ci', '--scope', 'read,secrets', '--expires-in', '2d']);
    expect(created.status, created.stderr).to.equal(0);
    const key = JSON.parse(created.stdout) as { id: string; adminKey: string; scopes: string[]; expiresAt: string };
    expect(key.scopes).to.deep.equal(['read', 'secrets']);
    expect(Date.parse(key.expiresAt) - Date.now()).to.be.within(2 * 86_400_000 - 60_000, 2 * 86_400_000);
    expect((await call(key.adminKey, 'GET', '/apps')).status).to.equal(200);
    expect((await call(key.adminKey, 'POST', '/apps', { name: 'nope' })).json.error.reason).to.equal('scope_insufficient');
    const listed = cli(['admin-keys', 'list']);
    expect(JSON.parse(listed.stdout).adminKeys.find((entry: { id: string }) => entry.id === key.id)).to.deep.include({ scopes: ['read', 'secrets'], expiresAt: key.expiresAt, revokedAt: null });
    for (const bad of [['--scope', 'root'], ['--expires-in', 'soon']]) {
      const refused = cli(['admin-keys', 'create', '--name', 'bad', ...bad]);
      expect(refused.status, bad.join(' ')).to.equal(2);
    }
    expect(cli(['admin-keys', 'revoke', '--key', key.id]).status).to.equal(0);
    expect((await call(key.adminKey, 'GET', '/apps')).json.error.reason).to.equal('admin_key_invalid');
  });

  it('keeps the full admin scope, and no expiry, for keys made before scopes existed', async () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-scopes-'));
    const database: Knex = knex({ client: 'better-sqlite3', connection: { filename: path.join(directory, 'old.db') }, useNullAsDefault: true });
    const source = (migrations: readonly Migration[]): Knex.MigrationSource<Migration> => ({
      getMigrations: async () => [...migrations],
      getMigrationName: (migration) => migration.name,
      getMigration: async (migration) => ({ up: (k: Knex) => migration.up(k), down: (k: Knex) => migration.down(k) }),
    });
    try {
      const index = MIGRATIONS.findIndex((migration) => migration.name === 'hardening2-admin-key-scopes');
      expect(index).to.be.greaterThan(0);
      await database.migrate.latest({ migrationSource: source(MIGRATIONS.slice(0, index)) });
      const key = generateToken('admin');
      await database('admin_keys').insert({ id: 'adm_old', name: 'old', key_hash: hashToken(key), key_hint: tokenHint(key), created_at: 1, revoked_at: null });
      await database.migrate.latest({ migrationSource: source(MIGRATIONS) });
      const identity = await authenticateAdminKey(database, `Bearer ${key}`);
      expect(identity).to.deep.include({ id: 'adm_old', scopes: ['admin'], expiresAt: null });
    } finally {
      await database.destroy();
    }
  });
});
