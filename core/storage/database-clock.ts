/**
 * One clock for the fleet: the database's. Revocation cut-offs ("every device token issued until now"), the issue time
 * written into device tokens, and the window numbers of token budgets are compared across nodes; with each node's own
 * clock, a token issued by a node 2 s ahead survived a revoke-all made on another node for its whole hour, and minute
 * budgets admitted twice their amount with a 45 s skew.
 *
 * On PostgreSQL each node measures the offset of its clock from the server's (`clock_timestamp()`), at boot and every
 * {@link SYNC_INTERVAL_MS}, and reads time as its own clock plus that offset. The error is half the round trip of the
 * measurement (well under a millisecond on a LAN) plus the drift of the node's clock between two measurements; a
 * measurement whose round trip exceeds {@link MAX_ROUND_TRIP_MS} is not used. Rate limits already use Redis's `TIME`.
 * On SQLite there is one node, whose clock is the database's.
 */
import type { Knex } from 'knex';

const SYNC_INTERVAL_MS = 10_000;
const MAX_ROUND_TRIP_MS = 500;

export class DatabaseClock {
  /** The database's time minus this node's (ms), as last measured. */
  private offset = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Half the round trip of the measurement in use (ms): the bound of its error. */
  uncertaintyMs = 0;

  constructor(
    private readonly database: Knex,
    private readonly base: () => number,
    private readonly onMeasured?: (offsetMs: number) => void,
  ) {}

  /** The fleet's time (unix ms). */
  readonly now = (): number => this.base() + this.offset;

  get offsetMs(): number {
    return this.offset;
  }

  /** Measures the offset once; a failure (or a slow answer) keeps the previous one. */
  async sync(): Promise<void> {
    try {
      const sent = this.base();
      const result = (await this.database.raw('select (extract(epoch from clock_timestamp()) * 1000)::float8 as now')) as { rows: Array<{ now: number | string }> };
      const received = this.base();
      const serverNow = Number(result.rows[0]?.now);
      if (!Number.isFinite(serverNow) || received - sent > MAX_ROUND_TRIP_MS) return;
      this.offset = Math.round(serverNow - (sent + received) / 2);
      this.uncertaintyMs = (received - sent) / 2;
      this.onMeasured?.(this.offset);
    } catch {
      // The database is away: the last offset stays (the node's clock drifts little in that time).
    }
  }

  async start(): Promise<void> {
    await this.sync();
    this.timer = setInterval(() => void this.sync(), SYNC_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
