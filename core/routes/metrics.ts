/**
 * `GET /metrics`: Prometheus text exposition (format 0.0.4). Counters are kept in memory by a pipeline observer; labels
 * are bounded (provider slugs, status classes, error types), never app or device ids.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { PerformanceObserver, constants as performanceConstants, monitorEventLoopDelay, type PerformanceEntry } from 'node:perf_hooks';
import type { PipelineObserver, ProxyContext } from '../contract';

/** V8's collection kinds as Node reports them (`PerformanceEntry.detail.kind`), by the label prom-client uses. */
const GC_KINDS: ReadonlyMap<number, string> = new Map([
  [performanceConstants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [performanceConstants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [performanceConstants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [performanceConstants.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb'],
]);
/** Upper bounds (seconds) of the collection-pause histogram: a scavenge takes about a millisecond, a full collection more. */
const GC_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1] as const;

/** Pauses of the main thread for garbage collection, by kind: a Prometheus histogram. */
class CollectionPauses {
  private readonly byKind = new Map<string, { readonly buckets: number[]; count: number; sum: number }>();
  private readonly observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) this.add(entry);
  });

  start(): void {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  stop(): void {
    this.observer.disconnect();
  }

  private add(entry: PerformanceEntry): void {
    const kind = GC_KINDS.get((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1) ?? 'other';
    let series = this.byKind.get(kind);
    if (!series) {
      series = { buckets: GC_BUCKETS.map(() => 0), count: 0, sum: 0 };
      this.byKind.set(kind, series);
    }
    const seconds = entry.duration / 1000;
    series.count += 1;
    series.sum += seconds;
    for (let index = 0; index < GC_BUCKETS.length; index += 1) if (seconds <= GC_BUCKETS[index]!) series.buckets[index]! += 1;
  }

  lines(): string[] {
    const lines = [
      '# HELP nodejs_gc_duration_seconds Main-thread pauses for garbage collection, by kind (minor: scavenges of the young generation; major: full collections).',
      '# TYPE nodejs_gc_duration_seconds histogram',
    ];
    for (const [kind, series] of this.byKind) {
      GC_BUCKETS.forEach((bound, index) => lines.push(`nodejs_gc_duration_seconds_bucket{kind="${kind}",le="${bound}"} ${series.buckets[index]}`));
      lines.push(`nodejs_gc_duration_seconds_bucket{kind="${kind}",le="+Inf"} ${series.count}`);
      lines.push(`nodejs_gc_duration_seconds_sum{kind="${kind}"} ${series.sum.toFixed(6)}`);
      lines.push(`nodejs_gc_duration_seconds_count{kind="${kind}"} ${series.count}`);
    }
    return lines;
  }
}

/**
 * The process's open descriptors and its limit (Linux: /proc/self). Each proxied stream holds two (the client's socket
 * and the provider's), so the limit bounds the open streams at about half of it; Node raises the soft limit to the hard
 * one when it starts. Nothing where /proc is absent (macOS).
 */
function descriptorLines(): string[] {
  let open: number;
  let limit: string | undefined;
  try {
    open = readdirSync('/proc/self/fd').length;
    limit = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
  } catch {
    return [];
  }
  const lines = ['# HELP process_open_fds Open file descriptors (each proxied stream holds two).', '# TYPE process_open_fds gauge', `process_open_fds ${open}`];
  if (limit !== undefined) lines.push('# HELP process_max_fds The most file descriptors the process may open.', '# TYPE process_max_fds gauge', `process_max_fds ${limit}`);
  return lines;
}

/** The process's CPU time and start, as every Prometheus client library names them. */
function processLines(): string[] {
  const { user, system } = process.cpuUsage();
  return [
    '# HELP process_cpu_user_seconds_total User CPU time of the gateway process (all its threads), in seconds.',
    '# TYPE process_cpu_user_seconds_total counter',
    `process_cpu_user_seconds_total ${(user / 1e6).toFixed(6)}`,
    '# HELP process_cpu_system_seconds_total System CPU time of the gateway process, in seconds.',
    '# TYPE process_cpu_system_seconds_total counter',
    `process_cpu_system_seconds_total ${(system / 1e6).toFixed(6)}`,
    '# HELP process_cpu_seconds_total User and system CPU time of the gateway process, in seconds.',
    '# TYPE process_cpu_seconds_total counter',
    `process_cpu_seconds_total ${((user + system) / 1e6).toFixed(6)}`,
    '# HELP process_start_time_seconds When the gateway process started, in seconds since the Unix epoch.',
    '# TYPE process_start_time_seconds gauge',
    `process_start_time_seconds ${Math.floor(performance.timeOrigin / 1000)}`,
  ];
}

export interface MetricsSources {
  /** Requests waiting for an upstream socket (a non-zero value means the pool is too small). */
  readonly upstreamQueued: () => number;
  /** Open sockets to providers (in use and idle keep-alive). */
  readonly upstreamSockets?: () => number;
  /** Usage events dropped, by reason (`buffer_full`, `shutdown`). */
  readonly usageDropped: () => Readonly<Record<string, number>>;
  readonly usageWritten: () => number;
  /** Usage events waiting to be written. */
  readonly usageBuffered?: () => number;
  /** Dependency (`database`, `redis`) → reachable, as last seen. */
  readonly dependencies?: () => ReadonlyMap<string, boolean>;
  /** Further series, already rendered with their HELP and TYPE lines (log drops, the shared store's fallback). */
  readonly more?: () => readonly string[];
}

export class GatewayMetrics implements PipelineObserver {
  private readonly requests = new Map<string, number>();
  private readonly bytesOut = new Map<string, number>();
  private truncated = 0;
  /** Requests refused because a dependency of the gateway could not answer, by cause (the error's reason). */
  private readonly refusals = new Map<string, number>();
  private readonly started = Date.now();
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 10 });
  private readonly collections = new CollectionPauses();

  constructor() {
    this.loopDelay.enable();
    this.collections.start();
  }

  stop(): void {
    this.loopDelay.disable();
    this.collections.stop();
  }

  onResponse(context: ProxyContext): void {
    const { status, errorType, bytesOut, truncated } = context.outcome;
    const slug = context.provider.slug;
    const labels = this.labelsOf(slug);
    // The common case (a 2xx, no gateway error) without building its label text again.
    const key = status >= 200 && status < 300 && errorType === undefined ? labels.success : `provider="${slug}",code="${status >= 100 ? `${Math.floor(status / 100)}xx` : 'none'}",error="${errorType ?? ''}"`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    this.bytesOut.set(labels.provider, (this.bytesOut.get(labels.provider) ?? 0) + bytesOut);
    if (truncated) this.truncated += 1;
  }

  /** Per provider: its label text, and that of its successful requests. */
  private readonly labels = new Map<string, { readonly provider: string; readonly success: string }>();

  private labelsOf(slug: string): { readonly provider: string; readonly success: string } {
    let labels = this.labels.get(slug);
    if (!labels) {
      labels = { provider: `provider="${slug}"`, success: `provider="${slug}",code="2xx",error=""` };
      this.labels.set(slug, labels);
    }
    return labels;
  }

  /** Observer failures (routes/proxy.ts, `onObserverError`), by the hook that threw. */
  private readonly observerFailures = new Map<string, number>();

  /** Counts an observer (or the access line) that threw while a request was reported. */
  countObserverFailure(hook: string): void {
    this.observerFailures.set(hook, (this.observerFailures.get(hook) ?? 0) + 1);
  }

  /** Counts a request refused with `serviceUnavailable` under its reason (`database_unavailable`, …). */
  countRefusal(reason: string): void {
    this.refusals.set(reason, (this.refusals.get(reason) ?? 0) + 1);
  }

  render(sources: MetricsSources): string {
    const lines = [
      '# HELP tollgate_proxy_requests_total Proxied requests by provider, status class and gateway error type.',
      '# TYPE tollgate_proxy_requests_total counter',
      ...[...this.requests].map(([labels, value]) => `tollgate_proxy_requests_total{${labels}} ${value}`),
      '# HELP tollgate_proxy_response_bytes_total Response body bytes streamed to clients, by provider.',
      '# TYPE tollgate_proxy_response_bytes_total counter',
      ...[...this.bytesOut].map(([labels, value]) => `tollgate_proxy_response_bytes_total{${labels}} ${value}`),
      '# HELP tollgate_proxy_truncated_total Responses cut before their end (client gone or provider reset).',
      '# TYPE tollgate_proxy_truncated_total counter',
      `tollgate_proxy_truncated_total ${this.truncated}`,
      '# HELP tollgate_upstream_queued_requests Requests waiting for a socket in the upstream pools.',
      '# TYPE tollgate_upstream_queued_requests gauge',
      `tollgate_upstream_queued_requests ${sources.upstreamQueued()}`,
      '# HELP tollgate_upstream_sockets Open sockets to providers (in use and idle keep-alive).',
      '# TYPE tollgate_upstream_sockets gauge',
      `tollgate_upstream_sockets ${sources.upstreamSockets?.() ?? 0}`,
      '# HELP tollgate_usage_events_dropped_total Usage events dropped, by reason: buffer_full (the database was away or slower than traffic for longer than the buffer holds), shutdown (still unwritten at exit).',
      '# TYPE tollgate_usage_events_dropped_total counter',
      ...Object.entries(sources.usageDropped()).map(([reason, value]) => `tollgate_usage_events_dropped_total{reason="${reason}"} ${value}`),
      '# HELP tollgate_usage_events_buffered Usage events waiting to be written.',
      '# TYPE tollgate_usage_events_buffered gauge',
      `tollgate_usage_events_buffered ${sources.usageBuffered?.() ?? 0}`,
      '# HELP tollgate_dependency_up Whether a dependency of the gateway answers (1) or not (0), as last seen.',
      '# TYPE tollgate_dependency_up gauge',
      ...[...(sources.dependencies?.() ?? new Map<string, boolean>())].map(([name, up]) => `tollgate_dependency_up{dependency="${name}"} ${up ? 1 : 0}`),
      '# HELP tollgate_dependency_refusals_total Requests refused (503 serviceUnavailable) because a dependency could not answer, by cause.',
      '# TYPE tollgate_dependency_refusals_total counter',
      ...[...this.refusals].map(([cause, value]) => `tollgate_dependency_refusals_total{cause="${cause}"} ${value}`),
      ...(sources.more?.() ?? []),
      '# HELP tollgate_observer_failures_total Pipeline observers (plugins included) or access lines that threw while a request was reported, by hook; the request was not affected.',
      '# TYPE tollgate_observer_failures_total counter',
      ...[...this.observerFailures].map(([hook, value]) => `tollgate_observer_failures_total{hook="${hook}"} ${value}`),
      '# HELP tollgate_usage_events_written_total Usage events written.',
      '# TYPE tollgate_usage_events_written_total counter',
      `tollgate_usage_events_written_total ${sources.usageWritten()}`,
      '# HELP tollgate_event_loop_delay_p99_seconds 99th percentile event-loop delay since the last scrape.',
      '# TYPE tollgate_event_loop_delay_p99_seconds gauge',
      `tollgate_event_loop_delay_p99_seconds ${(this.loopDelay.percentile(99) / 1e9).toFixed(6)}`,
      '# HELP process_resident_memory_bytes Resident memory of the gateway process.',
      '# TYPE process_resident_memory_bytes gauge',
      `process_resident_memory_bytes ${process.memoryUsage.rss()}`,
      '# HELP process_heap_used_bytes V8 heap in use.',
      '# TYPE process_heap_used_bytes gauge',
      `process_heap_used_bytes ${process.memoryUsage().heapUsed}`,
      ...processLines(),
      ...descriptorLines(),
      ...this.collections.lines(),
      '# HELP tollgate_uptime_seconds Seconds since the gateway started.',
      '# TYPE tollgate_uptime_seconds gauge',
      `tollgate_uptime_seconds ${Math.floor((Date.now() - this.started) / 1000)}`,
    ];
    this.loopDelay.reset();
    return `${lines.join('\n')}\n`;
  }
}
