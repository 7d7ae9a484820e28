/**
 * `npm run bench`: Tollgate and a bare Node pipe proxy side by side, in one run, against the same fake upstream, for a
 * JSON and an SSE workload. Tollgate runs with its full pipeline on (app token, device token, per-device, per-app and
 * open-stream limits, key injection, header hygiene, access log at `info`, usage events).
 *
 * The figure that decides is the CPU each proxy process spends per request, read from the operating system's
 * accounting (bench/cpu.ts) over a fixed number of requests: on a machine whose cores are shared by the load generator,
 * the upstream and the proxy, throughput moves with the neighbours while CPU per request does not. Every target is first
 * warmed to its steady state, then rounds are interleaved: within a round each target's requests are cut into slices
 * taken in mirrored order (bare node:http, bare undici, Tollgate, then Tollgate, undici, bare, …), so that the machine's
 * drift falls on all targets alike, and the ratio is the median of the rounds. The bare undici pipe
 * is the same pipe on the client Tollgate forwards with, so the comparison stays honest. Also printed: requests/s,
 * p50/p99 latency, and the time to the first streamed byte added by Tollgate over the bare pipe.
 *
 * Every target also answers what a proxy in service answers besides its main route, through the whole run, one request
 * every BENCH_OTHER_MS (default 200) in turn: health checks, for Tollgate also readiness, metrics scrapes, the catalog,
 * attestation challenges, a refused request and a GET forwarded. A process that has served one request shape since it
 * started runs code V8 specialised for that shape alone; one other request deoptimises Node's HTTP and stream code and
 * the proxy path costs a few µs more from then on (docs/benchmarks.md, "twelfth session"). Measured without it, the
 * benchmark would report a state no deployment is in.
 *
 * Environment: BENCH_REQUESTS (requests per measurement, default 40000), BENCH_SLICES (default 8),
 * BENCH_WARMUP (requests per target and workload before the first round, default 30000), BENCH_CONNECTIONS (default 32),
 * BENCH_ROUNDS (default 3), BENCH_TTFB_SAMPLES (default 400), BENCH_OTHER_MS (default 200; 0: no other traffic),
 * BENCH_PROFILE=<dir> (V8 CPU profile of the gateway).
 */
import autocannon from 'autocannon';
import http from 'node:http';
import os from 'node:os';
import { benchBody, gatewayNodeFlags, startBenchTargets, workloadQuery, type BenchTargets, type Workload } from './harness';
import { mainThreadCpuMicros, median, processCpuMicros } from './cpu';
import { ServiceUnavailable, startRedis } from '../test/support/services';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 40_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TTFB_SAMPLES = Number(process.env.BENCH_TTFB_SAMPLES ?? 400);
const SLICES = Math.max(1, Number(process.env.BENCH_SLICES ?? 8));
const WARMUP = Number(process.env.BENCH_WARMUP ?? 30_000);
const OTHER_MS = Number(process.env.BENCH_OTHER_MS ?? 200);

interface Measurement {
  readonly target: string;
  readonly workload: Workload;
  readonly round: number;
  readonly requestsPerSecond: number;
  readonly cpuMicrosPerRequest: number;
  /** The part of it spent outside the main thread (V8's GC and compiler workers, libuv's pool). */
  readonly helperMicrosPerRequest: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  readonly non2xx: number;
}

interface Target {
  readonly name: string;
  readonly pid: number;
  url(workload: Workload): string;
  readonly headers: Readonly<Record<string, string>>;
  /** What else it answers in service (the background traffic), each with the status it must get. */
  readonly other: readonly OtherRequest[];
}

interface OtherRequest {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** The statuses it may get. */
  readonly statuses: readonly number[];
}

/**
 * The background traffic: every `OTHER_MS`, each target gets the next of its other requests (one at a time per target).
 * An answer with another status than expected counts in `failures`, which makes the run fail: a figure taken while a
 * health check or a scrape was failing would not be the gateway's.
 */
