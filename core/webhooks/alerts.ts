/**
 * The two alerts that watch a quantity rather than one action (operations.md, "Webhook events"):
 *
 * - `spend.threshold` ({@link SpendAlerts}): an app's estimated spend of the UTC day passed the app's
 *   `dailySpendAlertUsd`. Estimated as the usage view estimates it (tokens recorded in the request log × the price of
 *   the model: the operator's price, else the dated default table; UsageRepository.spendOf), never kept a second time.
 *   Judged when usage batches are written, never on the request path: the spend of the day is read from the database at
 *   most once per `refreshMs` per app (and when what this node wrote since may have passed the amount, priced in memory
 *   with the same prices), and the event is queued with a mark of the day in one transaction, so that it is raised once
 *   per app per day across restarts and nodes (Webhooks.emitOnce).
 * - `attestation.failure_rate` ({@link AttestationFailureAlerts}): of the attestation exchanges of an app over the
 *   trailing 15 minutes (15 one-minute counters), at least `minAttempts` were tried and `percent` % or more were
 *   refused. Counted in the rate-limit store (in process on one node, Redis for a fleet), only for apps with the
 *   setting. Raised once: a `raised` counter (kept 15 minutes) is taken by the first exchange that finds the share over
 *   the threshold; it is given back when the share falls below, so the next crossing raises again, and it expires 15
 *   minutes after the event, so a share that stays over raises again then.
 */
import type { AppIdentity, AttestationFailureAlert, GatewayDirectory, RateLimitStore } from '../contract';
import { costOf, type PriceLookup, type UsageEvent } from '../storage/repositories';
import type { Webhooks } from './webhooks';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
/** The attestation window: 15 one-minute counters (the current minute and the 14 before it). */
export const ATTESTATION_WINDOW_MINUTES = 15;

/** `YYYY-MM-DD` of the UTC day of `ms`. */
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Background judgements started without waiting for them: counted, so that shutdown and tests can wait for them. */
class PendingWork {
  private readonly pending = new Set<Promise<void>>();

  /** Runs `work`, reporting its failure to `onError` (never thrown). */
  track(work: Promise<void>, onError: (error: unknown) => void): void {
    const tracked = work.catch(onError);
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }

  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }
}

export interface SpendAlertOptions {
  readonly directory: Pick<GatewayDirectory, 'findAppById'>;
  readonly webhooks: Pick<Webhooks, 'emitOnce' | 'raised'>;
  /** An app's estimated spend over [fromMs, toMs), as the usage view computes it; null without any price. */
  readonly spendOf: (appId: string, fromMs: number, toMs: number) => Promise<{ usd: number; unpricedTokens: number } | null>;
  /** The prices spend estimates use (read again at most once per `refreshMs`). */
  readonly prices: () => Promise<PriceLookup>;
  readonly clock: () => number;
  /**
   * The longest a day's spend read from the database is relied on (default 60 s): other nodes' spend, a changed price
   * or a lowered amount are seen within it, as long as the app has traffic.
   */
  readonly refreshMs?: number;
  readonly onError: (error: unknown, what: string) => void;
}

interface DaySpend {
  readonly day: string;
  /** The day's spend when last read from the database, and when it was read (unix ms; -1: not yet). */
  read: number;
  readAt: number;
  /** What the batches this node wrote since cost (in memory, the same prices): a hint to read again, never the verdict. */
  since: number;
  /** Raised (by this node or another) for this day: nothing more to do until the next. */
  done: boolean;
  reading: Promise<void> | undefined;
}

export class SpendAlerts {
  private readonly days = new Map<string, DaySpend>();
  private priceCache: { lookup: Promise<PriceLookup>; readAt: number } | undefined;
  private readonly work = new PendingWork();

  constructor(private readonly options: SpendAlertOptions) {}

  private get refreshMs(): number {
    return this.options.refreshMs ?? 60_000;
  }

  /**
   * Told of every usage batch once it is written (UsageRecorder's `onWritten`): groups the events with tokens by app
   * (a loop over the batch), the rest runs after. Never throws.
   */
  written(events: readonly UsageEvent[]): void {
    let byApp: Map<string, UsageEvent[]> | undefined;
    for (const event of events) {
      if (event.inputTokens == null && event.outputTokens == null) continue;
      byApp ??= new Map();
      const list = byApp.get(event.appId);
      if (list) list.push(event);
      else byApp.set(event.appId, [event]);
    }
    if (!byApp) return;
    for (const [appId, appEvents] of byApp) {
      this.work.track(this.consider(appId, appEvents), (error) => this.options.onError(error, 'the spend alert of an app could not be judged; judged again with its next usage'));
    }
  }

  /** Waits for the judgements under way (shutdown, tests). */
  settled(): Promise<void> {
    return this.work.settled();
  }

  private prices(): Promise<PriceLookup> {
    const now = this.options.clock();
    if (!this.priceCache || now - this.priceCache.readAt >= this.refreshMs) {
      const lookup = this.options.prices();
      this.priceCache = { lookup, readAt: now };
      // A failed read is not kept.
      lookup.catch(() => {
        if (this.priceCache?.lookup === lookup) this.priceCache = undefined;
      });
    }
    return this.priceCache.lookup;
  }

