/**
 * End users in the database (`end_users`, one row per app and issuer-scoped `sub`) and the read model the pipeline
 * needs on its hot path: which users are blocked. The blocked set is loaded at start and again whenever the change feed
 * moves (a block on another node or by the CLI), as the directory does for revoked devices; a block through this
 * process refreshes it at once. Users seen by the pipeline are written in batches off the request path, each user at
 * most once per {@link SEEN_WRITE_INTERVAL_MS} per process.
 */
import type { Knex } from 'knex';
import { readChangeSequence } from '../storage/repositories';

/** A user's "last seen" is written at most this often per process. */
const SEEN_WRITE_INTERVAL_MS = 10 * 60_000;
/** Users remembered as recently written (bounds memory; past it the memory starts over). */
const SEEN_MEMORY_LIMIT = 100_000;

export interface EndUserRow {
  readonly appId: string;
  readonly issuer: string;
  readonly subject: string;
  readonly profile: string | null;
  readonly firstSeenAt: number;
  readonly lastSeenAt: number;
  readonly blockedAt: number | null;
}

type Row = Record<string, unknown>;

function toRow(row: Row): EndUserRow {
  return {
    appId: String(row.app_id),
    issuer: String(row.issuer),
    subject: String(row.subject),
    profile: row.profile === null || row.profile === undefined ? null : String(row.profile),
    firstSeenAt: Number(row.first_seen_at),
    lastSeenAt: Number(row.last_seen_at),
    blockedAt: row.blocked_at === null || row.blocked_at === undefined ? null : Number(row.blocked_at),
  };
}

export class EndUserRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  /** Users of an app, most recently seen first; `search`: the start of the user id. */
  async list(appId: string, options: { search?: string; limit?: number; offset?: number } = {}): Promise<EndUserRow[]> {
    let query = this.database('end_users').where('app_id', appId).orderBy([{ column: 'last_seen_at', order: 'desc' }, { column: 'subject' }]);
    if (options.search) query = query.where('subject', 'like', `${options.search.replace(/[%_\\]/g, '')}%`);
    return ((await query.limit(options.limit ?? 100).offset(options.offset ?? 0)) as Row[]).map(toRow);
  }

  async find(appId: string, issuer: string, subject: string): Promise<EndUserRow | null> {
    const row = (await this.database('end_users').where({ app_id: appId, issuer, subject }).first()) as Row | undefined;
    return row ? toRow(row) : null;
  }

  /** Blocks (`blockedAt` a time) or unblocks (null) a user, creating its row when the gateway has not seen it yet. */
  async setBlocked(appId: string, issuer: string, subject: string, blockedAt: number | null, now: number): Promise<EndUserRow> {
    await this.database('end_users')
      .insert({ app_id: appId, issuer, subject, profile: null, first_seen_at: now, last_seen_at: now, blocked_at: blockedAt })
      .onConflict(['app_id', 'issuer', 'subject'])
      .merge({ blocked_at: blockedAt });
    return (await this.find(appId, issuer, subject))!;
  }

  /** Records users as seen (new ones inserted, known ones' last-seen time and profile updated). */
  async recordSeen(users: ReadonlyArray<{ appId: string; issuer: string; subject: string; profile: string | null; at: number }>): Promise<void> {
    for (const user of users) {
      await this.database('end_users')
        .insert({ app_id: user.appId, issuer: user.issuer, subject: user.subject, profile: user.profile, first_seen_at: user.at, last_seen_at: user.at, blocked_at: null })
        .onConflict(['app_id', 'issuer', 'subject'])
        .merge({ last_seen_at: user.at, profile: user.profile });
    }
  }

  async listBlocked(): Promise<Array<Pick<EndUserRow, 'appId' | 'issuer' | 'subject'>>> {
    return ((await this.database('end_users').whereNotNull('blocked_at').select('app_id', 'issuer', 'subject')) as Row[]).map((row) => ({
      appId: String(row.app_id),
      issuer: String(row.issuer),
      subject: String(row.subject),
    }));
  }
}

/** The key of a user in the blocked set and in memory. */
function userKey(appId: string, issuer: string, subject: string): string {
  return `${appId}\u0000${issuer}\u0000${subject}`;
}

export interface EndUserDirectoryOptions {
  readonly pollIntervalMs: number;
  readonly clock: () => number;
  readonly onError: (error: unknown) => void;
}

/** The hot path's view of end users: blocked or not (a set lookup), and "seen" noted for a batched write. */
export class EndUserDirectory {
  private blocked = new Set<string>();
  private lastSequence = -1;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private readonly written = new Map<string, number>();
  private pending: Array<{ appId: string; issuer: string; subject: string; profile: string | null; at: number }> = [];
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly database: Knex,
    private readonly options: EndUserDirectoryOptions,
  ) {}

  async start(): Promise<void> {
    this.lastSequence = await readChangeSequence(this.database);
    await this.reload();
    this.timer = setInterval(() => void this.poll(), this.options.pollIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  isBlocked(appId: string, issuer: string, subject: string): boolean {
    return this.blocked.size !== 0 && this.blocked.has(userKey(appId, issuer, subject));
  }

  /** Loads the blocked set again (after a block or unblock in this process). */
  async reload(): Promise<void> {
    const rows = await new EndUserRepository(this.database).listBlocked();
    this.blocked = new Set(rows.map((row) => userKey(row.appId, row.issuer, row.subject)));
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const sequence = await readChangeSequence(this.database);
      if (sequence !== this.lastSequence) {
        this.lastSequence = sequence;
        await this.reload();
      }
    } catch (error) {
      this.options.onError(error);
    } finally {
      this.polling = false;
    }
  }

  /** Notes a user seen on a request; written in the next batch unless written recently. Never waits. */
  noteSeen(appId: string, issuer: string, subject: string, profile: string | undefined): void {
    const key = userKey(appId, issuer, subject);
    const now = this.options.clock();
    const last = this.written.get(key);
    if (last !== undefined && now - last < SEEN_WRITE_INTERVAL_MS) return;
    if (this.written.size >= SEEN_MEMORY_LIMIT) this.written.clear();
    this.written.set(key, now);
    this.pending.push({ appId, issuer, subject, profile: profile ?? null, at: now });
    if (this.pending.length === 1) setImmediate(() => void this.flush());
  }

  /** Writes the users noted so far; a failure is reported and those users are written again when next seen. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    if (this.pending.length === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = [];
    this.flushing = new EndUserRepository(this.database)
      .recordSeen(batch)
      .catch((error: unknown) => {
        for (const user of batch) this.written.delete(userKey(user.appId, user.issuer, user.subject));
        this.options.onError(error);
      })
      .finally(() => (this.flushing = undefined));
    return this.flushing;
  }
}

/** DI token of the process's {@link EndUserDirectory}. */
export const END_USER_DIRECTORY = Symbol.for('tollgate.endUserDirectory');