function startOtherTraffic(targets: readonly Target[]): { stop(): void; readonly sent: number; readonly failures: string[] } {
  const failures: string[] = [];
  let sent = 0;
  const next = targets.map(() => 0);
  const busy = targets.map(() => false);
  const send = () => {
    targets.forEach((target, index) => {
      if (busy[index]) return;
      const other = target.other[next[index]! % target.other.length]!;
      next[index]! += 1;
      busy[index] = true;
      fetch(other.url, { method: other.method, headers: other.headers, body: other.body })
        .then(async (response) => {
          await response.arrayBuffer();
          sent += 1;
          if (!other.statuses.includes(response.status)) failures.push(`${target.name}: ${other.method} ${new URL(other.url).pathname} answered ${response.status}, not ${other.statuses.join(' or ')}`);
        })
        .catch((error: unknown) => failures.push(`${target.name}: ${other.method} ${new URL(other.url).pathname} failed: ${String(error)}`))
        .finally(() => (busy[index] = false));
    });
  };
  const timer = OTHER_MS > 0 ? setInterval(send, OTHER_MS) : undefined;
  return { stop: () => clearInterval(timer), get sent() { return sent; }, failures };
}

/** What one target did over the slices of a round. */
interface Tally {
  cpu: number;
  main: number;
  requests: number;
  seconds: number;
  errors: number;
  non2xx: number;
  readonly p50s: number[];
  readonly p99s: number[];
}

function loadOptions(target: Target, workload: Workload) {
  return {
    url: target.url(workload),
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', ...target.headers },
    body: benchBody(workload),
    connections: CONNECTIONS,
    pipelining: 1,
  };
}

/**
 * `amount` requests to `target`, and the seconds from the start to the last answer. autocannon ends a run at its next
 * sample tick after the last answer, so its own duration is rounded up to a tick: with ticks of 100 ms (rather than
 * its default second) a slice does not sit idle for most of a second, and requests/s is counted to the last answer.
 */
function load(target: Target, workload: Workload, amount: number): Promise<{ result: autocannon.Result; seconds: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let last = started;
    const instance = autocannon({ ...loadOptions(target, workload), amount, sampleInt: 100 }, (error: Error | null, result: autocannon.Result) =>
      error ? reject(error) : resolve({ result, seconds: (last - started) / 1000 }),
    );
    instance.on('response', () => {
      last = performance.now();
    });
  });
}

/**
 * One round of one workload: the round's requests to each target, cut into slices that alternate between the targets
 * in mirrored order (bare, undici, Tollgate, then Tollgate, undici, bare, …). The CPU each target spent is summed over its
 * slices. A shared machine's speed drifts by tens of percent within a minute (docs/benchmarks.md, "eighth session");
 * measured one after the other, 40,000 requests each, the later target took all of a drift, while over mirrored slices a
 * steady drift falls on every target alike.
 */
async function measureRound(targets: readonly Target[], workload: Workload, round: number): Promise<Measurement[]> {
  // Not measured: the workload has just changed (json, then sse), and the first slice should not pay for it.
  for (const target of targets) await load(target, workload, Math.max(1000, Math.floor(REQUESTS / 10)));
  const tallies: Tally[] = targets.map(() => ({ cpu: 0, main: 0, requests: 0, seconds: 0, errors: 0, non2xx: 0, p50s: [], p99s: [] }));
  const perSlice = Math.ceil(REQUESTS / SLICES);
  for (let slice = 0; slice < SLICES; slice += 1) {
    const order = targets.map((_, index) => (slice % 2 === 0 ? index : targets.length - 1 - index));
    for (const index of order) {
      const target = targets[index]!;
      const tally = tallies[index]!;
      const cpuBefore = processCpuMicros(target.pid);
      const mainBefore = mainThreadCpuMicros(target.pid);
      const { result, seconds } = await load(target, workload, perSlice);
      tally.cpu += processCpuMicros(target.pid) - cpuBefore;
      tally.main += mainThreadCpuMicros(target.pid) - mainBefore;
      tally.requests += result.requests.total;
      tally.seconds += seconds;
      tally.errors += result.errors + result.timeouts;
      tally.non2xx += result.non2xx;
      tally.p50s.push(result.latency.p50);
      tally.p99s.push(result.latency.p99);
    }
  }
  return targets.map((target, index) => {
    const tally = tallies[index]!;
    const completed = Math.max(1, tally.requests);
    return {
      target: target.name,
      workload,
      round,
      requestsPerSecond: tally.requests / Math.max(tally.seconds, 1e-9),
      cpuMicrosPerRequest: tally.cpu / completed,
      helperMicrosPerRequest: Math.max(0, tally.cpu - tally.main) / completed,
      p50: median(tally.p50s),
      p99: median(tally.p99s),
      errors: tally.errors,
      non2xx: tally.non2xx,
    };
  });
}

