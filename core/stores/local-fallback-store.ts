/**
 * `TOLLGATE_SHARED_STORE_FAILURE=local`: while the shared rate-limit store (Redis) cannot answer, this node enforces
 * limits, stream slots and token budgets in process, each at the node's share of the app's value (1/n, n the number
 * of nodes the shared store saw lately, {@link RateLimitStore.fleetSize}); it goes back to shared state as soon as the
 * store answers again.
 *
 * - Switching: the first failed call switches the node to local state (one `warn` line, the gauge
 *   `tollgate_shared_store_local` set to 1). While local, one call per {@link RETRY_MS} tries the shared store again; the
 *   first that succeeds switches back (one `info` line). A frozen store therefore costs one command timeout per second,
 *   not one per request.
 * - What it risks (docs/guides/scale-out.md): limits hold per node, not across the fleet. With n nodes sharing traffic
 *   evenly the fleet admits about the limit; unevenly (one node takes a device's every request) a device gets 1/n of
 *   its limit; a node count seen before a scale-out admits more. Token spent locally is not added to the shared
 *   counters afterwards, so a day's budget can be passed by what was spent during the outage. Attestation challenges
 *   are not covered: they still fail closed.
 * - Slots taken locally are given back locally (their holders are remembered); slots taken in the shared store before
 *   the outage expire there with their leases.
 */
import type { Logger } from 'pino';
import type { BudgetReservation, RateLimitRule, RateLimitRuleResult, RateLimitStore, SlotRequest } from '../contract';
import { MemoryRateLimitStore } from './memory-rate-limit-store';
import { reserveIn, settleIn } from '../pipeline/token-reservation';

/** While local, how often one call tries the shared store again. */
const RETRY_MS = 1000;

export class LocalFallbackRateLimitStore implements RateLimitStore {
  private readonly local = new MemoryRateLimitStore();
  private degraded = false;
  private nextTrialAt = 0;
  /** `key\0holder` of the slots taken in process. */
  private readonly localHolders = new Set<string>();
  /** Decisions made in process (`tollgate_shared_store_local_decisions_total`). */
  private localDecisions = 0;
  /** Times this node switched to local state. */
  private fallbacks = 0;

