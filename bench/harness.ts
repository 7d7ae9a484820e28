/**
 * Shared set-up of `npm run bench` and `npm run soak`: the fake upstream, the bare proxy and a real `tollgate serve`, each
 * in its own process, with an app, a secret and an attested device ready.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'bin', 'tollgate.js');

/**
 * The node flags `npm start` gives the gateway (package.json's `start`, `node [flags] dist/bin/tollgate.js serve`): the
 * benchmark starts `tollgate serve` as users start it. The bare pipes run on Node's defaults.
 */
export function gatewayNodeFlags(): string[] {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, '..', 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const start = manifest.scripts?.start ?? '';
  const match = /^node((?: --[\w-]+(?:=\S+)?)*) dist\/bin\/tollgate\.js serve$/.exec(start);
  if (!match) throw new Error(`package.json's start script is not "node [flags] dist/bin/tollgate.js serve": ${start}`);
  return match[1]!.split(' ').filter((flag) => flag !== '');
}

/** Gateways started by this process (names their stdout files when BENCH_GATEWAY_STDOUT is set). */
let gatewaysStarted = 0;

/** The benchmark's two workloads: a JSON chat completion, and the same call streamed as SSE. */
export type Workload = 'json' | 'sse';

/** The chat request every proxy gets. */
export function benchBody(workload: Workload): string {
  return JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Hello' }], stream: workload === 'sse' });
}

/** The query that makes the fake upstream stream (bench/upstream.ts), appended to every proxy's chat path. */
export function workloadQuery(workload: Workload): string {
  return workload === 'sse' ? '?stream=1' : '';
}

export interface BenchTargets {
  readonly upstreamPort: number;
  readonly barePort: number;
  /** Process ids, for CPU accounting (bench/cpu.ts). */
  readonly barePid: number;
  /** A bare pipe on undici, the client Tollgate forwards with (bench/bare-undici-proxy.ts). */
  readonly bareUndiciPort: number;
  readonly bareUndiciPid: number;
  readonly tollgateUrl: string;
  readonly tollgatePid: number;
  /** The two Tollgate headers plus a client Authorization the gateway must strip. */
  readonly tollgateHeaders: Readonly<Record<string, string>>;
  stop(): void;
}

function startChild(children: ChildProcess[], script: string, args: string[]): Promise<number> {
  const child = spawn(process.execPath, [script, ...args], { env: { PATH: process.env.PATH ?? '', ...(process.env.BENCH_MAX_SOCKETS ? { BENCH_MAX_SOCKETS: process.env.BENCH_MAX_SOCKETS } : {}) }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`${path.basename(script)} exited with ${code}`)));
  });
}

function cli(env: Record<string, string>, args: string[], input = ''): Record<string, string> {
  const result = spawnSync(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, input, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`tollgate ${args.join(' ')} failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, string>;
}

/**
 * Starts the three targets. `extraEnv` reaches `tollgate serve` (e.g. TOLLGATE_REDIS_URL); `nodeArguments` its node, after
 * the flags of `npm start` (gatewayNodeFlags).
 */
export async function startBenchTargets(options: { extraEnv?: Record<string, string>; nodeArguments?: string[] } = {}): Promise<BenchTargets> {
  const children: ChildProcess[] = [];
  const dataDirectory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-'));
  const stop = () => {
    for (const child of children) child.kill('SIGTERM');
    rmSync(dataDirectory, { recursive: true, force: true });
  };
  try {
    const upstreamPort = await startChild(children, path.join(__dirname, 'upstream.js'), []);
    const barePort = await startChild(children, path.join(__dirname, 'bare-proxy.js'), [String(upstreamPort)]);
    const bareUndiciPort = await startChild(children, path.join(__dirname, 'bare-undici-proxy.js'), [String(upstreamPort)]);
    const env: Record<string, string> = {
      TOLLGATE_DATA_DIR: dataDirectory,
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_PORT: '0',
      TOLLGATE_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${upstreamPort}`,
      TOLLGATE_LOG_LEVEL: process.env.TOLLGATE_LOG_LEVEL ?? 'info',
      ...options.extraEnv,
    };
    cli(env, ['migrate']);
    const app = cli(env, ['apps', 'create', '--name', 'bench', '--allow-development-attestation', '--device-limit', '1000000', '--app-limit', '100000000', '--max-streams', '10000']);
    cli(env, ['secrets', 'set', '--app', app.id!, '--provider', 'openai'], 'sk-bench-0123456789abcdef');
    const { developmentToken } = cli(env, ['dev-tokens', 'create', '--app', app.id!]);
    // BENCH_NODE_ARGS: extra node flags for the gateway (e.g. `--trace-gc --trace-gc-nvp`, whose lines V8 writes to
    // stdout); BENCH_GATEWAY_STDOUT: a file for the gateway's stdout (its log, and such traces), else discarded.
    const extraFlags = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((flag) => flag !== '');
    const stdout = process.env.BENCH_GATEWAY_STDOUT ? openSync(`${process.env.BENCH_GATEWAY_STDOUT}.${(gatewaysStarted += 1)}`, 'w') : 'ignore';
    const tollgate = spawn(process.execPath, [...gatewayNodeFlags(), ...(options.nodeArguments ?? []), ...extraFlags, CLI, 'serve'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', stdout, 'pipe'] });
    children.push(tollgate);
    const tollgateUrl = await new Promise<string>((resolve, reject) => {
      let stderr = '';
      tollgate.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (http:\/\/\S+)/.exec(stderr);
        if (match) resolve(match[1]!);
      });
      tollgate.once('exit', (code) => reject(new Error(`tollgate exited with ${code}: ${stderr}`)));
    });
    const attested = await fetch(`${tollgateUrl}/v1/attest/development`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken! },
      body: JSON.stringify({ developmentToken, deviceId: 'bench-device' }),
    });
    if (attested.status !== 200) throw new Error(`development attestation failed: ${attested.status} ${await attested.text()}`);
    const { deviceToken } = (await attested.json()) as { deviceToken: string };
    return {
      upstreamPort,
      barePort,
      barePid: children[1]!.pid!,
      bareUndiciPort,
      bareUndiciPid: children[2]!.pid!,
      tollgateUrl,
      tollgatePid: tollgate.pid!,
      tollgateHeaders: { 'tollgate-app-token': app.appToken!, 'tollgate-device-token': deviceToken, authorization: 'Bearer client-key-is-stripped' },
      stop,
    };
  } catch (error) {
    stop();
    throw error;
  }
}
