/**
 * State the pipeline keeps between requests, behind interfaces so that a single node keeps it in process and a fleet
 * shares it (Redis, in the scale-out plugin).
 */

/** One quota to charge: `limit` units per `windowSeconds`, under `key`. */
export interface RateLimitRule {
  /** Name sent in the headers, e.g. `device`. */
  readonly policy: string;
  /**
   * Store key, unique per subject, e.g. `{app_1}:d:device-9`. Keys that one call names together start with the same
   * `{…}` hash tag (Redis Cluster keeps them in one slot, so one script may touch them all).
   */
  readonly key: string;
  readonly limit: number;
  readonly windowSeconds: number;
}

/** An open-request slot asked for: the device's slot set, its limit, the lease and the request holding it. */
export interface SlotRequest {
  readonly key: string;
  readonly limit: number;
  readonly leaseMs: number;
  readonly holder: string;
}

/** The store's answer for one rule. */
export interface RateLimitRuleResult {
  readonly rule: RateLimitRule;
  readonly allowed: boolean;
  readonly remaining: number;
  /** Seconds until the quota is whole again. */
  readonly resetSeconds: number;
  /** Seconds until one more unit is available (0 when allowed). */
  readonly retryAfterSeconds: number;
}

/**
 * A rate-limit store. `consume` is all-or-nothing: a request is charged to every rule or to none, so that a request
 * refused by the app-wide limit does not use up the device's quota.
 */
export interface RateLimitStore {
  consume(rules: readonly RateLimitRule[], nowMs: number): RateLimitRuleResult[] | Promise<RateLimitRuleResult[]>;
  /**
   * Takes one of `limit` concurrent slots under `key` (open requests per device) for `holder`, leased for `leaseMs`;
   * false when all are taken. Expired leases (a crashed node's) are pruned in the same atomic step, so they free
   * themselves within `leaseMs`; a refused attempt changes nothing (it never extends another holder's lease).
   * See docs/decisions/2026-11-24-stream-slot-leases.md.
   */
  acquireSlot(key: string, limit: number, leaseMs: number, holder: string): boolean | Promise<boolean>;
  /** Extends `holder`'s lease to `leaseMs` from now (the request still runs); a lease already gone stays gone. */
  renewSlot(key: string, holder: string, leaseMs: number): void | Promise<void>;
  /** Gives `holder`'s slot back. */
  releaseSlot(key: string, holder: string): void | Promise<void>;
  /**
   * Optional, for stores one network round trip away: `consume`, then, only when every rule allowed the request,
   * `acquireSlot`, in one atomic step (one round trip instead of two). `acquired` is undefined when a rule refused (no
   * slot was tried). The slot's key shares the rules' `{…}` hash tag.
   */
  consumeAndAcquire?(
    rules: readonly RateLimitRule[],
    nowMs: number,
    slot: SlotRequest,
  ): Promise<{ results: RateLimitRuleResult[]; acquired: boolean | undefined }>;
  /**
   * Token budgets: adds `amount` to the counter under `key` and keeps it for `ttlMs` from now; returns the new
   * total. Keys carry the day they count (core/pipeline/token-budget.ts), so a counter never needs resetting.
   */
  spend(key: string, amount: number, ttlMs: number): number | Promise<number>;
  /** The counters under `keys`, in order (0 for an absent one). Keys named together share one `{…}` hash tag. */
  spent(keys: readonly string[]): number[] | Promise<number[]>;
  /**
   * Token-budget reservations: adds `amount` to every counter under `keys` only when each then stays within its
   * `limits[i]` (all or nothing, atomically across every node), keeping each for `ttlsMs[i]` from now. Returns whether
   * it was added and the totals (after the add when admitted, as found when refused). Optional: a store without it is
   * served by `spent` then `spend`, which is not atomic (core/pipeline/token-reservation.ts).
   */
  reserve?(keys: readonly string[], limits: readonly number[], amount: number, ttlsMs: readonly number[]): BudgetReservation | Promise<BudgetReservation>;
  /**
   * Settles a reservation: adds `delta` (the tokens reported minus the tokens reserved; negative gives tokens back) to
   * every counter under `keys` in one atomic step, never below 0, keeping each for `ttlsMs[i]` from now. Optional: a
   * store without it is served by `spend` per key.
   */
  settle?(keys: readonly string[], delta: number, ttlsMs: readonly number[]): void | Promise<void>;
  /**
   * Optional, for a store shared by several nodes: how many nodes used it lately (itself included), as last seen. A node
   * that falls back to in-process limits while the store cannot answer (`TOLLGATE_SHARED_STORE_FAILURE=local`) enforces
   * this share of each limit: 1/n of it. Absent: 1.
   */
  fleetSize?(): number;
  /**
   * What `consume` would find now, charging nothing (`GET /v1/me`): per rule, `remaining` is how many units may still be
   * taken at once and `resetSeconds` when the quota is whole again. Optional: a store without it reports each rule whole.
   */
  peek?(rules: readonly RateLimitRule[], nowMs: number): RateLimitRuleResult[] | Promise<RateLimitRuleResult[]>;
  /** Releases resources (timers, connections). */
  close?(): void | Promise<void>;
}

/** The answer of {@link RateLimitStore.reserve}. */
export interface BudgetReservation {
  readonly admitted: boolean;
  readonly totals: readonly number[];
}

/** One-time attestation challenges, bound to an app, single use. */
export interface ChallengeStore {
  /** Stores `challenge` for `appId` until `expiresAtMs`. */
  issue(appId: string, challenge: string, expiresAtMs: number): Promise<void>;
  /** Consumes the challenge: true only the first time, for the same app, before it expires. */
  consume(appId: string, challenge: string, nowMs: number): Promise<boolean>;
  close?(): void | Promise<void>;
}
