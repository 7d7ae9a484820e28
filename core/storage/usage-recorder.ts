/**
 * Usage events, recorded off the hot path: the request handler appends to an in-memory buffer; a timer writes batches.
 * Bounded: when the database is slower than the traffic, at most `maxBuffered` events wait and the oldest are dropped
 * (and counted), so that a slow disk can never grow memory without limit or slow requests down.
 */
import type { Knex } from 'knex';
import { UsageRepository, type UsageEvent } from './repositories';

export interface UsageRecorderOptions {
  readonly flushIntervalMs: number;
  readonly batchSize: number;
  readonly maxBuffered: number;
  readonly onError: (error: unknown) => void;
}

export class UsageRecorder {
  private buffer: UsageEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Events dropped because the buffer was full. */
  dropped = 0;
  /** Events written. */
  written = 0;

  constructor(
    private readonly database: Knex,
    private readonly options: UsageRecorderOptions = { flushIntervalMs: 1000, batchSize: 500, maxBuffered: 50_000, onError: () => undefined },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.options.flushIntervalMs);
    this.timer.unref();
  }

  record(event: UsageEvent): void {
    if (this.buffer.length >= this.options.maxBuffered) {
      this.buffer.shift();
      this.dropped += 1;
    }
    this.buffer.push(event);
  }

  /**
   * Writes everything buffered so far, one flush at a time: a call made during a flush waits for it, then writes what
   * is left, so that every event recorded before the call is written (or counted as dropped) when it resolves.
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
      const batch = this.buffer.splice(0, this.options.batchSize);
      try {
        await new UsageRepository(this.database).insertBatch(batch);
        this.written += batch.length;
      } catch (error) {
        this.dropped += batch.length;
        this.options.onError(error);
        return;
      }
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
  }
}
