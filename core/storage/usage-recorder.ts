/**
 * Usage events, recorded off the hot path: the request handler appends to an in-memory buffer, written a batch at a time
 * `flushIntervalMs` (the gateway's: 100 ms) after the first event of the batch. Short-lived on purpose: an event held for
 * a second, as the first versions did, outlives several of V8's young-generation collections at load, is copied and
 * promoted to the old generation, and the collector's work grew by 3-4 KB per request (docs/benchmarks.md); written
 * every 20 ms, small batches cost SQLite almost one page write per event.
 * Nothing runs while no event waits: the timer is set by the first event of a batch, not kept ticking.
 *
 * Survives database outages: a batch that cannot be written stays at the head of the buffer and is retried
 * with exponential back-off (from `retryBaseMs` up to `maxBackoffMs`), so no event is lost while the outage lasts
 * less than the buffer takes to fill, and none is stored twice when a failure came after the commit (the inserts skip
 * stored events). Bounded: at most `maxBuffered` events wait; only when the buffer is full is the
 * oldest dropped, counted by reason (`buffer_full`; `shutdown` for events still unwritten when the process stops with
 * the database down), so that a slow or absent database can never grow memory without limit or slow requests down.
 */
import type { Knex } from 'knex';
import { SecretRepository, UsageRepository, type UsageEvent } from './repositories';

/**
 * The latest forwarded request per app and provider in a batch, merged into `latest` (later wins): events without a
 * gateway error type reached the provider with the app's key (a provider's own error, such as a 401 for a revoked key,
 * still used it).
 */
export function lastUsedByKey(
  events: readonly UsageEvent[],
  latest = new Map<string, { appId: string; provider: string; usedAt: number }>(),
): Map<string, { appId: string; provider: string; usedAt: number }> {
  // Consecutive events mostly share their app and provider: the key is built when they change.
  let appId: string | undefined;
  let provider: string | undefined;
  let key = '';
  for (const event of events) {
    if (event.errorType !== null) continue;
    if (event.appId !== appId || event.provider !== provider) {
      appId = event.appId;
      provider = event.provider;
      key = `${appId}\u0000${provider}`;
    }
    const known = latest.get(key);
    if (!known) latest.set(key, { appId: event.appId, provider: event.provider, usedAt: event.createdAt });
    else if (known.usedAt < event.createdAt) known.usedAt = event.createdAt;
  }
  return latest;
}

export interface UsageRecorderOptions {
  /** The longest an event waits in the buffer before its batch is written (while the database accepts writes). */
  readonly flushIntervalMs: number;
  readonly batchSize: number;
  readonly maxBuffered: number;
  /** First wait before a failed batch is tried again, doubled with each failure (default 1 s). */
  readonly retryBaseMs?: number;
  /** Longest wait between two retries of a failed batch (default 30 s). */
  readonly maxBackoffMs?: number;
  /** How often at most the keys' "last used" is written (default 1 s): one UPDATE per app and provider each time. */
  readonly markIntervalMs?: number;
  /** Called once when writing starts failing and once when it works again (not for every retry). */
  readonly onError: (error: unknown) => void;
  readonly onRecovered?: (afterFailures: number) => void;
  /**
   * Told of every loss when it happens: `shutdown` at once, `buffer_full` gathered over a second (one call a second at
   * most while the buffer overflows). The events were counted but never logged: 72,306 went without a word.
   */
  readonly onDropped?: (reason: UsageDropReason, count: number) => void;
  /** Told of each batch once it is written (the spend alert judges the day's spend then); must not throw. */
  readonly onWritten?: (batch: readonly UsageEvent[]) => void;
}

/** Why events were dropped. */
export type UsageDropReason = 'buffer_full' | 'shutdown';

