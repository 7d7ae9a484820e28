/**
 * `npm run bench`: Tollgate and a bare Node pipe proxy side by side, in one run, against the same fake upstream, for a
 * JSON and an SSE workload; the upstream called directly is the ceiling. Tollgate runs with its full pipeline on (app
 * token, device token, rate limits, key injection, header hygiene, access log at `info`).
 *
 * Each target runs in its own process; autocannon drives the load from this one. Prints requests/s, p50 and p99 for
 * each, and the ratio of Tollgate to the bare proxy.
 *
 * Environment: BENCH_DURATION (seconds per measurement, default 10), BENCH_CONNECTIONS (default 50).
 */
import autocannon from 'autocannon';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'bin', 'tollgate.js');
const children: ChildProcess[] = [];

function startChild(script: string, args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [script, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (chunk: Buffer) => resolve({ child, port: Number(chunk.toString().trim()) }));
    child.once('exit', (code) => reject(new Error(`${path.basename(script)} exited with ${code}`)));
  });
}

function startTollgate(env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [...(process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []), CLI, 'serve'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`tollgate exited with ${code}: ${stderr}`)));
  });
}

function cli(env: Record<string, string>, args: string[], input = ''): Record<string, string> {
  const result = spawnSync(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, input, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`tollgate ${args.join(' ')} failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as Record<string, string>;
}

interface Measurement {
  readonly target: string;
  readonly workload: string;
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
}

async function measure(target: string, workload: string, url: string, headers: Record<string, string>): Promise<Measurement> {
  const options = {
    url,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Hello' }], stream: workload === 'sse' }),
    connections: CONNECTIONS,
    pipelining: 1,
  };
  await autocannon({ ...options, duration: 2 }); // warm-up: JIT, pools, caches
  const result = await autocannon({ ...options, duration: DURATION });
  return {
    target,
    workload,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

async function main(): Promise<void> {
  const dataDirectory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-'));
  try {
    const { port: upstreamPort } = await startChild(path.join(__dirname, 'upstream.js'), []);
    const { port: barePort } = await startChild(path.join(__dirname, 'bare-proxy.js'), [String(upstreamPort)]);
    const env = {
      TOLLGATE_DATA_DIR: dataDirectory,
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_PORT: '0',
      TOLLGATE_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${upstreamPort}`,
      TOLLGATE_LOG_LEVEL: process.env.TOLLGATE_LOG_LEVEL ?? 'info',
    };
    const app = cli(env, ['apps', 'create', '--name', 'bench', '--allow-development-attestation', '--device-limit', '1000000', '--app-limit', '100000000']);
    cli(env, ['secrets', 'set', '--app', app.id!, '--provider', 'openai'], 'sk-bench-0123456789abcdef');
    const { developmentToken } = cli(env, ['dev-tokens', 'create', '--app', app.id!]);
    const tollgateUrl = await startTollgate(env);
    const attested = await fetch(`${tollgateUrl}/v1/attest/development`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'tollgate-app-token': app.appToken! },
      body: JSON.stringify({ developmentToken, deviceId: 'bench-device' }),
    });
    const { deviceToken } = (await attested.json()) as { deviceToken: string };
    const tollgateHeaders = { 'tollgate-app-token': app.appToken!, 'tollgate-device-token': deviceToken, authorization: 'Bearer client-key-is-stripped' };

    const results: Measurement[] = [];
    for (const workload of ['json', 'sse']) {
      const suffix = workload === 'sse' ? '?stream=1' : '';
      results.push(await measure('upstream (direct)', workload, `http://127.0.0.1:${upstreamPort}/v1/chat/completions${suffix}`, {}));
      results.push(await measure('bare Node pipe proxy', workload, `http://127.0.0.1:${barePort}/v1/chat/completions${suffix}`, {}));
      results.push(await measure('Tollgate (full pipeline)', workload, `${tollgateUrl}/v1/proxy/openai/v1/chat/completions${suffix}`, tollgateHeaders));
    }

    const lines = [
      `Tollgate benchmark: ${DURATION} s per run, ${CONNECTIONS} connections, Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${os.platform()} ${os.release()}`,
      '',
      '| workload | target | requests/s | p50 ms | p99 ms | errors | non-2xx |',
      '|---|---|---:|---:|---:|---:|---:|',
      ...results.map((r) => `| ${r.workload} | ${r.target} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.non2xx} |`),
      '',
    ];
    for (const workload of ['json', 'sse']) {
      const bare = results.find((r) => r.workload === workload && r.target.startsWith('bare'))!;
      const tollgate = results.find((r) => r.workload === workload && r.target.startsWith('Tollgate'))!;
      lines.push(`ratio Tollgate / bare proxy (${workload}): ${(tollgate.requestsPerSecond / bare.requestsPerSecond).toFixed(2)}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    if (results.some((r) => r.errors > 0 || r.non2xx > 0)) {
      process.stderr.write('bench: some requests failed; the figures above are not comparable\n');
      process.exitCode = 1;
    }
  } finally {
    for (const child of children) child.kill('SIGTERM');
    rmSync(dataDirectory, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  for (const child of children) child.kill('SIGTERM');
  process.exitCode = 1;
});
