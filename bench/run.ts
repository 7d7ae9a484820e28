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
import os from 'node:os';
import { startBenchTargets } from './harness';
import { ServiceUnavailable, startRedis } from '../test/support/services';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);

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
  const targets = await startBenchTargets({ nodeArguments: process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [] });
  try {
    const { upstreamPort, barePort, tollgateUrl, tollgateHeaders } = targets;
    const results: Measurement[] = [];
    for (const workload of ['json', 'sse']) {
      const suffix = workload === 'sse' ? '?stream=1' : '';
      results.push(await measure('upstream (direct)', workload, `http://127.0.0.1:${upstreamPort}/v1/chat/completions${suffix}`, {}));
      results.push(await measure('bare Node pipe proxy', workload, `http://127.0.0.1:${barePort}/v1/chat/completions${suffix}`, {}));
      results.push(await measure('Tollgate (full pipeline)', workload, `${tollgateUrl}/v1/proxy/openai/v1/chat/completions${suffix}`, tollgateHeaders));
    }

    // The shared Redis store's cost next to the in-process store (issue "Limits and quotas that hold across nodes").
    try {
      const redis = await startRedis();
      const withRedis = await startBenchTargets({ extraEnv: { TOLLGATE_REDIS_URL: redis.url } });
      try {
        results.push(await measure('Tollgate + Redis store', 'json', `${withRedis.tollgateUrl}/v1/proxy/openai/v1/chat/completions`, withRedis.tollgateHeaders));
      } finally {
        withRedis.stop();
        redis.stop();
      }
    } catch (error) {
      if (!(error instanceof ServiceUnavailable)) throw error;
      process.stderr.write(`bench: ${error.message}; the Redis store is not measured\n`);
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
      const tollgate = results.find((r) => r.workload === workload && r.target === 'Tollgate (full pipeline)')!;
      lines.push(`ratio Tollgate / bare proxy (${workload}): ${(tollgate.requestsPerSecond / bare.requestsPerSecond).toFixed(2)}`);
    }
    const redisRun = results.find((r) => r.target === 'Tollgate + Redis store');
    if (redisRun) {
      const inProcess = results.find((r) => r.workload === 'json' && r.target === 'Tollgate (full pipeline)')!;
      lines.push(`Redis store / in-process store (json): ${(redisRun.requestsPerSecond / inProcess.requestsPerSecond).toFixed(2)}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    if (results.some((r) => r.errors > 0 || r.non2xx > 0)) {
      process.stderr.write('bench: some requests failed; the figures above are not comparable\n');
      process.exitCode = 1;
    }
  } finally {
    targets.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