export class UsageRecorder {
  private buffer: UsageEvent[] = [];
  /** The next write, set while something waits (events, or "last used" marks) and the recorder is started. */
  private timer: NodeJS.Timeout | undefined;
  /** The timer writes events (false: only "last used", which an arriving event brings forward). */
  private timerForEvents = false;
  private started = false;
  private flushing: Promise<void> | undefined;
  /** The latest forwarded request per app and provider among the written events, not yet marked on their keys. */
  private readonly unmarked = new Map<string, { appId: string; provider: string; usedAt: number }>();
  /** When "last used" was last written (unix ms). */
  private markedAt = 0;
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
    private readonly options: UsageRecorderOptions = { flushIntervalMs: 20, batchSize: 500, maxBuffered: 50_000, onError: () => undefined },
  ) {}

  /** Events dropped, all reasons. */
  get dropped(): number {
    return this.droppedByReason.buffer_full + this.droppedByReason.shutdown;
  }

  /** Events waiting to be written. */
  get buffered(): number {
    return this.buffer.length;
  }

  /** From now on, what is recorded is written by itself (without `start`, only by `flush`). */
  start(): void {
    this.started = true;
    this.scheduleNext();
  }

  /** Overflow drops not yet told to onDropped, and the timer that tells them. */
  private untoldOverflow = 0;
  private overflowReport: NodeJS.Timeout | undefined;

  private readonly tellOverflow = (): void => {
    this.overflowReport = undefined;
    const count = this.untoldOverflow;
    this.untoldOverflow = 0;
    if (count > 0) this.options.onDropped?.('buffer_full', count);
  };

  record(event: UsageEvent): void {
    if (this.buffer.length >= this.options.maxBuffered) {
      this.buffer.shift();
      this.droppedByReason.buffer_full += 1;
      this.untoldOverflow += 1;
      if (this.overflowReport === undefined) {
        this.overflowReport = setTimeout(this.tellOverflow, 1000);
        this.overflowReport.unref();
      }
    }
    this.buffer.push(event);
    // A write in progress takes what arrives meanwhile, and schedules the next one when it ends.
    if (this.flushing === undefined) this.scheduleNext();
  }

  /**
   * Writes everything buffered so far, and every "last used" not yet written, one flush at a time: a call made during a
   * flush waits for it, then writes what is left. Resolves when the buffer is empty or a write failed (the unwritten
   * events stay buffered for the retry).
   */
  flush(): Promise<void> {
    return this.write(true);
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    void this.write(false);
  };

  /**
   * Sets the timer for what waits: the buffered events (not before a failed batch's back-off), else due marks. A timer
   * already set for events stays; one set only for marks (up to a second away) gives way to events.
   */
  private scheduleNext(): void {
    if (!this.started || (this.timer !== undefined && this.timerForEvents)) return;
    const events = this.buffer.length > 0;
    if (!events && (this.unmarked.size === 0 || this.timer !== undefined)) return;
    clearTimeout(this.timer);
    const now = Date.now();
    const dueAt = events ? Math.max(now + this.options.flushIntervalMs, this.retryAt) : Math.max(now, this.markedAt + (this.options.markIntervalMs ?? 1000));
    this.timerForEvents = events;
    this.timer = setTimeout(this.onTimer, dueAt - now);
    this.timer.unref();
  }

  /** `allMarks`: write every pending "last used" now (an explicit flush), not only when `markIntervalMs` has passed. */
  private async write(allMarks: boolean): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.buffer.length === 0 && this.unmarked.size === 0) return;
    const run = this.drain(allMarks);
    this.flushing = run;
    try {
      await run;
    } finally {
      this.flushing = undefined;
      this.scheduleNext();
    }
  }

  private async drain(allMarks: boolean): Promise<void> {
    while (this.buffer.length > 0) {
      // The batch stays in the buffer until it is written: a failure leaves it there, in order, for the next try. A
      // failure may have come after the commit (the answer lost): writing it again stores no event twice, the inserts
      // skip what is stored (UsageRepository.insertBatch, migration 0007).
      const batch = this.buffer.slice(0, this.options.batchSize);
      try {
        await new UsageRepository(this.database).insertBatch(batch);
      } catch (error) {
        if (this.failures === 0) this.options.onError(error);
        this.failures += 1;
        const backoff = Math.min(this.options.maxBackoffMs ?? 30_000, (this.options.retryBaseMs ?? 1000) * 2 ** Math.min(this.failures - 1, 16));
        this.retryAt = Date.now() + backoff;
        return;
      }
      // A full buffer drops from the head, so while the batch was in flight some of it may have been dropped: what is
      // left of it is still the head of the buffer. Those dropped events were written after all: uncount them.
      const left = this.buffer.indexOf(batch[batch.length - 1]!) + 1;
      this.buffer.splice(0, left);
      this.droppedByReason.buffer_full -= batch.length - left;
      this.written += batch.length;
      lastUsedByKey(batch, this.unmarked);
      this.options.onWritten?.(batch);
      if (this.failures > 0) this.options.onRecovered?.(this.failures);
      this.failures = 0;
      this.retryAt = 0;
    }
    if (this.unmarked.size > 0 && (allMarks || Date.now() - this.markedAt >= (this.options.markIntervalMs ?? 1000))) await this.markKeysUsed();
  }

  /**
   * "Last used" of each provider key used since the last time: one UPDATE per app and provider, in one transaction,
   * after the events are written, at most every `markIntervalMs`. Best effort: a failure loses only this refinement (the next batch moves
   * it forward), never an event.
   */
  private async markKeysUsed(): Promise<void> {
    const marks = [...this.unmarked.values()];
    this.unmarked.clear();
    this.markedAt = Date.now();
    try {
      // One transaction for all of them: on SQLite each commit at synchronous=FULL is an fsync on the event loop.
      await this.database.transaction(async (transaction) => {
        const secrets = new SecretRepository(transaction);
        for (const { appId, provider, usedAt } of marks) await secrets.markUsed(appId, provider, usedAt);
      });
    } catch {
      // The events are written; "last used" catches up with the next batch.
    }
  }

  /** Writes what is buffered; events that still cannot be written are counted as dropped (`shutdown`). */
  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
    clearTimeout(this.overflowReport);
    this.tellOverflow();
    if (this.buffer.length > 0) {
      const lost = this.buffer.length;
      this.droppedByReason.shutdown += lost;
      this.buffer = [];
      this.options.onDropped?.('shutdown', lost);
    }
  }
}
