/**
 * Usage events, recorded off the hot path: the request handler appends to an in-memory buffer; a timer writes batches.
 *
 * Survives database outages (issue 17): a batch that cannot be written stays at the head of the buffer and is retried
 * with exponential back-off (from the flush interval up to `maxBackoffMs`), so no event is lost while the outage lasts
 * less than the buffer takes to fill. Bounded: at most `maxBuffered` events wait; only when the buffer is full is the
 * oldest dropped, counted by reason (`buffer_full`; `shutdown` for events still unwritten when the process stops with
 * the database down), so that a slow or absent database can never grow memory without limit or slow requests down.
 */
import type { Knex } from 'knex';
import { SecretRepository, UsageRepository, type UsageEvent } from './repositories';

/**
 * The latest forwarded request per app and provider in a batch: events without a gateway error type reached the
 * provider with the app's key (a provider's own error, such as a 401 for a revoked key, still used it).
 */
export function lastUsedByKey(events: readonly UsageEvent[]): Map<string, { appId: string; provider: string; usedAt: number }> {
  const latest = new Map<string, { appId: string; provider: string; usedAt: number }>();
  for (const event of events) {
    if (event.errorType !== null) continue;
    const key = `${event.appId}\u0000${event.provider}`;
    const known = latest.get(key);
    if (!known || known.usedAt < event.createdAt) latest.set(key, { appId: event.appId, provider: event.provider, usedAt: event.createdAt });
  }
  return latest;
}

export interface UsageRecorderOptions {
  readonly flushIntervalMs: number;
  readonly batchSize: number;
  readonly maxBuffered: number;
  /** Longest wait between two retries of a failed batch (default 30 s). */
  readonly maxBackoffMs?: number;
  /** Called once when writing starts failing and once when it works again (not for every retry). */
  readonly onError: (error: unknown) => void;
  readonly onRecovered?: (afterFailures: number) => void;
}

/** Why events were dropped. */
export type UsageDropReason = 'buffer_full' | 'shutdown';

export class UsageRecorder {
  private buffer: UsageEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Consecutive failed writes (0 when the database accepts them). */
  private failures = 0;
  /** No write is tried before this time (unix ms) after a failure. */
  private retryAt = 0;
  /** Events dropped, by reason. */
  readonly droppedByReason: Record<UsageDropReason, number> = { buffer_full: 0, shutdown: 0 };
  /** Events written. */
  written = 0;

  constructor(
    private readonly database: Knex,
    private readonly options: UsageRecorderOptions = { flushIntervalMs: 1000, batchSize: 500, maxBuffered: 50_000, onError: () => undefined },
  ) {}

  /** Events dropped, all reasons. */
  get dropped(): number {
    return this.droppedByReason.buffer_full + this.droppedByReason.shutdown;
  }

  /** Events waiting to be written. */
  get buffered(): number {
    return this.buffer.length;
  }

  start(): void {
    this.timer = setInterval(() => {
      if (Date.now() >= this.retryAt) void this.flush();
    }, this.options.flushIntervalMs);
    this.timer.unref();
  }

  record(event: UsageEvent): void {
    if (this.buffer.length >= this.options.maxBuffered) {
      this.buffer.shift();
      this.droppedByReason.buffer_full += 1;
    }
    this.buffer.push(event);
  }

  /**
   * Writes everything buffered so far, one flush at a time: a call made during a flush waits for it, then writes what
   * is left. Resolves when the buffer is empty or a write failed (the unwritten events stay buffered for the retry).
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.buffer.length === 0) return;
    const run = this.drain();
    this.flushing = run;
    try {
      await run;
    } finally {
      this.flushing = undefined;
    }
  }

  private async drain(): Promise<void> {
    while (this.buffer.length > 0) {
      // The batch stays in the buffer until it is written: a failure leaves it there, in order, for the next try.
      const batch = this.buffer.slice(0, this.options.batchSize);
      try {
        await new UsageRepository(this.database).insertBatch(batch);
      } catch (error) {
        if (this.failures === 0) this.options.onError(error);
        this.failures += 1;
        const backoff = Math.min(this.options.maxBackoffMs ?? 30_000, this.options.flushIntervalMs * 2 ** Math.min(this.failures - 1, 16));
        this.retryAt = Date.now() + backoff;
        return;
      }
      // A full buffer drops from the head, so while the batch was in flight some of it may have been dropped: what is
      // left of it is still the head of the buffer. Those dropped events were written after all: uncount them.
      const left = this.buffer.indexOf(batch[batch.length - 1]!) + 1;
      this.buffer.splice(0, left);
      this.droppedByReason.buffer_full -= batch.length - left;
      this.written += batch.length;
      await this.markKeysUsed(batch);
      if (this.failures > 0) this.options.onRecovered?.(this.failures);
      this.failures = 0;
      this.retryAt = 0;
    }
  }

  /**
   * "Last used" of each provider key in the batch: one UPDATE per app and provider, after the batch is written. Best
   * effort: a failure loses only this refinement (the next batch moves it forward), never an event.
   */
  private async markKeysUsed(batch: readonly UsageEvent[]): Promise<void> {
    try {
      const secrets = new SecretRepository(this.database);
      for (const { appId, provider, usedAt } of lastUsedByKey(batch).values()) await secrets.markUsed(appId, provider, usedAt);
    } catch {
      // The events are written; "last used" catches up with the next batch.
    }
  }

  /** Writes what is buffered; events that still cannot be written are counted as dropped (`shutdown`). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
    if (this.buffer.length > 0) {
      this.droppedByReason.shutdown += this.buffer.length;
      this.buffer = [];
    }
  }
}