  constructor(
    private readonly shared: RateLimitStore,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  /** True while this node enforces limits in process. */
  get isLocal(): boolean {
    return this.degraded;
  }

  /** The node's share: 1/n of each limit. */
  private nodes(): number {
    const size = this.shared.fleetSize?.() ?? 1;
    return Number.isFinite(size) && size >= 1 ? Math.floor(size) : 1;
  }

  private scaled(limit: number): number {
    return Math.max(1, Math.floor(limit / this.nodes()));
  }

  /** Whether this call goes to the shared store: always when healthy; once per RETRY_MS while local. */
  private tryShared(): boolean {
    if (!this.degraded) return true;
    const now = this.clock();
    if (now < this.nextTrialAt) return false;
    this.nextTrialAt = now + RETRY_MS;
    return true;
  }

  private failed(error: unknown): void {
    this.nextTrialAt = this.clock() + RETRY_MS;
    if (this.degraded) return;
    this.degraded = true;
    this.fallbacks += 1;
    const nodes = this.nodes();
    this.logger.warn(
      { cause: error instanceof Error ? error.message : String(error), nodes, share: `1/${nodes}` },
      'shared store unavailable: limits and token budgets are enforced by this node alone, at its share of each limit',
    );
  }

  private succeeded(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.logger.info('shared store reachable again: limits and token budgets are shared again');
  }

  /** The shared call, or on failure (or while local) the local one. */
  private async either<T>(shared: () => T | Promise<T>, local: () => T): Promise<T> {
    if (this.tryShared()) {
      try {
        const value = await shared();
        this.succeeded();
        return value;
      } catch (error) {
        this.failed(error);
      }
    }
    this.localDecisions += 1;
    return local();
  }

  private localRules(rules: readonly RateLimitRule[]): RateLimitRule[] {
    return rules.map((rule) => ({ ...rule, limit: this.scaled(rule.limit) }));
  }

  consume(rules: readonly RateLimitRule[], nowMs: number): Promise<RateLimitRuleResult[]> {
    return this.either(
      () => this.shared.consume(rules, nowMs),
      () => this.local.consume(this.localRules(rules), this.clock()),
    );
  }

  consumeAndAcquire(rules: readonly RateLimitRule[], nowMs: number, slot: SlotRequest): Promise<{ results: RateLimitRuleResult[]; acquired: boolean | undefined }> {
    return this.either(
      async () => {
        if (this.shared.consumeAndAcquire) return this.shared.consumeAndAcquire(rules, nowMs, slot);
        const results = await this.shared.consume(rules, nowMs);
        if (!results.every((result) => result.allowed)) return { results, acquired: undefined };
        return { results, acquired: await this.shared.acquireSlot(slot.key, slot.limit, slot.leaseMs, slot.holder) };
      },
      () => {
        const now = this.clock();
        const results = this.local.consume(this.localRules(rules), now);
        if (!results.every((result) => result.allowed)) return { results, acquired: undefined };
        return { results, acquired: this.acquireLocally(slot.key, slot.limit, slot.leaseMs, slot.holder, now) };
      },
    );
  }

  private acquireLocally(key: string, limit: number, leaseMs: number, holder: string, now: number): boolean {
    const taken = this.local.acquireSlot(key, this.scaled(limit), leaseMs, holder, now);
    if (taken) this.localHolders.add(`${key}\0${holder}`);
    return taken;
  }

  acquireSlot(key: string, limit: number, leaseMs: number, holder: string): Promise<boolean> {
    return this.either(
      () => this.shared.acquireSlot(key, limit, leaseMs, holder),
      () => this.acquireLocally(key, limit, leaseMs, holder, this.clock()),
    );
  }

  renewSlot(key: string, holder: string, leaseMs: number): void | Promise<void> {
    if (this.localHolders.has(`${key}\0${holder}`)) return this.local.renewSlot(key, holder, leaseMs, this.clock());
    return this.shared.renewSlot(key, holder, leaseMs);
  }

  releaseSlot(key: string, holder: string): void | Promise<void> {
    const member = `${key}\0${holder}`;
    if (this.localHolders.delete(member)) return this.local.releaseSlot(key, holder);
    return this.shared.releaseSlot(key, holder);
  }

  spend(key: string, amount: number, ttlMs: number): Promise<number> {
    // A local total counts n times: a budget is passed locally at 1/n of it (the node's share).
    return this.either(
      () => this.shared.spend(key, amount, ttlMs),
      () => this.local.spend(key, amount, ttlMs, this.clock()) * this.nodes(),
    );
  }

  spent(keys: readonly string[]): Promise<number[]> {
    return this.either(
      () => this.shared.spent(keys),
      () => this.local.spent(keys, this.clock()).map((total) => total * this.nodes()),
    );
  }

  reserve(keys: readonly string[], limits: readonly number[], amount: number, ttlsMs: readonly number[]): Promise<BudgetReservation> {
    // Locally a budget is held at the node's share (1/n of each limit); the totals answered count n times, as spend's do.
    return this.either(
      () => reserveIn(this.shared, keys, limits, amount, ttlsMs),
      () => {
        const answer = this.local.reserve(keys, limits.map((limit) => this.scaled(limit)), amount, ttlsMs, this.clock());
        return { admitted: answer.admitted, totals: answer.totals.map((total) => total * this.nodes()) };
      },
    );
  }

  settle(keys: readonly string[], delta: number, ttlsMs: readonly number[]): Promise<void> {
    return this.either(
      () => settleIn(this.shared, keys, delta, ttlsMs),
      () => this.local.settle(keys, delta, ttlsMs, this.clock()),
    );
  }

  fleetSize(): number {
    return this.nodes();
  }

  /** `/metrics` series: whether the node is local now, how often it switched, how many decisions it made alone. */
  metricLines(): string[] {
    return [
      '# HELP tollgate_shared_store_local Whether this node enforces limits and budgets alone (1) because the shared store cannot answer, with TOLLGATE_SHARED_STORE_FAILURE=local.',
      '# TYPE tollgate_shared_store_local gauge',
      `tollgate_shared_store_local ${this.degraded ? 1 : 0}`,
      '# HELP tollgate_shared_store_fallbacks_total Times this node switched to local limits because the shared store could not answer.',
      '# TYPE tollgate_shared_store_fallbacks_total counter',
      `tollgate_shared_store_fallbacks_total ${this.fallbacks}`,
      '# HELP tollgate_shared_store_local_decisions_total Limit, slot and budget decisions this node made alone while the shared store could not answer.',
      '# TYPE tollgate_shared_store_local_decisions_total counter',
      `tollgate_shared_store_local_decisions_total ${this.localDecisions}`,
      '# HELP tollgate_shared_store_nodes Nodes the shared store saw lately (the divisor of each limit in local state).',
      '# TYPE tollgate_shared_store_nodes gauge',
      `tollgate_shared_store_nodes ${this.nodes()}`,
    ];
  }

  async close(): Promise<void> {
    this.local.close();
    await this.shared.close?.();
  }
}
