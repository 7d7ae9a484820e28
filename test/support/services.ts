/**
 * Throwaway PostgreSQL and Redis servers for tests: started on loopback, on free ports, in temporary directories, and
 * removed afterwards. PostgreSQL refuses to run as root, so as root `initdb` and `pg_ctl` run as the `postgres` user on
 * a directory that user owns.
 *
 * When a server binary is missing: with `CI=true` that is a failure (CI installs them, see .ci/run); elsewhere the
 * caller's suite is skipped with the reason printed, because the service is truly absent.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export class ServiceUnavailable extends Error {}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function postgresBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((name) => existsSync(path.join(root, name, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return path.join(root, versions[0], 'bin');
  }
  try {
    return path.dirname(execFileSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).trim()) || undefined;
  } catch {
    return undefined;
  }
}

function commandExists(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface RunningPostgres {
  /** `postgres://tollgate@127.0.0.1:PORT/tollgate` */
  readonly url: string;
  /** A fresh, empty database on the same server. */
  createDatabase(name: string): string;
  /** Freezes the whole server (SIGSTOP to the postmaster and every backend): it accepts TCP but never answers. */
  freeze(): void;
  /** Lets a frozen server run again (SIGCONT). */
  thaw(): void;
  stop(): void;
}

/** The postmaster and all its descendants, read from /proc. */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const visit = (pid: number) => {
    out.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(root);
  return out;
}

/** Starts a throwaway PostgreSQL; throws `ServiceUnavailable` when the binaries are not installed. */
export async function startPostgres(): Promise<RunningPostgres> {
  const bin = postgresBinaries();
  if (!bin) throw new ServiceUnavailable('PostgreSQL binaries (initdb, pg_ctl) are not installed: apt-get install postgresql');
  const asRoot = process.getuid?.() === 0;
  const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-pg-'));
  chmodSync(directory, 0o700);
  const run = (command: string, args: string[]) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bin, command), ...args]] : [path.join(bin, command), args];
    return execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  };
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(directory, uid, gid);
  }
  const data = path.join(directory, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'tollgate', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  run('pg_ctl', ['-D', data, '-l', path.join(directory, 'log'), '-w', '-o', `-p ${port} -k ${directory} -h 127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`, 'start']);
  const psql = (sql: string) => run('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'tollgate', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', sql]);
  psql('CREATE DATABASE tollgate');
  return {
    url: `postgres://tollgate@127.0.0.1:${port}/tollgate`,
    createDatabase(name: string) {
      psql(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
      return `postgres://tollgate@127.0.0.1:${port}/${name}`;
    },
    freeze() {
      const postmaster = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      for (const pid of processTree(postmaster)) process.kill(pid, 'SIGSTOP');
    },
    thaw() {
      const postmaster = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      for (const pid of processTree(postmaster)) process.kill(pid, 'SIGCONT');
    },
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

export interface RunningRedis {
  readonly url: string;
  readonly process: ChildProcess;
  stop(): void;
}

/** Starts a throwaway Redis without persistence; throws `ServiceUnavailable` when `redis-server` is not installed. */
export async function startRedis(): Promise<RunningRedis> {
  if (!commandExists('redis-server')) throw new ServiceUnavailable('redis-server is not installed: apt-get install redis-server');
  const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-redis-'));
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', directory], { stdio: 'ignore' });
  await waitForPort(port, 10_000);
  return {
    url: `redis://127.0.0.1:${port}`,
    process: child,
    stop() {
      child.kill('SIGKILL');
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

export interface RunningRedisCluster {
  /** `redis-cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3` (TOLLGATE_REDIS_URL). */
  readonly url: string;
  readonly ports: readonly number[];
  stop(): void;
}

/** A free port whose cluster-bus port (port + 10000) is free too. */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port > 55_000 || taken.has(port)) continue;
    const bus = net.createServer();
    const busFree = await new Promise<boolean>((resolve) => {
      bus.once('error', () => resolve(false));
      bus.listen(port + 10_000, '127.0.0.1', () => resolve(true));
    });
    if (busFree) await new Promise<void>((resolve) => bus.close(() => resolve()));
    if (busFree) return port;
  }
}

/**
 * Starts a throwaway Redis Cluster of `masters` masters without replicas on loopback (`redis-server --cluster-enabled
 * yes`, joined with `redis-cli --cluster create`), and waits until every slot is served (`cluster_state:ok`).
 */
export async function startRedisCluster(masters = 3): Promise<RunningRedisCluster> {
  if (!commandExists('redis-server') || !commandExists('redis-cli')) throw new ServiceUnavailable('redis-server and redis-cli are not installed: apt-get install redis-server');
  const directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-redis-cluster-'));
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let index = 0; index < masters; index += 1) {
    const port = await freeClusterPort(taken);
    taken.add(port);
    ports.push(port);
  }
  const children = ports.map((port) =>
    spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '5000', '--save', '', '--appendonly', 'no', '--dir', directory],
      { stdio: 'ignore' },
    ),
  );
  const stop = () => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    for (const port of ports) await waitForPort(port, 10_000);
    execFileSync('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'], { stdio: 'pipe', timeout: 30_000 });
    const deadline = Date.now() + 20_000;
    for (;;) {
      const states = ports.map((port) => execFileSync('redis-cli', ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8' }));
      if (states.every((info) => info.includes('cluster_state:ok'))) break;
      if (Date.now() > deadline) throw new Error(`the Redis Cluster did not become ready: ${states.join(' | ')}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (error) {
    stop();
    throw error;
  }
  return { url: `redis-cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}`, ports, stop };
}

/**
 * For a tool or file the tests need (schemathesis, Chromium, python3, Maven): with CI=true its absence fails the test
 * (`.ci/run` installs it); elsewhere the test is skipped, naming why.
 */
export function requireTool(context: Mocha.Context, present: boolean, missing: string): void {
  if (present) return;
  if (process.env.CI === 'true') throw new Error(missing);
  process.stderr.write(`skipping: ${missing} (with CI=true this fails)\n`);
  context.skip();
}

/**
 * Runs `start` for a mocha suite: with CI=true a missing service fails the suite; elsewhere it is skipped, naming why.
 */
export async function requireService<T>(context: Mocha.Context, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof ServiceUnavailable && process.env.CI !== 'true') {
      process.stderr.write(`skipping: ${error.message} (with CI=true this fails)\n`);
      context.skip();
    }
    throw error;
  }
}

/** The checkout (this file runs from dist/test/support). */
const CHECKOUT = path.resolve(__dirname, '..', '..', '..');
let maven: string | null | undefined;

/**
 * The Maven command for the Android SDK suites: `mvn` when installed, else Apache Maven from Maven Central, fetched
 * once by .ci/maven-tool (pinned version and SHA-512) into .ci/.maven. Null only when that cannot work (no JDK,
 * not even Debian's packages to unpack, or Maven Central out of reach): then {@link requireTool} skips, or fails with CI=true.
 */
export function mavenCommand(): string | null {
  if (maven === undefined) {
    const result = spawnSync('bash', [path.join(CHECKOUT, '.ci', 'maven-tool')], { encoding: 'utf8', timeout: 5 * 60 * 1000 });
    if (result.status !== 0) process.stderr.write(`.ci/maven-tool failed: ${(result.stderr ?? '').slice(-2000)}\n`);
    maven = result.status === 0 ? result.stdout.trim() : null;
  }
  return maven;
}
