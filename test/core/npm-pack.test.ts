/**
 * The published package: `npm pack` of the built checkout, unpacked into an empty folder as npm installs it
 * (`node_modules/tollgate`, the `tollgate` command linked into `node_modules/.bin`), serves with `npx tollgate serve`
 * from that folder: the tarball holds everything the server loads at run time (compiled core, providers, plugins,
 * dashboard assets, package.json for the version), and no tests or source maps.
 *
 * Tests run offline, so the package's dependencies come from this checkout's node_modules (linked beside the package)
 * instead of the registry; what is checked is the tarball's own content, which is what `files` decides.
 */
import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const CHECKOUT = path.resolve(__dirname, '..', '..', '..');

describe('npm pack: the package installed into an empty folder serves', function () {
  this.timeout(300_000);
  let work: string;

  before(() => {
    work = mkdtempSync(path.join(os.tmpdir(), 'tollgate-pack-'));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it('packs the build without tests or maps, and npx tollgate serve answers /healthz with the package version', async () => {
    const output = execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: CHECKOUT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const packed = (JSON.parse(output) as Array<{ filename: string; version: string; files: Array<{ path: string }> }>)[0]!;
    const files = packed.files.map((file) => file.path);
    expect(files).to.include.members(['package.json', 'dist/bin/tollgate.js', 'dist/core/server/gateway.js', 'dist/dashboard/index.html', 'dist/providers/openai/index.js', 'CHANGELOG.md']);
    expect(files.filter((file) => /(^|\/)test\/|\.map$|^(core|bin|sdk|bench)\//.test(file))).to.deep.equal([]);

    // As npm installs it: the package under node_modules/tollgate, its bin linked into node_modules/.bin.
    const folder = path.join(work, 'app');
    const modules = path.join(folder, 'node_modules');
    mkdirSync(path.join(modules, 'tollgate'), { recursive: true });
    execFileSync('tar', ['xzf', path.join(work, packed.filename), '-C', path.join(modules, 'tollgate'), '--strip-components=1']);
    symlinkSync(path.join(CHECKOUT, 'node_modules'), path.join(modules, 'tollgate', 'node_modules'));
    mkdirSync(path.join(modules, '.bin'));
    symlinkSync('../tollgate/dist/bin/tollgate.js', path.join(modules, '.bin', 'tollgate'));
    // npm marks a package's bin executable when it links it.
    chmodSync(path.join(modules, 'tollgate', 'dist', 'bin', 'tollgate.js'), 0o755);
    expect(readdirSync(folder)).to.deep.equal(['node_modules']);

    const child = spawn('npx', ['--offline', 'tollgate', 'serve'], { cwd: folder, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? work, TOLLGATE_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          const match = /listening on (http:\/\/[^\s]+)/.exec(stderr);
          if (match) resolve(match[1]!);
        });
        child.stdout!.resume();
        child.once('exit', (code) => reject(new Error(`npx tollgate serve exited ${code}: ${stderr}`)));
      });
      const health = await fetch(`${url}/healthz`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.include({ status: 'ok', version: packed.version });
      expect((await fetch(`${url}/dashboard/`)).status).to.equal(200);
      const providers = (await (await fetch(`${url}/v1/providers`)).json()) as unknown;
      expect(JSON.stringify(providers)).to.include('openai');
    } finally {
      // npx runs the server as its child: end the whole group this test started.
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already exited (the failure above says why)
      }
    }
  });
});
