/**
 * `npm run bench:compare -- <other checkout>`: this build's gateway against another built checkout's (e.g. a `git
 * worktree` of the previous commit after `npm run build` there), both loaded at the same time, so that each round
 * measures both under the same conditions. On a shared two-vCPU machine the CPU per request of one process moves by
 * ±10% from one run to the next, while the difference between two processes loaded together moves by about ±2%: a
 * 3–5 µs step is visible here and not in `npm run bench`. It is a tool for a change under work; `npm run bench` stays
 * the figure that is reported.
 *
 * Each checkout's gateway starts as that checkout's `npm start` starts it (its harness reads its package.json), so a
 * change of node flags is part of the comparison.
 *
 * Each round: both gateways warmed, then BENCH_REQUESTS requests to each at once (BENCH_CONNECTIONS each), CPU per
 * request of each process from the kernel's accounting (bench/cpu.ts). Printed: the rounds, the medians and the median
 * per-round difference (this − other).
 *
 * Environment: BENCH_REQUESTS (default 15000), BENCH_CONNECTIONS (default 16), BENCH_ROUNDS (default 5),
 * BENCH_WORKLOADS (default "json,sse").
 */
import autocannon from 'autocannon';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { median, processCpuMicros } from './cpu';
import { benchBody, startBenchTargets, workloadQuery, type BenchTargets, type Workload } from './harness';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 15_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WORKLOADS = (process.env.BENCH_WORKLOADS ?? 'json,sse').split(',') as Workload[];

type Starter = (options?: { extraEnv?: Record<string, string> }) => Promise<BenchTargets>;

function load(checkout: string): Starter {
  const harness = path.join(path.resolve(checkout), 'dist', 'bench', 'harness.js');
  if (!existsSync(harness)) throw new Error(`${harness} not found: build that checkout first (npm run build there)`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(harness) as { startBenchTargets: Starter }).startBenchTargets;
}

async function main(): Promise<void> {
  const other = process.argv[2];
  if (!other) throw new Error('usage: npm run bench:compare -- <path of another built checkout>');
  const targets = { this: await startBenchTargets(), other: await load(other)() };
  try {
    const results: Record<string, { this: number[]; other: number[] }> = {};
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const workload of WORKLOADS) {
        const options = (bench: BenchTargets) => ({
          url: `${bench.tollgateUrl}/v1/proxy/openai/v1/chat/completions${workloadQuery(workload)}`,
          method: 'POST' as const,
          headers: { 'content-type': 'application/json', ...bench.tollgateHeaders },
          body: benchBody(workload),
          connections: CONNECTIONS,
          pipelining: 1,
        });
        await Promise.all([autocannon({ ...options(targets.this), amount: REQUESTS / 5 }), autocannon({ ...options(targets.other), amount: REQUESTS / 5 })]);
        const before = { this: processCpuMicros(targets.this.tollgatePid), other: processCpuMicros(targets.other.tollgatePid) };
        const [mine, theirs] = await Promise.all([autocannon({ ...options(targets.this), amount: REQUESTS }), autocannon({ ...options(targets.other), amount: REQUESTS })]);
        if (mine.non2xx + mine.errors + theirs.non2xx + theirs.errors > 0) throw new Error('some requests failed: the figures would not compare');
        const entry = (results[workload] ??= { this: [], other: [] });
        entry.this.push((processCpuMicros(targets.this.tollgatePid) - before.this) / mine.requests.total);
        entry.other.push((processCpuMicros(targets.other.tollgatePid) - before.other) / theirs.requests.total);
      }
    }
    const lines = [`CPU µs per request, this build vs ${other}: ${REQUESTS} requests each per round, ${CONNECTIONS} connections each, both at once`];
    for (const [workload, entry] of Object.entries(results)) {
      const differences = entry.this.map((value, index) => value - entry.other[index]!);
      lines.push(
        `${workload}: this ${entry.this.map((value) => value.toFixed(1)).join(', ')} (median ${median(entry.this).toFixed(1)}); ` +
          `other ${entry.other.map((value) => value.toFixed(1)).join(', ')} (median ${median(entry.other).toFixed(1)}); ` +
          `difference per round ${differences.map((value) => value.toFixed(1)).join(', ')}, median ${median(differences).toFixed(1)} µs`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    targets.this.stop();
    targets.other.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:compare failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
