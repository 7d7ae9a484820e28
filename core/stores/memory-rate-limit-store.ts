/**
 * In-process rate-limit store: GCRA (the generic cell rate algorithm, ITU-T I.371), the single-node default.
 *
 * Why GCRA: it keeps one number per key (the theoretical arrival time, TAT), admits a burst of at most `limit` requests
 * and then exactly `limit` per window, and has no window edge. A fixed-window limiter admits up to twice the limit
 * across the edge of two windows (a known trap of fixed windows).
 *
 * For `limit` units per `window`: the emission interval is T = window / limit. A request at time `now` is admitted when
 * `max(TAT, now) + T - window <= now`; TAT then advances by T.
 */
import type { BudgetReservation, RateLimitRule, RateLimitRuleResult, RateLimitStore } from '../contract';

const SWEEP_INTERVAL_MS = 60_000;

export class MemoryRateLimitStore implements RateLimitStore {
  /** Key → TAT in unix ms. */
  private readonly arrivals = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    // Entries whose TAT is in the past hold no information (the quota is whole); drop them so memory follows traffic.
    this.sweeper = setInterval(() => this.sweep(Date.now()), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  consume(rules: readonly RateLimitRule[], nowMs: number): RateLimitRuleResult[] {
    const results: RateLimitRuleResult[] = [];
    const next: number[] = [];
    let allowed = true;
    for (const rule of rules) {
      const windowMs = rule.windowSeconds * 1000;
      const interval = windowMs / rule.limit;
      const tat = Math.max(this.arrivals.get(rule.key) ?? nowMs, nowMs);
      const newTat = tat + interval;
      const allowAt = newTat - windowMs;
      const ruleAllowed = allowAt <= nowMs;
      if (!ruleAllowed) allowed = false;
      next.push(newTat);
      results.push({
        rule,
        allowed: ruleAllowed,
        remaining: ruleAllowed ? Math.max(0, Math.floor((nowMs - allowAt) / interval)) : 0,
        resetSeconds: Math.max(0, Math.ceil(((ruleAllowed ? newTat : tat) - nowMs) / 1000)),
        retryAfterSeconds: ruleAllowed ? 0 : Math.max(1, Math.ceil((allowAt - nowMs) / 1000)),
      });
    }
    // All or nothing: charge every rule only when every rule admits the request.
    if (allowed) for (let index = 0; index < rules.length; index += 1) this.arrivals.set(rules[index]!.key, next[index]!);
    return results;
  }

  /**
   * GCRA read without a charge: with TAT `t`, `floor((now - t + window) / T)` units fit now (the burst left), at most
   * the limit; the quota is whole again at `t`.
   */
  peek(rules: readonly RateLimitRule[], nowMs: number): RateLimitRuleResult[] {
    return rules.map((rule) => {
      const windowMs = rule.windowSeconds * 1000;
      const interval = windowMs / rule.limit;
      const tat = Math.max(this.arrivals.get(rule.key) ?? nowMs, nowMs);
      // The epsilon absorbs the float error of window / limit, as consume's comparison does not need it.
      const remaining = Math.min(rule.limit, Math.max(0, Math.floor((nowMs - tat + windowMs) / interval + 1e-9)));
      return { rule, allowed: remaining > 0, remaining, resetSeconds: Math.max(0, Math.ceil((tat - nowMs) / 1000)), retryAfterSeconds: 0 };
    });
  }

  /** Key → holder → lease expiry (unix ms): the same lease semantics as the Redis store. */
  private readonly slots = new Map<string, Map<string, number>>();

  acquireSlot(key: string, limit: number, leaseMs: number, holder: string, nowMs = Date.now()): boolean {
    let holders = this.slots.get(key);
    if (!holders) {
      if (limit < 1) return false;
      holders = new Map<string, number>();
      this.slots.set(key, holders);
    } else if (holders.size >= limit) {
      // Expired leases are dropped when they could make the difference (below the limit, live ones are fewer still).
      for (const [id, expiresAt] of holders) if (expiresAt <= nowMs) holders.delete(id);
      if (holders.size >= limit) {
        if (holders.size === 0) this.slots.delete(key);
        return false;
      }
    }
    holders.set(holder, nowMs + leaseMs);
    return true;
  }

  renewSlot(key: string, holder: string, leaseMs: number, nowMs = Date.now()): void {
    const holders = this.slots.get(key);
    const expiresAt = holders?.get(holder);
    if (holders && expiresAt !== undefined && expiresAt > nowMs) holders.set(holder, nowMs + leaseMs);
  }

  releaseSlot(key: string, holder: string): void {
    const holders = this.slots.get(key);
    if (!holders) return;
    holders.delete(holder);
    if (holders.size === 0) this.slots.delete(key);
  }

  /** Key → token counter and its expiry (unix ms). */
  private readonly counters = new Map<string, { total: number; expiresAt: number }>();

  spend(key: string, amount: number, ttlMs: number, nowMs = Date.now()): number {
    const current = this.counters.get(key);
    const total = (current && current.expiresAt > nowMs ? current.total : 0) + amount;
    this.counters.set(key, { total, expiresAt: nowMs + ttlMs });
    return total;
  }

  spent(keys: readonly string[], nowMs = Date.now()): number[] {
    return keys.map((key) => {
      const current = this.counters.get(key);
      return current && current.expiresAt > nowMs ? current.total : 0;
    });
  }

  /** All or nothing over `keys`: one synchronous step, so concurrent requests of this process cannot interleave. */
  reserve(keys: readonly string[], limits: readonly number[], amount: number, ttlsMs: readonly number[], nowMs = Date.now()): BudgetReservation {
    const totals = this.spent(keys, nowMs);
    if (totals.some((total, index) => total + amount > limits[index]!)) return { admitted: false, totals };
    return { admitted: true, totals: keys.map((key, index) => this.spend(key, amount, ttlsMs[index]!, nowMs)) };
  }

  settle(keys: readonly string[], delta: number, ttlsMs: readonly number[], nowMs = Date.now()): void {
    keys.forEach((key, index) => {
      const total = this.spend(key, delta, ttlsMs[index]!, nowMs);
      if (total < 0) this.counters.set(key, { total: 0, expiresAt: nowMs + ttlsMs[index]! });
    });
  }

  private sweep(nowMs: number): void {
    for (const [key, counter] of this.counters) if (counter.expiresAt <= nowMs) this.counters.delete(key);
    for (const [key, tat] of this.arrivals) if (tat <= nowMs) this.arrivals.delete(key);
    for (const [key, holders] of this.slots) {
      for (const [id, expiresAt] of holders) if (expiresAt <= nowMs) holders.delete(id);
      if (holders.size === 0) this.slots.delete(key);
    }
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
