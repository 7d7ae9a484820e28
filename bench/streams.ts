/**
 * `npm run bench:streams`: how many concurrent open SSE streams one gateway node holds with its default settings, at
 * what memory, and whether a non-streamed request is still answered quickly meanwhile.
 *
 * A real `tollgate serve` (server defaults; the benchmark app allows BENCH_STREAMS open streams for its device) proxies
 * BENCH_STREAMS streams from a fake upstream that sends one frame a second and never ends. Once every stream is open,
 * the benchmark checks that each one is still receiving, reads the gateway's resident memory from /proc, and times
 * BENCH_PROBES plain JSON requests. Each proxied stream holds two descriptors in the gateway, so the npm script raises
 * the soft descriptor limit (inherited by the child processes) up to the hard limit.
 *
 * Environment: BENCH_STREAMS (default 9000), BENCH_PROBES (default 200), BENCH_OPEN_BATCH (default 250).
 */
import http from 'node:http';
import { startBenchTargets } from './harness';
import { processRssBytes } from './cpu';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 9000);
const PROBES = Number(process.env.BENCH_PROBES ?? 200);
const BATCH = Number(process.env.BENCH_OPEN_BATCH ?? 250);

const percentile = (values: readonly number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

interface OpenStream {
  frames: number;
  readonly request: http.ClientRequest;
}

async function main(): Promise<void> {
  const bench = await startBenchTargets({ extraEnv: { TOLLGATE_LOG_LEVEL: process.env.TOLLGATE_LOG_LEVEL ?? 'warn' } });
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const url = new URL(`${bench.tollgateUrl}/v1/proxy/openai/v1/chat/completions?hold=1`);
  const payload = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Hello' }], stream: true });
  const streams: OpenStream[] = [];
  const failures = new Map<string, number>();
  const fail = (what: string) => failures.set(what, (failures.get(what) ?? 0) + 1);
  const open = () =>
    new Promise<void>((resolve) => {
      const request = http.request(
        { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...bench.tollgateHeaders } },
        (response) => {
          if (response.statusCode !== 200) {
            fail(`status ${response.statusCode}`);
            response.resume();
            resolve();
            return;
          }
          const stream: OpenStream = { frames: 0, request };
          streams.push(stream);
          response.on('data', () => {
            stream.frames += 1;
            if (stream.frames === 1) resolve();
          });
          response.on('error', () => undefined);
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        fail(error.code ?? error.message);
        resolve();
      });
      request.end(payload);
    });
  try {
    const started = Date.now();
    for (let opened = 0; opened < STREAMS; opened += BATCH) {
      await Promise.all(Array.from({ length: Math.min(BATCH, STREAMS - opened) }, open));
    }
    const openSeconds = (Date.now() - started) / 1000;
    // Every open stream must keep receiving: count frames over three seconds.
    const before = streams.map((stream) => stream.frames);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const streaming = streams.filter((stream, index) => stream.frames > before[index]!).length;
    const rss = processRssBytes(bench.tollgatePid);

    const probe = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const jsonUrl = new URL(`${bench.tollgateUrl}/v1/proxy/openai/v1/chat/completions`);
    const probeBody = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Hello' }] });
    const latencies: number[] = [];
    for (let index = 0; index < PROBES; index += 1) {
      const startedAt = process.hrtime.bigint();
      const status = await new Promise<number>((resolve, reject) => {
        const request = http.request(
          { host: jsonUrl.hostname, port: jsonUrl.port, path: jsonUrl.pathname, method: 'POST', agent: probe, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(probeBody), ...bench.tollgateHeaders } },
          (response) => {
            response.resume();
            response.on('end', () => resolve(response.statusCode ?? 0));
          },
        );
        request.on('error', reject);
        request.end(probeBody);
      });
      latencies.push(Number(process.hrtime.bigint() - startedAt) / 1e6);
      if (status !== 200) fail(`probe status ${status}`);
    }
    probe.destroy();
    // The gateway's own count (its /metrics), read after the probes: two per stream, the app's connection and the
    // provider's.
    const metrics = await (await fetch(`${bench.tollgateUrl}/metrics`)).text();
    const gauge = (name: string) => new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? '?';

    const lines = [
      `Tollgate open-stream benchmark: ${STREAMS} SSE streams requested, server defaults, Node ${process.version}`,
      '',
      '| measure | value |',
      '|---|---:|',
      `| streams open | ${streams.length} |`,
      `| streams still receiving after 3 s | ${streaming} |`,
      `| gateway RSS | ${(rss / 1024 / 1024).toFixed(0)} MB |`,
      `| RSS per open stream | ${(rss / Math.max(1, streams.length) / 1024).toFixed(1)} KB |`,
      `| gateway descriptors open / limit (process_open_fds / process_max_fds) | ${gauge('process_open_fds')} / ${gauge('process_max_fds')} |`,
      `| time to open all | ${openSeconds.toFixed(1)} s |`,
      `| non-streamed request meanwhile, p50 / p99 (${PROBES} sequential) | ${percentile(latencies, 50).toFixed(1)} / ${percentile(latencies, 99).toFixed(1)} ms |`,
      `| failures | ${failures.size === 0 ? 'none' : [...failures].map(([what, count]) => `${what} × ${count}`).join(', ')} |`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    if (streams.length < STREAMS || streaming < streams.length || failures.size > 0) process.exitCode = 1;
  } finally {
    for (const stream of streams) stream.request.destroy();
    agent.destroy();
    bench.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:streams failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
