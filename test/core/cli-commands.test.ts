/**
 * Every `tollgate` command, run as a real process against the SQLite database of a running gateway: what it prints,
 * what it changed (seen through the gateway and the audit log, whose target each change names from its inputs), and
 * the command-line conventions (per-command --help, a bare `tollgate`, --output table, no database created by a
 * command that needs one). The last test checks that every command the CLI dispatches is run by some test.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { AuditRepository } from '../../core/storage/repositories';

const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');
const CHECKOUT = path.resolve(__dirname, '..', '..', '..');
const CHAT = '/v1/proxy/openai/v1/chat/completions';

interface Result {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  json<T = Record<string, any>>(): T;
}

function run(args: string[], env: Record<string, string>, options: { input?: string; cwd?: string } = {}): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd ?? os.tmpdir(), env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin!.end(options.input ?? '');
    child.once('close', (status) => resolve({ status, stdout, stderr, json: <T>() => JSON.parse(stdout) as T }));
  });
}

async function ok(args: string[], env: Record<string, string>, input?: string): Promise<Record<string, any>> {
  const result = await run(args, env, { input });
  expect(result.status, `${args.join(' ')}: ${result.stderr}`).to.equal(0);
  return result.json();
}

describe('tollgate CLI: every command', function () {
  this.timeout(120_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let env: Record<string, string>;
  let device: Provisioned;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    env = { ...gateway.env, TOLLGATE_LOG_LEVEL: 'warn' };
    device = await gateway.provision({ openai: 'sk-cli-commands-0123456789abcdef' });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const chat = (headers: Record<string, string>) =>
    fetch(`${gateway.url}${CHAT}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini' }) });
  const auditTargets = async (action: string) => (await new AuditRepository(gateway.gateway.database).list({ limit: 200 })).filter((entry) => entry.action === action).map((entry) => entry.target);
  /** The gateway sees a CLI change once its change poll ran (TOLLGATE_CHANGE_POLL_MS=50 in tests). */
  const eventually = async (check: () => Promise<boolean>) => {
    const deadline = Date.now() + 10_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('the gateway did not see the change');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it('devices revoke: the device\'s next call answers device_revoked, and the audit entry names app/device', async () => {
    expect((await chat(device.headers)).status).to.equal(200);
    const revoked = await ok(['devices', 'revoke', '--app', device.appId, '--device', device.deviceId], env);
    expect(revoked).to.deep.include({ appId: device.appId, revoked: true });
    let reason = '';
    await eventually(async () => {
      const response = await chat(device.headers);
      reason = response.status === 200 ? '' : ((await response.json()) as { error: { reason: string } }).error.reason;
      return reason !== '';
    });
    expect(reason).to.equal('device_revoked');
    expect(await auditTargets('cli.device.revoke')).to.deep.equal([`${device.appId}/${device.deviceId}`]);
    const shown = await ok(['devices', 'get', '--app', device.appId, '--device', device.deviceId], env);
    expect(shown.revokedAt).to.be.a('string');
  });

  it('devices revoke-all: every device token issued before it is refused', async () => {
    const other = await gateway.deviceToken(device.appId, device.appToken, 'second-device');
    const headers = { ...device.headers, 'Tollgate-Device-Token': other };
    expect((await chat(headers)).status).to.equal(200);
    expect(await ok(['devices', 'revoke-all', '--app', device.appId], env)).to.have.property('revokedBefore');
    await eventually(async () => (await chat(headers)).status === 403);
    expect(await auditTargets('cli.device.revoke_all')).to.deep.equal([device.appId]);
  });

  it('apps enable/disable/delete and secrets delete change the gateway and write their audit entries', async () => {
    const app = await gateway.provision({ openai: 'sk-cli-commands-delete-0123456789' });
    expect((await ok(['apps', 'disable', '--app', app.appId], env)).status).to.equal('disabled');
    await eventually(async () => (await chat(app.headers)).status === 403 || (await chat(app.headers)).status === 401);
    expect((await ok(['apps', 'enable', '--app', app.appId], env)).status).to.equal('active');
    await eventually(async () => (await chat(app.headers)).status === 200);
    expect(await ok(['secrets', 'delete', '--app', app.appId, '--provider', 'openai'], env)).to.deep.include({ deleted: true });
    expect((await ok(['secrets', 'list', '--app', app.appId], env)).secrets).to.deep.equal([]);
    expect(await auditTargets('cli.secret.delete')).to.deep.equal([`${app.appId}/openai`]);
    expect(await ok(['apps', 'delete', '--app', app.appId], env)).to.deep.include({ id: app.appId, deleted: true });
    expect((await run(['apps', 'get', '--app', app.appId], env)).status).to.equal(1);
    expect(await auditTargets('cli.app.delete')).to.deep.equal([app.appId]);
    // A refused change writes no audit entry.
    expect((await run(['apps', 'delete', '--app', app.appId], env)).status).to.equal(1);
    expect(await auditTargets('cli.app.delete')).to.have.length(1);
  });

  it('requests, usage, prices list/set/delete and providers list', async () => {
    await gateway.recordedUsage(device.appId, 0, (events) => events.length > 0);
    const log = await ok(['requests', '--app', device.appId, '--limit', '5'], env);
    expect(JSON.stringify(log)).to.include('v1/chat/completions');
    expect((await ok(['usage', '--app', device.appId, '--by', 'provider'], env)).requests).to.be.greaterThan(0);
    expect(await ok(['prices', 'set', '--provider', 'openai', '--model', 'cli-model', '--input-usd', '1', '--output-usd', '2'], env)).to.deep.include({ provider: 'openai', model: 'cli-model' });
    expect(JSON.stringify(await ok(['prices', 'list'], env))).to.include('cli-model');
    expect(await ok(['prices', 'delete', '--provider', 'openai', '--model', 'cli-model'], env)).to.deep.include({ deleted: true });
    // The dated default table behind estimates where no price is set: each row with the day its page was read.
    const defaults = (await ok(['prices', 'defaults'], env)) as unknown as { enabled: boolean; prices: Array<{ provider: string; model: string; priceAsOf: string; source: string }> };
    expect(defaults.enabled).to.equal(true);
    expect(defaults.prices.find((price) => price.provider === 'openai' && price.model === 'gpt-4o-mini')).to.deep.include({ source: 'https://platform.openai.com/docs/pricing' });
    expect(defaults.prices.every((price) => /^\d{4}-\d{2}-\d{2}$/.test(price.priceAsOf))).to.equal(true);
    const providers = (await ok(['providers', 'list'], env)).providers as Array<{ slug: string }>;
    expect(providers.map((provider) => provider.slug)).to.include('openai');
  });

  it('attestation-secrets set/list and signing-keys rotate (old device tokens still verify)', async () => {
    const set = await run(['attestation-secrets', 'set', '--app', device.appId, '--name', 'play-integrity-decryption-key'], env, { input: `${Buffer.alloc(32, 7).toString('base64')}\n` });
    expect(set.status, set.stderr).to.equal(0);
    expect(set.stdout).to.not.include(Buffer.alloc(32, 7).toString('base64'));
    expect(JSON.stringify(await ok(['attestation-secrets', 'list', '--app', device.appId], env))).to.include('play-integrity-decryption-key');
    const fresh = await gateway.provision({ openai: 'sk-cli-commands-rotate-0123456789' });
    const rotated = await ok(['signing-keys', 'rotate'], env);
    expect(rotated.kid).to.be.a('string');
    expect((await chat(fresh.headers)).status).to.equal(200);
  });

  it('attest verify and verify-assertion refuse a forged artifact with the reason, exit 1', async () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'tollgate-attest-'));
    try {
      writeFileSync(path.join(work, 'att'), 'bm90IGNib3I=');
      writeFileSync(path.join(work, 'chain.pem'), '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
      writeFileSync(path.join(work, 'key.pem'), '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n');
      const apple = await run(['attest', 'verify', '--method', 'apple-app-attest', '--app-id', 'TEAMID1234.com.example', '--key-id', 'a2V5', '--attestation', path.join(work, 'att'), '--client-data-hash', '00'], {});
      const android = await run(['attest', 'verify', '--method', 'android-key-attestation', '--chain', path.join(work, 'chain.pem'), '--challenge', '00'], {});
      const assertion = await run(['attest', 'verify-assertion', '--public-key', path.join(work, 'key.pem'), '--app-id', 'TEAMID1234.com.example', '--assertion', 'AAAA', '--client-data-hash', '00', '--previous-counter', '0'], {});
      for (const result of [apple, android, assertion]) {
        expect(result.status, result.stderr).to.equal(1);
        expect(result.stdout).to.equal('');
        expect(result.stderr.trim().split('\n')).to.have.length(1);
      }
      expect(apple.stderr).to.match(/invalid \(/);
      expect(android.stderr).to.match(/invalid \(/);
      // No database is needed (nor created) to verify an artifact offline.
      expect(readdirSync(work).sort()).to.deep.equal(['att', 'chain.pem', 'key.pem']);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('mcp: the assistant server answers initialize over stdio', async () => {
    // MCP stdio transport: newline-delimited JSON-RPC (https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#stdio).
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cli-test', version: '1' } } };
    const child = spawn(process.execPath, [CLI, 'mcp'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let stdout = '';
        let stderr = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes('\n')) resolve(stdout.split('\n')[0]!);
        });
        child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.once('exit', (code) => reject(new Error(`mcp exited ${code}: ${stderr}`)));
        child.stdin!.write(`${JSON.stringify(initialize)}\n`);
      });
      const answer = JSON.parse(line) as { id: number; result: { serverInfo: { name: string } } };
      expect(answer.id).to.equal(1);
      expect(answer.result.serverInfo).to.have.property('name');
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('migrate creates a database; commands that need one refuse to create it, naming TOLLGATE_DATA_DIR', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'tollgate-nodb-'));
    try {
      for (const args of [['apps', 'list'], ['apps', 'create', '--name', 'Lost'], ['admin-keys', 'create', '--name', 'x'], ['mcp']]) {
        const refused = await run(args, { PATH: process.env.PATH ?? '' }, { cwd: empty });
        expect(refused.status, args.join(' ')).to.equal(1);
        expect(refused.stderr, args.join(' ')).to.include('TOLLGATE_DATA_DIR');
        expect(readdirSync(empty), args.join(' ')).to.deep.equal([]);
      }
      const migrated = await run(['migrate'], {}, { cwd: empty });
      expect(migrated.status, migrated.stderr).to.equal(0);
      expect(existsSync(path.join(empty, 'data', 'tollgate.db'))).to.equal(true);
      expect((await run(['apps', 'list'], {}, { cwd: empty })).json().apps).to.deep.equal([]);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('a bare tollgate prints usage on stderr and exits 2; --help exits 0; each command has its own --help', async () => {
    const bare = await run([], {});
    expect(bare.status).to.equal(2);
    expect(bare.stdout).to.equal('');
    expect(bare.stderr).to.include('Usage:').and.include('tollgate serve');
    const help = await run(['--help'], {});
    expect(help.status).to.equal(0);
    expect(help.stdout).to.include('tollgate backup --out FILE');
    const revoke = await run(['devices', 'revoke', '--help'], {});
    expect(revoke.status).to.equal(0);
    expect(revoke.stdout).to.include('revoke --app ID --device DEVICE_ID').and.not.include('tollgate serve');
    const create = await run(['apps', 'create', '--help'], {});
    expect(create.stdout).to.include('--allow-development-attestation').and.not.include('tollgate secrets');
    expect((await run(['no-such-command', '--help'], {})).status).to.equal(2);
  });

  it('--output table prints a readable table; --output json (the default) one JSON object; another value is a usage error', async () => {
    const table = await run(['apps', 'list', '--output', 'table'], env);
    expect(table.status, table.stderr).to.equal(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).to.match(/^ID\s+NAME\s+STATUS/);
    expect(lines[1]).to.match(/^-+\s+-+/);
    expect(table.stdout).to.include(device.appId);
    expect(() => JSON.parse(table.stdout)).to.throw();
    const record = await run(['apps', 'get', '--app', device.appId, '--output', 'table'], env);
    expect(record.stdout).to.match(/^FIELD\s+VALUE/).and.match(new RegExp(`^id\\s+${device.appId}$`, 'm'));
    expect((await run(['apps', 'list', '--output', 'json'], env)).json().apps).to.be.an('array');
    expect((await run(['apps', 'list', '--output', 'yaml'], env)).status).to.equal(2);
  });

  it('every command the CLI dispatches is run by a test', () => {
    const source = readFileSync(path.join(CHECKOUT, 'bin', 'tollgate.ts'), 'utf8');
    const commands = [...source.matchAll(/case '([a-z][a-z-]*(?: [a-z][a-z-]*)?)':/g)].map((match) => match[1]!);
    expect(commands.length).to.be.greaterThan(30);
    const files: string[] = [];
    const walk = (directory: string) => {
      for (const entry of readdirSync(directory)) {
        const full = path.join(directory, entry);
        if (entry === 'node_modules') continue;
        if (statSync(full).isDirectory()) walk(full);
        else if (/\.test\.ts$/.test(entry)) files.push(readFileSync(full, 'utf8'));
      }
    };
    walk(path.join(CHECKOUT, 'test'));
    const tests = files.join('\n');
    const untested = commands.filter((command) => {
      const words = command.split(' ');
      const pattern = words.length === 1 ? new RegExp(`'${words[0]}'[,\\]]`) : new RegExp(`'${words[0]}', '${words[1]}'`);
      return !pattern.test(tests);
    });
    expect(untested, 'commands no test runs').to.deep.equal([]);
  });
});