/** Milliseconds from sending a streamed request to its first body byte, one request at a time. */
async function firstByteMillis(target: Target, samples: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const payload = benchBody('sse');
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const url = new URL(target.url('sse'));
      const started = process.hrtime.bigint();
      const request = http.request(
        { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...target.headers } },
        (response) => {
          let first = true;
          response.on('data', () => {
            if (first) {
              first = false;
              resolve(Number(process.hrtime.bigint() - started) / 1e6);
            }
          });
          response.on('end', () => (first ? reject(new Error(`${target.name}: empty stream (${response.statusCode})`)) : undefined));
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  for (let warm = 0; warm < 50; warm += 1) await once();
  const values: number[] = [];
  for (let sample = 0; sample < samples; sample += 1) values.push(await once());
  agent.destroy();
  return values;
}

/** A bare pipe's other traffic: its own health check, and a GET it forwards. */
const bareOther = (origin: string): OtherRequest[] => [
  { url: `${origin}/healthz`, method: 'GET', statuses: [200] },
  { url: `${origin}/v1/models`, method: 'GET', statuses: [200] },
];

function targetsOf(bench: BenchTargets): { bare: Target; bareUndici: Target; tollgate: Target } {
  const bareOrigin = `http://127.0.0.1:${bench.barePort}`;
  const undiciOrigin = `http://127.0.0.1:${bench.bareUndiciPort}`;
  const appToken = bench.tollgateHeaders['tollgate-app-token']!;
  return {
    bare: { name: 'bare Node pipe (node:http)', pid: bench.barePid, url: (w) => `${bareOrigin}/v1/chat/completions${workloadQuery(w)}`, headers: {}, other: bareOther(bareOrigin) },
    bareUndici: { name: 'bare undici pipe', pid: bench.bareUndiciPid, url: (w) => `${undiciOrigin}/v1/chat/completions${workloadQuery(w)}`, headers: {}, other: bareOther(undiciOrigin) },
    tollgate: {
      name: 'Tollgate (full pipeline)',
      pid: bench.tollgatePid,
      url: (w) => `${bench.tollgateUrl}/v1/proxy/openai/v1/chat/completions${workloadQuery(w)}`,
      headers: bench.tollgateHeaders,
      other: [
        { url: `${bench.tollgateUrl}/healthz`, method: 'GET', statuses: [200] },
        { url: `${bench.tollgateUrl}/metrics`, method: 'GET', statuses: [200] },
        { url: `${bench.tollgateUrl}/v1/proxy/openai/v1/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json', 'tollgate-app-token': appToken, 'tollgate-device-token': 'dt_expired-or-forged' }, body: benchBody('json'), statuses: [403] },
        { url: `${bench.tollgateUrl}/readyz`, method: 'GET', statuses: [200] },
        // 60 a minute per address (ATTEST_LIMIT_PER_MINUTE); with a short BENCH_OTHER_MS the rest are refused, as in service.
        { url: `${bench.tollgateUrl}/v1/attest/challenge`, method: 'POST', headers: { 'tollgate-app-token': appToken }, statuses: [200, 429] },
        { url: `${bench.tollgateUrl}/v1/proxy/openai/v1/models`, method: 'GET', headers: bench.tollgateHeaders, statuses: [200] },
        { url: `${bench.tollgateUrl}/v1/providers`, method: 'GET', statuses: [200] },
      ],
    },
  };
}

const percentile = (values: readonly number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

async function main(): Promise<void> {
  const bench = await startBenchTargets({ nodeArguments: process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [] });
  const lines: string[] = [];
  const results: Measurement[] = [];
  const { bare, bareUndici, tollgate } = targetsOf(bench);
  const other = startOtherTraffic([bare, bareUndici, tollgate]);
  try {
    // Once, before any round: each target's steady state (the gateway's code takes about 30,000 requests to settle).
    for (const workload of ['json', 'sse'] as const) for (const target of [bare, bareUndici, tollgate]) await load(target, workload, WARMUP);
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const workload of ['json', 'sse'] as const) results.push(...(await measureRound([bare, bareUndici, tollgate], workload, round)));
    }
    const bareFirstByte = await firstByteMillis(bare, TTFB_SAMPLES);
    const tollgateFirstByte = await firstByteMillis(tollgate, TTFB_SAMPLES);

    let redis: Measurement | undefined;
    try {
      const server = await startRedis();
      const withRedis = await startBenchTargets({ extraEnv: { TOLLGATE_REDIS_URL: server.url } });
      try {
        const withRedisTarget = { ...targetsOf(withRedis).tollgate, name: 'Tollgate + Redis store' };
        const redisOther = startOtherTraffic([withRedisTarget]);
        try {
          await load(withRedisTarget, 'json', WARMUP);
          [redis] = await measureRound([withRedisTarget], 'json', 1);
          results.push(redis!);
        } finally {
          redisOther.stop();
          other.failures.push(...redisOther.failures);
        }
      } finally {
        withRedis.stop();
        server.stop();
      }
    } catch (error) {
      if (!(error instanceof ServiceUnavailable)) throw error;
      process.stderr.write(`bench: ${error.message}; the Redis store is not measured\n`);
    }

    lines.push(
      `Tollgate benchmark: ${REQUESTS} requests per measurement in ${SLICES} mirrored slices, ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds after ${WARMUP} warm-up requests per target and workload, ${OTHER_MS > 0 ? `other traffic every ${OTHER_MS} ms per target (${other.sent} requests: health checks, scrapes, challenges, refusals)` : 'no other traffic (BENCH_OTHER_MS=0)'}, Node ${process.version} (the gateway as npm start runs it: node ${gatewayNodeFlags().join(' ')}), ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${os.platform()} ${os.release()}`,
      '',
      '| round | workload | proxy | CPU µs/request | of which helper threads | requests/s | p50 ms | p99 ms (median of slices) | errors | non-2xx |',
      '|---:|---|---|---:|---:|---:|---:|---:|---:|---:|',
      ...results.map((r) => `| ${r.round} | ${r.workload} | ${r.target} | ${r.cpuMicrosPerRequest.toFixed(1)} | ${r.helperMicrosPerRequest.toFixed(1)} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.non2xx} |`),
      '',
    );
    for (const workload of ['json', 'sse'] as const) {
      const ratios: number[] = [];
      const undiciRatios: number[] = [];
      const throughput: number[] = [];
      for (let round = 1; round <= ROUNDS; round += 1) {
        const b = results.find((r) => r.workload === workload && r.round === round && r.target === bare.name)!;
        const u = results.find((r) => r.workload === workload && r.round === round && r.target === bareUndici.name)!;
        const t = results.find((r) => r.workload === workload && r.round === round && r.target === tollgate.name)!;
        ratios.push(t.cpuMicrosPerRequest / b.cpuMicrosPerRequest);
        undiciRatios.push(t.cpuMicrosPerRequest / u.cpuMicrosPerRequest);
        throughput.push(t.requestsPerSecond / b.requestsPerSecond);
      }
      lines.push(
        `CPU per request, Tollgate / bare node:http pipe (${workload}): ${median(ratios).toFixed(2)} (median of rounds ${ratios.map((r) => r.toFixed(2)).join(', ')})` +
          `; throughput ratio ${median(throughput).toFixed(2)}; Tollgate / bare undici pipe (the client it forwards with): ${median(undiciRatios).toFixed(2)}`,
      );
    }
    lines.push(
      `time to first streamed byte, p50: bare ${percentile(bareFirstByte, 50).toFixed(2)} ms, Tollgate ${percentile(tollgateFirstByte, 50).toFixed(2)} ms, added ${(percentile(tollgateFirstByte, 50) - percentile(bareFirstByte, 50)).toFixed(2)} ms (p99 added ${(percentile(tollgateFirstByte, 99) - percentile(bareFirstByte, 99)).toFixed(2)} ms; ${TTFB_SAMPLES} sequential requests each)`,
    );
    if (redis) {
      const inProcess = median(results.filter((r) => r.workload === 'json' && r.target === tollgate.name).map((r) => r.cpuMicrosPerRequest));
      lines.push(`Redis store: ${redis.cpuMicrosPerRequest.toFixed(1)} CPU µs/request in the gateway (in-process store ${inProcess.toFixed(1)})`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    if (results.some((r) => r.errors > 0 || r.non2xx > 0)) {
      process.stderr.write('bench: some requests failed; the figures above are not comparable\n');
      process.exitCode = 1;
    }
    if (other.failures.length > 0) {
      process.stderr.write(`bench: the other traffic failed; the figures above are not comparable:\n${other.failures.slice(0, 10).join('\n')}\n`);
      process.exitCode = 1;
    }
  } finally {
    other.stop();
    bench.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
