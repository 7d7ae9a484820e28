/**
 * The deploy recipes (deploy/): no container engine runs on the machines that run this suite, so the steps the
 * Dockerfile, the compose file and the systemd unit run are scripts, and this test runs them in a clean directory:
 * assemble the runtime tree from the built checkout, start a production node with start.sh, see healthcheck.js pass,
 * stop it with SIGTERM. The recipes themselves are checked for what they promise (multi-stage, non-root, read-only root
 * file system, health check, two gateways behind TLS on PostgreSQL and Redis).
 */
import { expect } from 'chai';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../support/services';

const CHECKOUT = path.resolve(__dirname, '..', '..', '..');
const DEPLOY = path.join(CHECKOUT, 'deploy');

describe('deploy recipes: their scripts run in a clean directory', function () {
  this.timeout(300_000);
  let work: string;
  let runtime: string;

  before(() => {
    work = mkdtempSync(path.join(os.tmpdir(), 'tollgate-deploy-'));
    runtime = path.join(work, 'opt', 'tollgate');
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it('assemble-runtime.sh builds the runtime tree from the package (dependencies linked: no registry here)', () => {
    const output = execFileSync('sh', [path.join(DEPLOY, 'scripts', 'assemble-runtime.sh'), CHECKOUT, runtime], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? work, TOLLGATE_DEPENDENCIES_FROM: path.join(CHECKOUT, 'node_modules') },
    });
    expect(output).to.match(/^assembled \d+\.\d+\.\d+ in /m);
    for (const file of ['package.json', 'package-lock.json', 'dist/bin/tollgate.js', 'dist/dashboard/index.html', 'deploy/scripts/start.sh', 'deploy/scripts/healthcheck.js']) expect(existsSync(path.join(runtime, file)), file).to.equal(true);
    for (const absent of ['test', 'core', 'dist/test', 'bench']) expect(existsSync(path.join(runtime, absent)), absent).to.equal(false);
  });

  it('start.sh refuses production without a master key, then migrates and serves; healthcheck.js passes; SIGTERM exits 0', async () => {
    // The copy inside the runtime tree, as the image and the unit run it.
    const start = path.join(runtime, 'deploy', 'scripts', 'start.sh');
    const base = { PATH: process.env.PATH ?? '', TOLLGATE_ENV: 'production', TOLLGATE_DATA_DIR: path.join(work, 'data') };
    const refused = spawnSync('sh', [start], { encoding: 'utf8', env: base });
    expect(refused.status).to.equal(1);
    expect(refused.stderr).to.include('TOLLGATE_MASTER_KEY_FILE');

    const keyFile = path.join(work, 'master.key');
    writeFileSync(keyFile, randomBytes(32).toString('base64'), { mode: 0o400 });
    const port = await freePort();
    const adminPort = await freePort();
    const env = { ...base, TOLLGATE_MASTER_KEY_FILE: keyFile, TOLLGATE_PORT: String(port), TOLLGATE_ADMIN_PORT: String(adminPort) };
    const child = spawn(start, [], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const healthcheck = () => spawnSync(process.execPath, [path.join(DEPLOY, 'scripts', 'healthcheck.js')], { env: { TOLLGATE_PORT: String(port) } }).status;
      const deadline = Date.now() + 120_000;
      // Ready, and the banner written (it follows the listen by a moment).
      while (healthcheck() !== 0 || !stderr.includes('listening on')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the node did not become ready: ${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(stderr).to.include('(production)').and.include(`127.0.0.1:${adminPort}`);
      expect(stderr).to.not.include('setup#token=');
      expect((await fetch(`http://127.0.0.1:${port}/dashboard/`)).status).to.equal(404);
      expect((await fetch(`http://127.0.0.1:${adminPort}/metrics`)).status).to.equal(200);
      expect(existsSync(path.join(work, 'data', 'tollgate.db'))).to.equal(true);
    } finally {
      child.kill('SIGTERM');
    }
    // start.sh execs node: the signal reaches the server itself, which drains and exits 0.
    expect(await exited).to.equal(0);
    expect(spawnSync(process.execPath, [path.join(DEPLOY, 'scripts', 'healthcheck.js')], { env: { TOLLGATE_PORT: String(port) } }).status).to.equal(1);
  });

  it('the recipes call these scripts and keep their promises', () => {
    const dockerfile = readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8');
    expect(dockerfile.match(/^FROM /gm)).to.have.length(2);
    expect(dockerfile).to.match(/^USER node$/m).and.match(/^HEALTHCHECK .*healthcheck\.js/m).and.match(/assemble-runtime\.sh/).and.match(/^ENTRYPOINT \[".*start\.sh"/m);
    const compose = readFileSync(path.join(DEPLOY, 'compose.yaml'), 'utf8');
    for (const service of ['postgres:', 'redis:', 'gateway-1:', 'gateway-2:', 'caddy:']) expect(compose, service).to.include(`  ${service}`);
    expect(compose).to.include('read_only: true').and.include('TOLLGATE_ADMIN_PORT').and.include('TOLLGATE_REDIS_URL').and.include('443:443');
    const caddy = readFileSync(path.join(DEPLOY, 'Caddyfile'), 'utf8');
    expect(caddy).to.include('reverse_proxy gateway-1:8080 gateway-2:8080').and.not.include('/v1/admin');
    const unit = readFileSync(path.join(DEPLOY, 'tollgate.service'), 'utf8');
    expect(unit).to.match(/^ExecStart=\/opt\/tollgate\/deploy\/scripts\/start\.sh/m).and.match(/^User=tollgate$/m).and.match(/^LimitNOFILE=/m);
  });
});
