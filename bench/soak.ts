/**
 * `npm run soak`: a bounded soak. Mixed JSON and streaming load runs against a real `tollgate serve` while its RSS, heap
 * and event-loop delay are sampled from `/metrics`; the report gives each series' least-squares slope per minute.
 *
 * Environment: SOAK_SECONDS (default 600), SOAK_CONNECTIONS (default 20), SOAK_SAMPLE_SECONDS (default 5).
 * `runSoak()` is also called by the short CI variant in test/hardening/soak.test.ts.
 */
import autocannon from 'autocannon';
import { startBenchTargets } from './harness';

export interface SoakSample {
  readonly atSeconds: number;
  readonly rssBytes: number;
  readonly heapBytes: number;
  readonly loopDelayP99Seconds: number;
}

export interface SoakReport {
  readonly seconds: number;
  readonly requests: number;
  readonly errors: number;
  readonly non2xx: number;
  readonly samples: readonly SoakSample[];
  /** Least-squares slopes over the second half of the run (after warm-up), per minute. */
  readonly rssSlopeBytesPerMinute: number;
  readonly heapSlopeBytesPerMinute: number;
  readonly loopDelayP99MaxSeconds: number;
  /**
   * Growth of the heap's floor: the lowest sample of the last third minus the lowest of the middle third. Minima sit just
   * after a collection, so unlike a slope through the GC sawtooth this is stable on short runs.
   */
  readonly heapFloorGrowthBytes: number;
  readonly rssMaxBytes: number;
}

function slopePerMinute(points: ReadonlyArray<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  const numerator = points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0);
  const denominator = points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
  return denominator === 0 ? 0 : (numerator / denominator) * 60;
}

function metric(text: string, name: string): number {
  const match = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

export async function runSoak(options: { seconds: number; connections: number; sampleSeconds: number }): Promise<SoakReport> {
  const targets = await startBenchTargets({ extraEnv: { TOLLGATE_LOG_LEVEL: 'warn' } });
  const samples: SoakSample[] = [];
  const started = Date.now();
  const sampler = setInterval(() => {
    fetch(`${targets.tollgateUrl}/metrics`)
      .then((response) => response.text())
      .then((text) =>
        samples.push({
          atSeconds: (Date.now() - started) / 1000,
          rssBytes: metric(text, 'process_resident_memory_bytes'),
          heapBytes: metric(text, 'process_heap_used_bytes'),
          loopDelayP99Seconds: metric(text, 'tollgate_event_loop_delay_p99_seconds'),
        }),
      )
      .catch(() => undefined);
  }, options.sampleSeconds * 1000);
  try {
    const common = { method: 'POST' as const, duration: options.seconds, connections: Math.max(1, Math.floor(options.connections / 2)), headers: { 'content-type': 'application/json', ...targets.tollgateHeaders } };
    const url = `${targets.tollgateUrl}/v1/proxy/openai/v1/chat/completions`;
    const [json, sse] = await Promise.all([
      autocannon({ ...common, url, body: '{"model":"m","messages":[]}' }),
      autocannon({ ...common, url, body: '{"model":"m","stream":true,"messages":[]}' }),
    ]);
    const settled = samples.filter((sample) => sample.atSeconds >= options.seconds / 2);
    const third = options.seconds / 3;
    const floor = (from: number, to: number) =>
      Math.min(...samples.filter((sample) => sample.atSeconds >= from && sample.atSeconds < to).map((sample) => sample.heapBytes));
    return {
      seconds: options.seconds,
      requests: json.requests.total + sse.requests.total,
      errors: json.errors + sse.errors + json.timeouts + sse.timeouts,
      non2xx: json.non2xx + sse.non2xx,
      samples,
      rssSlopeBytesPerMinute: slopePerMinute(settled.map((sample) => [sample.atSeconds, sample.rssBytes])),
      heapSlopeBytesPerMinute: slopePerMinute(settled.map((sample) => [sample.atSeconds, sample.heapBytes])),
      loopDelayP99MaxSeconds: Math.max(0, ...samples.map((sample) => sample.loopDelayP99Seconds).filter(Number.isFinite)),
      heapFloorGrowthBytes: floor(2 * third, Number.POSITIVE_INFINITY) - floor(third, 2 * third),
      rssMaxBytes: Math.max(0, ...samples.map((sample) => sample.rssBytes).filter(Number.isFinite)),
    };
  } finally {
    clearInterval(sampler);
    targets.stop();
  }
}

if (require.main === module) {
  const seconds = Number(process.env.SOAK_SECONDS ?? 600);
  runSoak({ seconds, connections: Number(process.env.SOAK_CONNECTIONS ?? 20), sampleSeconds: Number(process.env.SOAK_SAMPLE_SECONDS ?? 5) })
    .then((report) => {
      const mib = (bytes: number) => (bytes / 1048576).toFixed(2);
      const first = report.samples[0];
      const last = report.samples.at(-1);
      process.stdout.write(
        [
          `soak: ${report.seconds} s, ${report.requests} requests (${report.errors} errors, ${report.non2xx} non-2xx), ${report.samples.length} samples`,
          `RSS ${first ? mib(first.rssBytes) : '?'} → ${last ? mib(last.rssBytes) : '?'} MiB; slope over the second half ${mib(report.rssSlopeBytesPerMinute)} MiB/min`,
          `heap slope over the second half ${mib(report.heapSlopeBytesPerMinute)} MiB/min; heap floor growth (last third vs middle third) ${mib(report.heapFloorGrowthBytes)} MiB`,
          `event-loop delay p99, worst sample: ${(report.loopDelayP99MaxSeconds * 1000).toFixed(1)} ms`,
          '',
        ].join('\n'),
      );
      if (report.errors > 0 || report.non2xx > 0) process.exitCode = 1;
    })
    .catch((error: unknown) => {
      process.stderr.write(`soak failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    });
}
