/**
 * The `tollgate` command line as docs/reference/cli.md specifies it, run as a real process on a real SQLite file, and `serve`
 * (what `npm start` runs) booting on a fresh directory with no other set-up.
 */
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gatewayNodeFlags } from '../../bench/harness';
import { FakeUpstream, respondJson } from '../support/fake-upstream';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

/** `run` without blocking this process, for commands that call a fake upstream served by this process. */
function runAsync(cwd: string, args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function run(cwd: string, args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    input: options.input ?? '',
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...options.env },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, json: () => JSON.parse(result.stdout) as Record<string, any> };
}

/** Starts `tollgate serve` (with `nodeFlags` for node) and resolves with its URL once the banner names it. */
function serve(cwd: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [...nodeFlags, CLI, 'serve'], { cwd, env: { PATH: process.env.PATH ?? '', TOLLGATE_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/[^\s]+)/.exec(stderr);
      if (match) resolve({ child, url: match[1]!, stderr: () => stderr });
    });
    child.stdout!.resume();
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('tollgate CLI', function () {
  // Each step is a node process opening the database: a dozen of them outlast mocha's 30 s on a loaded machine.
  this.timeout(180_000);
  let cwd: string;

  beforeEach(() => {
    cwd = mkdtempSync(path.join(os.tmpdir(), 'tollgate-cli-'));
  });
  afterEach(() => rmSync(cwd, { recursive: true, force: true }));

  it('creates an app, stores a secret from stdin, lists it masked, and never prints the value again', () => {
    // Commands other than serve, migrate and restore work on an existing database only.
    expect(run(cwd, ['migrate']).status).to.equal(0);
    const created = run(cwd, ['apps', 'create', '--name', 'My App', '--allow-development-attestation']);
    expect(created.status, created.stderr).to.equal(0);
    const app = created.json();
    expect(app.appToken).to.match(/^at_[0-9A-Za-z]{32}$/);
    expect(app.settings.allowDevelopmentAttestation).to.equal(true);
    expect(statSync(path.join(cwd, 'data', 'master.key')).mode & 0o777).to.equal(0o600);

    const secret = 'sk-cli-secret-value-0123456789abcdef';
    const set = run(cwd, ['secrets', 'set', '--app', app.id, '--provider', 'openai'], { input: `${secret}\n` });
    expect(set.status, set.stderr).to.equal(0);
    expect(set.json()).to.deep.include({ appId: app.id, provider: 'openai', masked: 'sk-…cdef' });
    const listed = run(cwd, ['secrets', 'list', '--app', app.id]);
    expect(listed.stdout).to.include('sk-…cdef').and.not.include(secret);
    const apps = run(cwd, ['apps', 'list']);
    expect(apps.json().apps).to.have.length(1);
    expect(apps.stdout).not.to.include(app.appToken);

    const devToken = run(cwd, ['dev-tokens', 'create', '--app', app.id]);
    expect(devToken.json().developmentToken).to.match(/^dt_/);
    const adminKey = run(cwd, ['admin-keys', 'create', '--name', 'ops']);
    expect(adminKey.json().adminKey).to.match(/^ak_/);
    const rotated = run(cwd, ['apps', 'rotate-token', '--app', app.id]);
    expect(rotated.json().appToken).to.match(/^at_/).and.not.equal(app.appToken);
    const updated = run(cwd, ['apps', 'update', '--app', app.id, '--device-limit', '5', '--allow-development-attestation', 'false', '--max-streams', '3', '--provider-limit', 'openai=9']);
    expect(updated.json().settings).to.deep.include({ deviceLimitPerMinute: 5, allowDevelopmentAttestation: false, maxConcurrentStreamsPerDevice: 3 });
    expect(updated.json().settings.providerLimitsPerMinute).to.deep.equal({ openai: 9 });
    const limited = run(cwd, ['apps', 'create', '--name', 'Limited', '--max-streams', '50', '--device-daily-quota', '1000']).json();
    expect(limited.settings).to.deep.include({ maxConcurrentStreamsPerDevice: 50, deviceDailyQuota: 1000 });
    expect(run(cwd, ['apps', 'disable', '--app', app.id]).json().status).to.equal('disabled');
  });

  it('opens and closes account routes and sets extra routes (apps update), refusing unknown slugs and bad patterns', () => {
    run(cwd, ['migrate']);
    const app = run(cwd, ['apps', 'create', '--name', 'Routes']).json();
    // Account routes: opened and closed relative to the current list; extra routes as SLUG:METHODS:PATTERN.
    const opened = run(cwd, ['apps', 'update', '--app', app.id, '--open-account-routes', 'openai,gemini', '--extra-route', 'openai:GET,post:evals/**', '--extra-route', 'openai:DELETE:models/ft:*']);
    expect(opened.status, opened.stderr).to.equal(0);
    expect(opened.json().settings.openAccountRoutes).to.deep.equal(['gemini', 'openai']);
    expect(opened.json().settings.extraRoutes).to.deep.equal([
      { provider: 'openai', methods: ['GET', 'POST'], path: 'evals/**' },
      { provider: 'openai', methods: ['DELETE'], path: 'models/ft:*' },
    ]);
    const closed = run(cwd, ['apps', 'update', '--app', app.id, '--close-account-routes', 'openai', '--no-extra-routes']).json().settings;
    expect(closed.openAccountRoutes).to.deep.equal(['gemini']);
    expect(closed.extraRoutes).to.equal(undefined);
    for (const [args, message] of [
      [['--open-account-routes', 'no-such-provider'], /openAccountRoutes: unknown provider/],
      [['--extra-route', 'openai:GET'], /--extra-route takes SLUG:METHOD/],
      [['--extra-route', 'openai:GET:../admin'], /extraRoutes/],
    ] as Array<[string[], RegExp]>) {
      const result = run(cwd, ['apps', 'update', '--app', app.id, ...args]);
      expect(result.status, args.join(' ')).to.be.greaterThan(0);
      expect(result.stderr, args.join(' ')).to.match(message);
    }
    expect(run(cwd, ['apps', 'get', '--app', app.id]).json().settings.openAccountRoutes).to.deep.equal(['gemini']);
  });

  it('refuses bad input with a one-line error, a non-zero exit and no partial state', () => {
    run(cwd, ['migrate']);
    const app = run(cwd, ['apps', 'create', '--name', 'Strict']).json();
    const cases: Array<[string[], string | undefined, RegExp]> = [
      [['secrets', 'set', '--app', app.id, '--provider', 'no-such-provider'], 'sk-abcdef0123456789', /unknown provider/],
      [['secrets', 'set', '--app', 'app_missing', '--provider', 'openai'], 'sk-abcdef0123456789', /not found/],
      [['secrets', 'set', '--app', app.id, '--provider', 'openai'], '', /no secret value/],
      [['secrets', 'set', '--app', app.id, '--provider', 'openai', '--base-url', 'https://evil.example'], 'sk-abcdef0123456789', /fixed host/],
      [['apps', 'create', '--name', 'x', '--apple-app-id', 'not-an-app-id'], undefined, /appleAppId/],
      [['apps', 'update', '--app', app.id, '--device-limit', '0'], undefined, /deviceLimitPerMinute/],
      [['apps', 'update', '--app', app.id, '--device-limit', 'many'], undefined, /integer/],
      [['apps', 'create'], undefined, /--name is required/],
      [['apps', 'frobnicate'], undefined, /unknown command/],
      [['apps', 'create', '--name', 'x', '--bogus'], undefined, /Unknown option/],
    ];
    for (const [args, input, message] of cases) {
      const result = run(cwd, args, { input });
      expect(result.status, args.join(' ')).to.be.greaterThan(0);
      expect(result.stdout, args.join(' ')).to.equal('');
      expect(result.stderr.trim().split('\n'), args.join(' ')).to.have.length(1);
      expect(result.stderr, args.join(' ')).to.match(message);
    }
    expect(run(cwd, ['secrets', 'list', '--app', app.id]).json().secrets).to.deep.equal([]);
    expect(run(cwd, ['apps', 'list']).json().apps).to.have.length(1);
    expect(run(cwd, ['apps', 'get', '--app', app.id]).json().settings.deviceLimitPerMinute).to.equal(60);
  });

  it('tests a stored key (secrets test) against the provider, and lists devices searched and paged', async () => {
    // OpenAI "List models" answered by a loopback fake (https://platform.openai.com/docs/api-reference/models/list).
    const upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { object: 'list', data: [{ id: 'gpt-4o-mini', object: 'model', created: 1686935002, owned_by: 'openai' }] }));
    try {
      const env = { TOLLGATE_PROVIDER_OPENAI_BASE_URL: upstream.url };
      run(cwd, ['migrate'], { env });
      const app = run(cwd, ['apps', 'create', '--name', 'Key test'], { env }).json();
      const secret = 'sk-cli-keycheck-0123456789abcdef';
      expect(run(cwd, ['secrets', 'set', '--app', app.id, '--provider', 'openai'], { input: `${secret}\n`, env }).status).to.equal(0);
      const tested = await runAsync(cwd, ['secrets', 'test', '--app', app.id, '--provider', 'openai'], env);
      expect(tested.status, tested.stderr).to.equal(0);
      expect(JSON.parse(tested.stdout)).to.include({ appId: app.id, provider: 'openai', outcome: 'ok', status: 200, request: 'GET v1/models' });
      expect(tested.stdout).to.not.include(secret).and.not.include('gpt-4o-mini');
      expect(upstream.requests).to.have.length(1);
      expect(upstream.last()).to.deep.include({ method: 'GET', url: '/v1/models' });
      expect(upstream.last().headers.authorization).to.equal(`Bearer ${secret}`);
      expect(run(cwd, ['secrets', 'set', '--app', app.id, '--provider', 'cohere'], { input: 'cohere-cli-0123456789abcdefghij\n', env }).status).to.equal(0);
      const unsupported = await runAsync(cwd, ['secrets', 'test', '--app', app.id, '--provider', 'cohere'], env);
      expect(unsupported.status).to.equal(1);
      expect(unsupported.stderr).to.include('declares no key check');

      const devices = run(cwd, ['devices', 'list', '--app', app.id, '--search', 'phone', '--platform', 'ios', '--limit', '10']);
      expect(devices.status, devices.stderr).to.equal(0);
      expect(devices.json()).to.deep.equal({ devices: [], total: 0, limit: 10, offset: 0, nextOffset: null });
      expect(run(cwd, ['devices', 'list', '--app', app.id, '--platform', 'windows']).status).to.equal(2);
      expect(run(cwd, ['devices', 'list', '--app', app.id, '--limit', '0']).status).to.equal(2);
      expect(run(cwd, ['devices', 'get', '--app', app.id, '--device', 'nope']).status).to.equal(1);
    } finally {
      await upstream.close();
    }
  });

  it('serve, with the node flags of npm start, boots on an empty directory, answers /healthz, prints how to start, and exits 0 on SIGTERM', async () => {
    // The flags `npm start` passes (package.json), which `npm run bench` starts the gateway with too.
    const flags = gatewayNodeFlags();
    expect(flags).to.include('--max-semi-space-size=32');
    const { child, url, stderr } = await serve(cwd, {}, flags);
    try {
      const health = await fetch(`${url}/healthz`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.include({ status: 'ok' });
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      expect(stderr()).to.include('admin-keys create').and.include('apps create');
      expect(existsSync(path.join(cwd, 'data', 'tollgate.db'))).to.equal(true);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited(child)).to.equal(0);
  });

  it('dashboard-users create and set-password (password on stdin): sign-in works, and a new password ends old sessions', async () => {
    run(cwd, ['migrate']);
    expect(run(cwd, ['dashboard-users', 'create', '--username', 'ops'], { input: 'short\n' }).status).to.not.equal(0);
    const created = run(cwd, ['dashboard-users', 'create', '--username', 'ops'], { input: 'first password 123\n' });
    expect(created.status, created.stderr).to.equal(0);
    expect(created.stdout).to.not.include('first password');
    const { child, url, stderr } = await serve(cwd, {});
    try {
      // An administrator exists: no set-up link is printed.
      expect(stderr()).to.not.include('/dashboard/setup#token=');
      const signIn = (password: string) => fetch(`${url}/v1/admin/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'ops', password }) });
      const first = await signIn('first password 123');
      expect(first.status).to.equal(200);
      const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0]!;
      expect((await fetch(`${url}/v1/admin/apps`, { headers: { cookie } })).status).to.equal(200);
      expect(run(cwd, ['dashboard-users', 'set-password', '--username', 'ops'], { input: 'second password 456\n' }).json()).to.include({ username: 'ops', sessionsEnded: true });
      expect((await fetch(`${url}/v1/admin/apps`, { headers: { cookie } })).status).to.equal(401);
      expect((await signIn('first password 123')).status).to.equal(401);
      expect((await signIn('second password 456')).status).to.equal(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited(child)).to.equal(0);
  });

  it('in production, refuses to boot without a master key', () => {
    const result = run(cwd, ['serve'], { env: { TOLLGATE_ENV: 'production', TOLLGATE_PORT: '0' } });
    expect(result.status).to.equal(1);
    expect(result.stderr).to.match(/TG_ERR_MASTER_KEY/);
    expect(existsSync(path.join(cwd, 'data', 'master.key'))).to.equal(false);
  });

  it('in production, refuses development attestation even for an app that allows it', async () => {
    const key = randomBytes(32).toString('base64');
    run(cwd, ['migrate'], { env: { TOLLGATE_MASTER_KEY: key } });
    const app = run(cwd, ['apps', 'create', '--name', 'Prod', '--allow-development-attestation'], { env: { TOLLGATE_MASTER_KEY: key } }).json();
    const { developmentToken } = run(cwd, ['dev-tokens', 'create', '--app', app.id], { env: { TOLLGATE_MASTER_KEY: key } }).json();
    const { child, url, stderr } = await serve(cwd, { TOLLGATE_ENV: 'production', TOLLGATE_MASTER_KEY: key });
    try {
      expect(stderr()).to.match(/development attestation is refused/);
      // No administrator yet, and still no set-up link in production (its output ends up in logs).
      expect(stderr()).to.not.include('/dashboard/setup#token=');
      expect(stderr()).to.include('dashboard-users create --username NAME');
      const response = await fetch(`${url}/v1/attest/development`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken },
        body: JSON.stringify({ developmentToken, deviceId: 'sim-1' }),
      });
      expect(response.status).to.equal(403);
      expect(response.headers.get('tollgate-error')).to.equal('attestationFailed');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited(child)).to.equal(0);
  });
});
