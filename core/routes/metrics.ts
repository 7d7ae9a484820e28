/**
 * `GET /metrics`: Prometheus text exposition (format 0.0.4). Counters are kept in memory by a pipeline observer; labels
 * are bounded (provider slugs, status classes, error types), never app or device ids.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { PipelineObserver, ProxyContext } from '../contract';

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
}

export class GatewayMetrics implements PipelineObserver {
  private readonly requests = new Map<string, number>();
  private readonly bytesOut = new Map<string, number>();
  private truncated = 0;
  /** Requests refused because a dependency of the gateway could not answer, by cause (the error's reason). */
  private readonly refusals = new Map<string, number>();
  private readonly started = Date.now();
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 10 });

  constructor() {
    this.loopDelay.enable();
  }

  stop(): void {
    this.loopDelay.disable();
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
      '# HELP tollgate_uptime_seconds Seconds since the gateway started.',
      '# TYPE tollgate_uptime_seconds gauge',
      `tollgate_uptime_seconds ${Math.floor((Date.now() - this.started) / 1000)}`,
    ];
    this.loopDelay.reset();
    return `${lines.join('\n')}\n`;
  }
}