  private async consider(appId: string, events: readonly UsageEvent[]): Promise<void> {
    const app = await this.options.directory.findAppById(appId);
    const amount = app?.settings.dailySpendAlertUsd;
    if (!amount) {
      this.days.delete(appId);
      return;
    }
    const now = this.options.clock();
    const day = utcDay(now);
    let state = this.days.get(appId);
    if (!state || state.day !== day) {
      state = { day, read: 0, readAt: -1, since: 0, done: false, reading: undefined };
      this.days.set(appId, state);
    }
    if (state.done) return;
    const priceOf = await this.prices();
    for (const event of events) {
      const price = event.model ? priceOf(event.provider, event.model) : undefined;
      if (price) state.since += costOf(price, event.inputTokens ?? 0, event.outputTokens ?? 0);
    }
    if (state.reading) return;
    const due = state.readAt < 0 || now - state.readAt >= this.refreshMs || state.read + state.since >= amount;
    if (!due) return;
    const reading = this.judge(appId, state, amount);
    state.reading = reading;
    try {
      await reading;
    } finally {
      state.reading = undefined;
    }
    // Batches written while the day was read may have passed the amount since.
    if (!state.done && state.read + state.since >= amount && this.days.get(appId) === state) await this.consider(appId, []);
  }

  /** Reads the day's spend and raises the event when it passed `amount` (at most once per app and day, fleet-wide). */
  private async judge(appId: string, state: DaySpend, amount: number): Promise<void> {
    const startedAt = this.options.clock();
    const counted = state.since;
    // After a restart (or on another node), a day already raised costs one indexed read, not the day's spend.
    if (state.readAt < 0 && (await this.options.webhooks.raised(appId, 'spend.threshold', state.day))) {
      state.done = true;
      return;
    }
    const dayStart = Date.parse(`${state.day}T00:00:00.000Z`);
    const spend = await this.options.spendOf(appId, dayStart, dayStart + DAY_MS);
    state.read = spend?.usd ?? 0;
    state.readAt = startedAt;
    state.since -= counted;
    if (!spend || spend.usd < amount) return;
    await this.options.webhooks.emitOnce(appId, 'spend.threshold', state.day, {
      amount,
      spent: Math.round(spend.usd * 1_000_000) / 1_000_000,
      currency: 'USD',
      day: state.day,
      unpricedTokens: spend.unpricedTokens,
    });
    state.done = true;
  }
}

export interface AttestationAlertOptions {
  readonly store: RateLimitStore;
  readonly webhooks: Pick<Webhooks, 'emit'>;
  readonly clock: () => number;
  readonly onError: (error: unknown, what: string) => void;
}

export class AttestationFailureAlerts {
  private readonly work = new PendingWork();

  constructor(private readonly options: AttestationAlertOptions) {}

  /**
   * One attestation exchange of `app` ended: refused (`refused`) or accepted. Counted only when the app has an
   * `attestationFailureAlert`; never throws, never delays the exchange's answer.
   */
  record(app: AppIdentity, refused: boolean): void {
    const alert = app.settings.attestationFailureAlert;
    if (!alert) return;
    this.work.track(this.count(app.id, alert, refused), (error) => this.options.onError(error, 'an attestation could not be counted for the attestation.failure_rate alert'));
  }

  /** Waits for the counts under way (tests). */
  settled(): Promise<void> {
    return this.work.settled();
  }

  private async count(appId: string, alert: AttestationFailureAlert, refused: boolean): Promise<void> {
    const { store } = this.options;
    const minute = Math.floor(this.options.clock() / MINUTE_MS);
    // The app's hash tag first, as the token-budget keys: one Redis Cluster slot answers the read of all of them.
    const tag = `{${appId}}\u0000att\u0000`;
    const keep = (ATTESTATION_WINDOW_MINUTES + 1) * MINUTE_MS;
    await Promise.all([store.spend(`${tag}a\u0000${minute}`, 1, keep), refused ? store.spend(`${tag}f\u0000${minute}`, 1, keep) : undefined]);
    const minutes = Array.from({ length: ATTESTATION_WINDOW_MINUTES }, (_unused, index) => minute - index);
    const raisedKey = `${tag}raised`;
    const values = await store.spent([...minutes.map((at) => `${tag}a\u0000${at}`), ...minutes.map((at) => `${tag}f\u0000${at}`), raisedKey]);
    let attempts = 0;
    let failures = 0;
    for (let index = 0; index < ATTESTATION_WINDOW_MINUTES; index += 1) {
      attempts += values[index]!;
      failures += values[ATTESTATION_WINDOW_MINUTES + index]!;
    }
    const raised = values[2 * ATTESTATION_WINDOW_MINUTES]!;
    const over = attempts >= alert.minAttempts && failures * 100 >= alert.percent * attempts;
    if (over && raised <= 0) {
      // The first to take the counter raises the event (several nodes may find the share over at once).
      if ((await store.spend(raisedKey, 1, ATTESTATION_WINDOW_MINUTES * MINUTE_MS)) !== 1) return;
      this.options.webhooks.emit(appId, 'attestation.failure_rate', {
        percent: alert.percent,
        minAttempts: alert.minAttempts,
        attempts,
        failures,
        failurePercent: Math.round((failures * 1000) / attempts) / 10,
        windowSeconds: (ATTESTATION_WINDOW_MINUTES * MINUTE_MS) / 1000,
      });
    } else if (!over && raised > 0) {
      // The share fell back below: the next crossing raises again.
      await store.spend(raisedKey, -raised, ATTESTATION_WINDOW_MINUTES * MINUTE_MS);
    }
  }
}
