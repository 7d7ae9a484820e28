/**
 * The in-process limit stores on their own: the GCRA answers (remaining, reset, retry-after), the token counters with
 * their expiry, all-or-nothing reservations, and TOLLGATE_SHARED_STORE_FAILURE=local's store (the node's 1/n share,
 * one trial of the shared store per second, the way back, its metrics), and the limitRate stage against stores that
 * answer by promise or take the stream slot with the rules, its slot release and lease renewals. The same stores behind
 * a running gateway: limits.test.ts, token-budget-reservations.test.ts and, with Redis,
 * test/faults/shared-store-local.test.ts.
 */
import { expect } from 'chai';
import { rejection } from '../support/refusals';
import type { Logger } from 'pino';
import type { RateLimitRule } from '../../core/contract';
import { MemoryRateLimitStore } from '../../core/stores/memory-rate-limit-store';
import { LocalFallbackRateLimitStore } from '../../core/stores/local-fallback-store';
import { MemoryChallengeStore } from '../../core/stores/memory-challenge-store';
import { EventEmitter } from 'node:events';
import { mock } from 'node:test';
import { GatewayError, ProxyContext, type AppIdentity, type RateLimitRuleResult, type RateLimitStore } from '../../core/contract';
import type { Configuration } from '../../core/configuration/configuration';
import { LimitRateStage, limitSubject, rateLimitHeaderValues, storeUnavailable } from '../../core/pipeline/limit-rate';

const rule = (limit: number, key = 'k', windowSeconds = 60): RateLimitRule => ({ policy: 'device', key, limit, windowSeconds });

describe('in-process rate-limit store: what each answer says', () => {
  let store: MemoryRateLimitStore;
  beforeEach(() => {
    store = new MemoryRateLimitStore();
  });
  afterEach(() => store.close());

  it('counts down remaining and reports when the quota is whole again, then how long to wait', () => {
    const t = 1_000_000;
    // 4 per 60 s: one unit every 15 s.
    const answers = Array.from({ length: 4 }, () => store.consume([rule(4)], t)[0]!);
    expect(answers.map((answer) => answer.remaining)).to.deep.equal([3, 2, 1, 0]);
    expect(answers.map((answer) => answer.resetSeconds)).to.deep.equal([15, 30, 45, 60]);
    expect(answers.every((answer) => answer.allowed && answer.retryAfterSeconds === 0)).to.equal(true);
    const refused = store.consume([rule(4)], t + 1_000)[0]!;
    expect(refused).to.include({ allowed: false, remaining: 0, retryAfterSeconds: 14, resetSeconds: 59 });
    // A refusal charges nothing: 14 s later one unit fits again.
    expect(store.consume([rule(4)], t + 15_000)[0]!).to.include({ allowed: true, remaining: 0, retryAfterSeconds: 0 });
    // A wait under a second is still answered as one second.
    expect(store.consume([rule(4)], t + 29_999)[0]!).to.include({ allowed: false, retryAfterSeconds: 1 });
  });

  it('peek reports the burst left without charging it, at most the limit, and refuses at zero', () => {
    const t = 2_000_000;
    expect(store.peek([rule(3)], t)[0]!).to.include({ allowed: true, remaining: 3, resetSeconds: 0, retryAfterSeconds: 0 });
    store.consume([rule(3)], t);
    store.consume([rule(3)], t);
    expect(store.peek([rule(3)], t)[0]!).to.include({ allowed: true, remaining: 1, resetSeconds: 40 });
    expect(store.peek([rule(3)], t)[0]!.remaining).to.equal(1);
    store.consume([rule(3)], t);
    expect(store.peek([rule(3)], t)[0]!).to.include({ allowed: false, remaining: 0, resetSeconds: 60 });
    // One emission interval later one unit is back; a long idle time gives back the limit, never more.
    expect(store.peek([rule(3)], t + 20_000)[0]!.remaining).to.equal(1);
    expect(store.peek([rule(3)], t + 3_600_000)[0]!).to.include({ remaining: 3, resetSeconds: 0 });
    // Another key is untouched.
    expect(store.peek([rule(3, 'other')], t)[0]!.remaining).to.equal(3);
  });

  it('refuses a slot when the limit is below one, and forgets a key whose holders all left', () => {
    expect(store.acquireSlot('s', 0, 1000, 'a', 1)).to.equal(false);
    expect(store.acquireSlot('s', 1, 1000, 'a', 1)).to.equal(true);
    expect(store.acquireSlot('s', 1, 1000, 'b', 2)).to.equal(false);
    // A renewal of an unknown holder takes nothing.
    store.renewSlot('s', 'b', 1000, 3);
    expect(store.acquireSlot('s', 1, 1000, 'b', 4)).to.equal(false);
    store.releaseSlot('s', 'a');
    store.releaseSlot('missing', 'a');
    expect(store.acquireSlot('s', 1, 1000, 'b', 5)).to.equal(true);
    // An expired lease makes room exactly at its expiry.
    expect(store.acquireSlot('s', 1, 1000, 'c', 1004)).to.equal(false);
    expect(store.acquireSlot('s', 1, 1000, 'c', 1005)).to.equal(true);
    // When every lease has expired and the limit shrank to zero, the key is refused and dropped.
    expect(store.acquireSlot('s', 0, 1000, 'd', 5000)).to.equal(false);
    expect(store.acquireSlot('s', 1, 1000, 'd', 5000)).to.equal(true);
  });

  it('renews only a live lease of a known holder, and a renewal under an unknown key is harmless', () => {
    expect(store.acquireSlot('r', 2, 1000, 'a', 0)).to.equal(true);
    expect(() => store.renewSlot('missing', 'a', 1000, 10)).to.not.throw();
    // An unknown holder renewing takes no slot: 'a' leaves, and two others still fit.
    store.renewSlot('r', 'ghost', 1000, 10);
    store.releaseSlot('r', 'a');
    expect(store.acquireSlot('r', 2, 1000, 'b', 20)).to.equal(true);
    expect(store.acquireSlot('r', 2, 1000, 'c', 500)).to.equal(true);
    // A renewal exactly at the lease's expiry is too late: the slot is free for another.
    store.renewSlot('r', 'b', 1000, 1020);
    expect(store.acquireSlot('r', 2, 1000, 'd', 1020)).to.equal(true);
    // A renewal in time moves the expiry: 'c' (renewed at 1400 until 2400) still holds its slot at 2018.
    store.renewSlot('r', 'c', 1000, 1400);
    expect(store.acquireSlot('r', 2, 1000, 'e', 2018)).to.equal(false);
  });

  it('adds spends until the counter expires, and reports zero after', () => {
    expect(store.spend('c', 10, 1000, 100)).to.equal(10);
    expect(store.spend('c', 5, 1000, 500)).to.equal(15);
    // Each spend moves the expiry: 500 + 1000.
    expect(store.spent(['c', 'other'], 1499)).to.deep.equal([15, 0]);
    expect(store.spent(['c'], 1500)).to.deep.equal([0]);
    expect(store.spend('c', 3, 1000, 1500)).to.equal(3);
  });

  it('reserves on every key or none, admitting exactly up to the limit', () => {
    store.spend('a', 90, 60_000, 0);
    expect(store.reserve(['a', 'b'], [100, 100], 10, [60_000, 60_000], 1)).to.deep.equal({ admitted: true, totals: [100, 10] });
    expect(store.reserve(['a', 'b'], [100, 100], 1, [60_000, 60_000], 2)).to.deep.equal({ admitted: false, totals: [100, 10] });
    // The refused reservation charged neither key.
    expect(store.spent(['a', 'b'], 3)).to.deep.equal([100, 10]);
    // Each key gets its own time to live.
    store.reserve(['x', 'y'], [10, 10], 1, [100, 1000], 0);
    expect(store.spent(['x', 'y'], 100)).to.deep.equal([0, 1]);
  });

  it('settles a delta on every key, never below zero', () => {
    store.spend('a', 50, 60_000, 0);
    store.spend('b', 5, 60_000, 0);
    store.settle(['a', 'b'], -20, [60_000, 1000], 10);
    expect(store.spent(['a', 'b'], 11)).to.deep.equal([30, 0]);
    // The clamped counter still expires with its own time to live.
    store.settle(['b'], 4, [1000], 20);
    expect(store.spent(['b'], 1019)).to.deep.equal([4]);
    expect(store.spent(['b'], 1020)).to.deep.equal([0]);
  });
});

/** A shared store that can be switched off: every call then throws, as a Redis client does when Redis is gone. */
class SwitchableStore extends MemoryRateLimitStore {
  down = false;
  calls = 0;
  constructor(private readonly nodeCount: number) {
    super();
  }
  private check(): void {
    this.calls += 1;
    if (this.down) throw new Error('connect ECONNREFUSED');
  }
  fleetSize(): number {
    return this.nodeCount;
  }
  override consume(rules: readonly RateLimitRule[], nowMs: number) {
    this.check();
    return super.consume(rules, nowMs);
  }
  override acquireSlot(key: string, limit: number, leaseMs: number, holder: string) {
    this.check();
    return super.acquireSlot(key, limit, leaseMs, holder);
  }
  override renewSlot(key: string, holder: string, leaseMs: number): void {
    this.check();
    super.renewSlot(key, holder, leaseMs);
  }
  override releaseSlot(key: string, holder: string): void {
    this.check();
    super.releaseSlot(key, holder);
  }
  override spend(key: string, amount: number, ttlMs: number) {
    this.check();
    return super.spend(key, amount, ttlMs);
  }
  override spent(keys: readonly string[]) {
    this.check();
    return super.spent(keys);
  }
}

function recordingLogger(): { logger: Logger; lines: Array<{ level: string; message: string; fields?: unknown }> } {
  const lines: Array<{ level: string; message: string; fields?: unknown }> = [];
  const log = (level: string) => (first: unknown, second?: string) =>
    typeof first === 'string' ? lines.push({ level, message: first }) : lines.push({ level, message: second ?? '', fields: first });
  return { logger: { warn: log('warn'), info: log('info'), error: log('error'), debug: log('debug') } as unknown as Logger, lines };
}

const metric = (store: LocalFallbackRateLimitStore, name: string): string =>
  store.metricLines().find((line) => line.startsWith(`${name} `))!.split(' ')[1]!;

describe('TOLLGATE_SHARED_STORE_FAILURE=local store (in process, shared store switched off by the test)', () => {
  let now: number;
  let shared: SwitchableStore;
  let store: LocalFallbackRateLimitStore;
  let lines: ReturnType<typeof recordingLogger>['lines'];

  function make(nodes: number): void {
    void store?.close();
    now = 10_000_000;
    shared = new SwitchableStore(nodes);
    const recorded = recordingLogger();
    lines = recorded.lines;
    store = new LocalFallbackRateLimitStore(shared, recorded.logger, () => now);
  }
  afterEach(() => store.close());

  it('uses the shared store while it answers, and reports that in its metrics', async () => {
    make(4);
    const [result] = await store.consume([rule(8)], now);
    expect(result).to.include({ allowed: true, remaining: 7 });
    expect(store.isLocal).to.equal(false);
    expect(store.fleetSize()).to.equal(4);
    expect(metric(store, 'tollgate_shared_store_local')).to.equal('0');
    expect(metric(store, 'tollgate_shared_store_fallbacks_total')).to.equal('0');
    expect(metric(store, 'tollgate_shared_store_local_decisions_total')).to.equal('0');
    expect(metric(store, 'tollgate_shared_store_nodes')).to.equal('4');
    // Each series with its help and type.
    const exposition = store.metricLines();
    for (const [name, type] of [['tollgate_shared_store_local', 'gauge'], ['tollgate_shared_store_fallbacks_total', 'counter'], ['tollgate_shared_store_local_decisions_total', 'counter'], ['tollgate_shared_store_nodes', 'gauge']]) {
      expect(exposition).to.include(`# TYPE ${name} ${type}`);
      expect(exposition.some((line) => line.startsWith(`# HELP ${name} `) && line.length > `# HELP ${name} `.length + 20), name).to.equal(true);
    }
    expect(exposition).to.have.length(12);
    // Budgets go to the shared store while it answers.
    expect(await store.spend('b', 5, 60_000)).to.equal(5);
    expect(await store.spent(['b'])).to.deep.equal([5]);
    await store.settle(['b'], 2, [60_000]);
    expect(shared.spent(['b'])).to.deep.equal([7]);
    expect(lines).to.deep.equal([]);
  });

  it('switches to local limits at 1/n of each limit, trying the shared store once per second, and back', async () => {
    make(4);
    shared.down = true;
    // 8 per minute on 4 nodes: this node alone admits 2.
    const first = await Promise.all([0, 1, 2].map(async () => (await store.consume([rule(8)], now))[0]!.allowed));
    expect(first).to.deep.equal([true, true, false]);
    expect(store.isLocal).to.equal(true);
    // Only the first call tried the shared store; the others were decided locally without waiting for it.
    expect(shared.calls).to.equal(1);
    expect(lines.filter((line) => line.level === 'warn')).to.have.length(1);
    expect(lines[0]!.message).to.equal('shared store unavailable: limits and token budgets are enforced by this node alone, at its share of each limit');
    expect(lines[0]!.fields).to.deep.include({ cause: 'connect ECONNREFUSED', nodes: 4, share: '1/4' });
    expect(metric(store, 'tollgate_shared_store_local')).to.equal('1');
    expect(metric(store, 'tollgate_shared_store_fallbacks_total')).to.equal('1');
    expect(metric(store, 'tollgate_shared_store_local_decisions_total')).to.equal('3');

    // 999 ms later still no trial; at 1000 ms one trial, which fails and leaves it local (no second warning).
    now += 999;
    await store.consume([rule(8, 'other')], now);
    expect(shared.calls).to.equal(1);
    now += 1;
    await store.consume([rule(8, 'other')], now);
    expect(shared.calls).to.equal(2);
    expect(lines.filter((line) => line.level === 'warn')).to.have.length(1);
    expect(metric(store, 'tollgate_shared_store_fallbacks_total')).to.equal('1');

    // The shared store is back: the next trial (a second after the last) switches back, once.
    shared.down = false;
    now += 500;
    await store.consume([rule(8, 'third')], now);
    expect(shared.calls).to.equal(2);
    now += 500;
    const [back] = await store.consume([rule(8)], now);
    expect(back!.remaining).to.equal(7);
    expect(store.isLocal).to.equal(false);
    expect(lines.filter((line) => line.level === 'info').map((line) => line.message)).to.deep.equal(['shared store reachable again: limits and token budgets are shared again']);
    expect(metric(store, 'tollgate_shared_store_local')).to.equal('0');
    // Healthy again: every call goes to the shared store.
    await store.consume([rule(8)], now);
    await store.consume([rule(8)], now);
    expect(shared.calls).to.equal(5);
  });

  it('holds token budgets locally at the node\'s share and answers totals counted n times', async () => {
    make(2);
    shared.down = true;
    // A budget of 100 on 2 nodes: 50 locally, reported as 2 × the local total.
    expect(await store.reserve(['b'], [100], 30, [60_000])).to.deep.equal({ admitted: true, totals: [60] });
    expect(await store.reserve(['b'], [100], 30, [60_000])).to.deep.equal({ admitted: false, totals: [60] });
    expect(await store.spent(['b'])).to.deep.equal([60]);
    expect(await store.spend('b', 5, 60_000)).to.equal(70);
    await store.settle(['b'], -15, [60_000]);
    expect(await store.spent(['b'])).to.deep.equal([40]);
    // Nothing reached the shared store but the first, failed, call.
    shared.down = false;
    expect(shared.spent(['b'])).to.deep.equal([0]);
  });

  it('gives slots taken locally back locally, and shared slots to the shared store', async () => {
    make(2);
    // A shared slot, taken while healthy.
    expect(await store.acquireSlot('s', 4, 60_000, 'shared-holder')).to.equal(true);
    shared.down = true;
    // 4 slots on 2 nodes: 2 locally.
    expect(await store.acquireSlot('s', 4, 60_000, 'a')).to.equal(true);
    expect(await store.acquireSlot('s', 4, 60_000, 'b')).to.equal(true);
    expect(await store.acquireSlot('s', 4, 60_000, 'c')).to.equal(false);
    // A holder refused locally is not a local holder: its release goes to the shared store (down: it throws there).
    expect(() => store.releaseSlot('s', 'c')).to.throw('ECONNREFUSED');
    // A local holder is renewed locally: 59 s on, renewed, it still holds its slot 2 s later.
    now += 59_000;
    store.renewSlot('s', 'a', 60_000);
    store.renewSlot('s', 'b', 60_000);
    now += 2_000;
    expect(await store.acquireSlot('s', 4, 60_000, 'c')).to.equal(false);
    await store.releaseSlot('s', 'a');
    expect(await store.acquireSlot('s', 4, 60_000, 'c')).to.equal(true);
    // The shared holder is renewed and released in the shared store (which is down: the calls reach it and fail there).
    expect(() => store.renewSlot('s', 'shared-holder', 60_000)).to.throw('ECONNREFUSED');
    expect(() => store.releaseSlot('s', 'shared-holder')).to.throw('ECONNREFUSED');
  });

  it('consumes and takes a slot together, locally when the shared store is down', async () => {
    make(1);
    const slot = { key: 'open', limit: 1, leaseMs: 60_000, holder: 'h1' };
    const healthy = await store.consumeAndAcquire([rule(2)], now, slot);
    expect(healthy).to.deep.include({ acquired: true });
    expect(healthy.results[0]!.remaining).to.equal(1);
    expect(store.isLocal).to.equal(false);
    // Refused by a limit in the shared store: no slot is tried.
    await store.consume([rule(1, 'one')], now);
    const limited = await store.consumeAndAcquire([rule(5, 'other-rule'), rule(1, 'one')], now, { ...slot, key: 'open-limited' });
    expect(limited.results.map((result) => result.allowed)).to.deep.equal([true, false]);
    expect(limited.acquired).to.equal(undefined);
    expect(store.isLocal).to.equal(false);
    shared.down = true;
    const local = await store.consumeAndAcquire([rule(2, 'k2')], now, { ...slot, key: 'open2' });
    expect(local.acquired).to.equal(true);
    // The second takes the rate limit but finds the slot taken; the third is refused by the limit and takes no slot.
    expect((await store.consumeAndAcquire([rule(2, 'k2')], now, { ...slot, key: 'open2', holder: 'h2' })).acquired).to.equal(false);
    const refused = await store.consumeAndAcquire([rule(2, 'k2')], now, { ...slot, key: 'open2', holder: 'h3' });
    expect(refused.acquired).to.equal(undefined);
    expect(refused.results[0]!.allowed).to.equal(false);
    // One rule of two refusing is enough to take no slot.
    const partly = await store.consumeAndAcquire([rule(5, 'fresh'), rule(2, 'k2')], now, { ...slot, key: 'open3' });
    expect(partly.results.map((result) => result.allowed)).to.deep.equal([true, false]);
    expect(partly.acquired).to.equal(undefined);
  });

  it('uses a shared store\'s own consume-and-acquire when it has one', async () => {
    make(1);
    const calls: string[] = [];
    (shared as unknown as { consumeAndAcquire: unknown }).consumeAndAcquire = async () => (calls.push('both'), { results: [], acquired: true });
    expect(await store.consumeAndAcquire([rule(2)], now, { key: 'o', limit: 1, leaseMs: 1000, holder: 'h' })).to.deep.equal({ results: [], acquired: true });
    expect(calls).to.deep.equal(['both']);
  });

  it('works with a shared store that reports no fleet size and has nothing to close', async () => {
    const bare = { consume: () => { throw new Error('down'); } } as unknown as SwitchableStore;
    const fallback = new LocalFallbackRateLimitStore(bare, recordingLogger().logger, () => 0);
    expect(fallback.fleetSize()).to.equal(1);
    expect((await fallback.consume([rule(1)], 0))[0]!.allowed).to.equal(true);
    await fallback.close();
  });

  it('takes one node when the shared store reports no usable fleet size', async () => {
    make(Number.NaN);
    expect(store.fleetSize()).to.equal(1);
    make(0);
    expect(store.fleetSize()).to.equal(1);
    make(2.7);
    expect(store.fleetSize()).to.equal(2);
    // The share never drops below one unit.
    make(8);
    shared.down = true;
    expect((await store.consume([rule(3)], now))[0]!.allowed).to.equal(true);
    expect((await store.consume([rule(3)], now))[0]!.allowed).to.equal(false);
  });
});

describe('in-process attestation challenges', () => {
  it('are single use, bound to their app, and refused at their expiry', async () => {
    const challenges = new MemoryChallengeStore();
    try {
      await challenges.issue('app_1', 'c1', 1000);
      expect(await challenges.consume('app_1', 'c1', 999)).to.equal(true);
      expect(await challenges.consume('app_1', 'c1', 999)).to.equal(false);
      // Another app's attempt fails and uses the challenge up.
      await challenges.issue('app_1', 'c2', 1000);
      expect(await challenges.consume('app_2', 'c2', 0)).to.equal(false);
      expect(await challenges.consume('app_1', 'c2', 0)).to.equal(false);
      await challenges.issue('app_1', 'c3', 1000);
      expect(await challenges.consume('app_1', 'c3', 1000)).to.equal(false);
      expect(await challenges.consume('app_1', 'never-issued', 0)).to.equal(false);
    } finally {
      challenges.close();
    }
  });

  it('hold at most their maximum, dropping the oldest', async () => {
    const challenges = new MemoryChallengeStore(2);
    try {
      await challenges.issue('a', 'c1', 1000);
      await challenges.issue('a', 'c2', 1000);
      await challenges.issue('a', 'c3', 1000);
      expect(await challenges.consume('a', 'c1', 0)).to.equal(false);
      expect(await challenges.consume('a', 'c2', 0)).to.equal(true);
      expect(await challenges.consume('a', 'c3', 0)).to.equal(true);
    } finally {
      challenges.close();
    }
  });
});

describe('rate-limit rules, headers and the store-unavailable refusal', () => {
  const app = (settings: Record<string, unknown>) =>
    ({ id: 'app_1', settings: { deviceLimitPerMinute: 60, appLimitPerMinute: 600, maxConcurrentStreamsPerDevice: 4, ...settings } }) as unknown as AppIdentity;

  it('limits a device and its app per minute, and adds each optional limit that is set, keyed under the app\'s hash tag', () => {
    expect(limitSubject(app({}), 'openai', 'dev')).to.deep.equal({
      rules: [
        { policy: 'device', key: '{app_1}\u0000d\u0000dev', limit: 60, windowSeconds: 60 },
        { policy: 'app', key: '{app_1}\u0000a', limit: 600, windowSeconds: 60 },
      ],
      slotKey: '{app_1}\u0000s\u0000dev',
      slotLimit: 4,
    });
    const every = app({ providerLimitsPerMinute: { openai: 30, other: 1 }, deviceDailyQuota: 500, appDailyQuota: 5000, userLimitPerMinute: 20, userDailyQuota: 200 });
    expect(limitSubject(every, 'openai', 'dev', undefined, 'u1').rules.slice(2)).to.deep.equal([
      { policy: 'provider', key: '{app_1}\u0000p\u0000openai', limit: 30, windowSeconds: 60 },
      { policy: 'device-day', key: '{app_1}\u0000dd\u0000dev', limit: 500, windowSeconds: 86_400 },
      { policy: 'app-day', key: '{app_1}\u0000ad', limit: 5000, windowSeconds: 86_400 },
      { policy: 'user', key: '{app_1}\u0000u\u0000u1', limit: 20, windowSeconds: 60 },
      { policy: 'user-day', key: '{app_1}\u0000ud\u0000u1', limit: 200, windowSeconds: 86_400 },
    ]);
    // Per-user limits only for a signed-in user; another provider's limit does not apply.
    expect(limitSubject(every, 'anthropic', 'dev').rules.map((rule) => rule.policy)).to.deep.equal(['device', 'app', 'device-day', 'app-day']);
    // The settings passed (a user's, profile applied) win over the app's.
    expect(limitSubject(every, 'openai', 'dev', { ...every.settings, deviceLimitPerMinute: 5 } as AppIdentity['settings']).rules[0]!.limit).to.equal(5);
  });

  it('writes one RateLimit-Policy and RateLimit item per policy', () => {
    expect(rateLimitHeaderValues([])).to.deep.equal(['', '']);
    expect(
      rateLimitHeaderValues([
        { policy: 'device', limit: 60, windowSeconds: 60, remaining: 59, resetSeconds: 1 },
        { policy: 'app', limit: 600, windowSeconds: 60, remaining: 0, resetSeconds: 60 },
      ]),
    ).to.deep.equal(['"device";q=60;w=60, "app";q=600;w=60', '"device";r=59;t=1, "app";r=0;t=60']);
  });

  it('refuses with 503 rate_limit_store_unavailable, retry in a second, keeping the cause', () => {
    const cause = new Error('ECONNREFUSED');
    const error = storeUnavailable(cause);
    expect(error).to.be.an.instanceOf(GatewayError);
    expect(error).to.deep.include({ status: 503, retryAfterSeconds: 1, reason: 'rate_limit_store_unavailable' });
    expect(error.message).to.equal('Rate limits cannot be checked right now; the request was refused. Retry shortly.');
    expect((error as unknown as { cause: unknown }).cause).to.equal(cause);
  });
});

describe('the limitRate stage with stores that answer by promise, and its stream slots', () => {
  const NOW = Date.UTC(2026, 11, 5, 13, 45, 30);
  const LEASE_MS = 3_000;
  const settings = { deviceLimitPerMinute: 60, appLimitPerMinute: 600, maxConcurrentStreamsPerDevice: 1 };

  /** A store whose every answer is recorded; `answers` picks each method's answer. */
  function scriptedStore(answers: Partial<Record<'consume' | 'consumeAndAcquire' | 'reserve' | 'acquireSlot' | 'releaseSlot', (...args: never[]) => unknown>>) {
    const calls: string[] = [];
    /** The rules of each consume, as `policy key limit`. */
    const consumed: string[][] = [];
    const store = {
      consume: (rules: readonly RateLimitRule[]) => {
        calls.push('consume');
        consumed.push(rules.map((limit) => `${limit.policy} ${JSON.stringify(limit.key)} ${limit.limit}`));
        return answers.consume ? answers.consume() : rules.map((limit) => allowed(limit));
      },
      ...(answers.consumeAndAcquire
        ? { consumeAndAcquire: (_rules: readonly RateLimitRule[], _nowMs: number, slot: { key: string; limit: number }) => (calls.push(`consumeAndAcquire ${slot.limit}`), answers.consumeAndAcquire!()) }
        : {}),
      spend: () => 0,
      spent: (keys: readonly string[]) => keys.map(() => 0),
      reserve: (keys: readonly string[], _limits: readonly number[], amount: number) => (calls.push(`reserve ${amount}`), answers.reserve ? answers.reserve() : { admitted: true, totals: keys.map(() => amount) }),
      acquireSlot: (key: string, limit: number, leaseMs: number) => (calls.push(`acquire ${JSON.stringify(key)} ${limit} ${leaseMs}`), answers.acquireSlot ? answers.acquireSlot() : true),
      renewSlot: (_key: string, _holder: string, leaseMs: number) => void calls.push(`renew ${leaseMs}`),
      releaseSlot: () => (calls.push('release'), answers.releaseSlot ? answers.releaseSlot() : undefined),
    } as unknown as RateLimitStore;
    return { store, calls, consumed };
  }
  const allowed = (rule: RateLimitRule): RateLimitRuleResult => ({ rule, allowed: true, remaining: rule.limit - 1, resetSeconds: 1, retryAfterSeconds: 0 });

  /** A request without a body; the response records its headers and closes when told. */
  function requestContext(values: Record<string, unknown> = {}, user?: { key: string; profile?: string; values: Record<string, unknown> }, app = { id: 'app_1', settings: { ...settings, ...values } }) {
    const response = Object.assign(new EventEmitter(), { destroyed: false, writableFinished: false, headers: {} as Record<string, unknown>, setHeader(name: string, value: unknown) { this.headers[name] = value; } });
    const context = new ProxyContext('r', { method: 'GET', headers: {} } as never, response as never, { slug: 'openai', version: 'v1', providerPath: 'v1/models', query: '' }, { slug: 'openai' } as never, 0);
    context.set('app', app as never);
    context.set('device', { deviceId: 'dev' } as never);
    if (user) context.set('user', { key: user.key, profile: user.profile, settings: { ...settings, ...user.values } } as never);
    return { context, response };
  }
  const stage = (store: RateLimitStore) => new LimitRateStage(store, () => NOW, { maxBodyBytes: 1_000, streamLeaseMs: LEASE_MS } as Configuration);

  it('decides on the rules a store answers by promise: refuses, naming the policy, or admits and takes the slot', async () => {
    const refusing = scriptedStore({
      consume: () => Promise.resolve([allowed(rule(60, 'd')), { rule: { policy: 'app-day', key: 'a', limit: 5, windowSeconds: 86_400 }, allowed: false, remaining: 0, resetSeconds: 900, retryAfterSeconds: 700 }]),
    });
    const refused = requestContext();
    const error = await rejection(stage(refusing.store).run(refused.context));
    expect(error).to.deep.include({ type: 'rateLimited', status: 429, retryAfterSeconds: 700, reason: 'rate_limited_app_day' });
    expect(error.message).to.equal('Rate limit exceeded (app-day); retry after 700 s.');
    expect(refused.response.headers).to.deep.equal({ 'RateLimit-Policy': '"device";q=60;w=60, "app-day";q=5;w=86400', RateLimit: '"device";r=59;t=1, "app-day";r=0;t=900' });
    expect(refusing.calls).to.deep.equal(['consume']);
    const admitting = scriptedStore({ consume: () => Promise.resolve([allowed(rule(60, 'd'))]) });
    const admitted = requestContext();
    await stage(admitting.store).run(admitted.context);
    expect(admitted.context.get('limit').outcomes).to.deep.equal([{ policy: 'device', limit: 60, windowSeconds: 60, remaining: 59, resetSeconds: 1 }]);
    expect(admitting.calls).to.deep.equal(['consume', `acquire ${JSON.stringify('{app_1}\u0000s\u0000dev')} 1 ${LEASE_MS}`]);
    admitted.response.emit('close');
    expect(admitting.calls.at(-1)).to.equal('release');
  });

  it('takes the stream slot after a token reservation answered by promise, and refuses when none is free', async () => {
    const full = scriptedStore({ reserve: () => Promise.resolve({ admitted: true, totals: [1] }), acquireSlot: () => false });
    const error = await rejection(stage(full.store).run(requestContext({ deviceDailyTokens: 100 }).context));
    expect(error).to.deep.include({ type: 'rateLimited', retryAfterSeconds: 1, reason: 'rate_limited_concurrent' });
    expect(error.message).to.equal('Too many open requests from this device (at most 1 at once).');
    expect(full.calls.map((call) => call.split(' ')[0])).to.deep.equal(['consume', 'reserve', 'acquire']);
    const free = scriptedStore({ reserve: () => Promise.resolve({ admitted: true, totals: [1] }) });
    const { context, response } = requestContext({ deviceDailyTokens: 100 });
    await stage(free.store).run(context);
    expect(free.calls.map((call) => call.split(' ')[0])).to.deep.equal(['consume', 'reserve', 'acquire']);
    response.emit('close');
    expect(free.calls.at(-1)).to.equal('release');
  });

  it('gives a slot back once, and a store failing to take it back is no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.prependListener('unhandledRejection', onUnhandled);
    try {
      const failing = scriptedStore({ releaseSlot: () => Promise.reject(new Error('store down')) });
      const { context, response } = requestContext();
      await stage(failing.store).run(context);
      response.destroyed = true;
      response.emit('close');
      response.emit('close');
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(failing.calls.filter((call) => call === 'release')).to.have.length(1);
      expect(unhandled).to.deep.equal([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('takes the slot with the rules when the store can (one call), and gives it back when a budget then refuses', async () => {
    const SLOT = `acquire ${JSON.stringify('{app_1}\u0000s\u0000dev')} 1 ${LEASE_MS}`;
    const together = (acquired: boolean | undefined, refused = false) => () =>
      Promise.resolve({ results: [refused ? { ...allowed(rule(60, 'd')), allowed: false, remaining: 0, retryAfterSeconds: 9 } : allowed(rule(60, 'd'))], acquired });
    const taken = scriptedStore({ consumeAndAcquire: together(true) });
    const held = requestContext();
    await stage(taken.store).run(held.context);
    expect(held.context.get('limit').outcomes).to.have.length(1);
    expect(taken.calls).to.deep.equal(['consumeAndAcquire 1']);
    held.response.emit('close');
    expect(taken.calls).to.deep.equal(['consumeAndAcquire 1', 'release']);
    // No slot free: refused, nothing taken to give back.
    const none = scriptedStore({ consumeAndAcquire: together(false) });
    expect(await rejection(stage(none.store).run(requestContext().context))).to.deep.include({ reason: 'rate_limited_concurrent' });
    expect(none.calls).to.deep.equal(['consumeAndAcquire 1']);
    // A rule refused (no slot tried).
    const limited = scriptedStore({ consumeAndAcquire: together(undefined, true) });
    expect(await rejection(stage(limited.store).run(requestContext().context))).to.deep.include({ reason: 'rate_limited_device', retryAfterSeconds: 9 });
    expect(limited.calls).to.deep.equal(['consumeAndAcquire 1']);
    // The slot taken, then the token budget refuses: the slot goes back at once.
    const budget = scriptedStore({ consumeAndAcquire: together(true), reserve: () => ({ admitted: false, totals: [100] }) });
    expect(await rejection(stage(budget.store).run(requestContext({ deviceDailyTokens: 100 }).context))).to.deep.include({ reason: 'token_budget' });
    expect(budget.calls).to.deep.equal(['consumeAndAcquire 1', 'reserve 1', 'release']);
    // The store cannot answer: 503, fail closed.
    const down = scriptedStore({ consumeAndAcquire: () => Promise.reject(new Error('down')) });
    expect(await rejection(stage(down.store).run(requestContext().context))).to.deep.include({ status: 503, reason: 'rate_limit_store_unavailable' });
    // Without consumeAndAcquire the slot is taken on its own, after the rules.
    const apart = scriptedStore({});
    const alone = requestContext();
    await stage(apart.store).run(alone.context);
    expect(apart.calls).to.deep.equal(['consume', SLOT]);
    alone.response.emit('close');
  });

  it('takes a slot answered by promise, refuses when none is free, and fails closed when the store cannot take one', async () => {
    const later = scriptedStore({ acquireSlot: () => Promise.resolve(true) });
    const held = requestContext();
    await stage(later.store).run(held.context);
    held.response.emit('close');
    expect(later.calls.map((call) => call.split(' ')[0])).to.deep.equal(['consume', 'acquire', 'release']);
    const full = scriptedStore({ acquireSlot: () => Promise.resolve(false) });
    expect(await rejection(stage(full.store).run(requestContext().context))).to.deep.include({ reason: 'rate_limited_concurrent' });
    const rejecting = scriptedStore({ acquireSlot: () => Promise.reject(new Error('down')) });
    expect(await rejection(stage(rejecting.store).run(requestContext().context))).to.deep.include({ status: 503, reason: 'rate_limit_store_unavailable' });
    const throwing = scriptedStore({
      acquireSlot: () => {
        throw new Error('down');
      },
    });
    let thrown: unknown;
    try {
      stage(throwing.store).run(requestContext().context);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).to.be.an.instanceOf(GatewayError);
    expect(thrown).to.deep.include({ status: 503, reason: 'rate_limit_store_unavailable' });
  });

  it('keeps the rules of each signed-in user and profile on a device apart', () => {
    const { store, consumed } = scriptedStore({});
    const limits = stage(store);
    const app = { id: 'app_1', settings };
    const run = (user: { key: string; profile?: string; values: Record<string, unknown> }) => {
      const { context, response } = requestContext({}, user, app);
      limits.run(context);
      response.emit('close');
      return consumed.at(-1)!.filter((line) => line.startsWith('user') || line.startsWith('device '));
    };
    const device = `device ${JSON.stringify('{app_1}\u0000d\u0000dev')} 60`;
    expect(run({ key: 'u1', values: { userLimitPerMinute: 5 } })).to.deep.equal([device, `user ${JSON.stringify('{app_1}\u0000u\u0000u1')} 5`]);
    expect(run({ key: 'u2', values: { userLimitPerMinute: 7 } })).to.deep.equal([device, `user ${JSON.stringify('{app_1}\u0000u\u0000u2')} 7`]);
    // The same user under another profile: that profile's limits, not the ones kept for the first.
    expect(run({ key: 'u1', profile: 'pro', values: { userLimitPerMinute: 50 } })).to.deep.equal([device, `user ${JSON.stringify('{app_1}\u0000u\u0000u1')} 50`]);
    expect(run({ key: 'u1', profile: 'team', values: { userLimitPerMinute: 70 } })).to.deep.equal([device, `user ${JSON.stringify('{app_1}\u0000u\u0000u1')} 70`]);
    // Key and profile are kept apart: user "u1" with profile "pro" is not user "u1pro" without one.
    expect(run({ key: 'u1pro', values: { userLimitPerMinute: 3 } })).to.deep.equal([device, `user ${JSON.stringify('{app_1}\u0000u\u0000u1pro')} 3`]);
  });

  it('renews every held lease each third of the lease, gives back a slot whose response is gone, and renews none once none is held', () => {
    mock.timers.enable({ apis: ['setInterval'] });
    try {
      const { store, calls } = scriptedStore({});
      const limits = stage(store);
      const first = requestContext();
      const second = requestContext();
      limits.run(first.context);
      limits.run(second.context);
      calls.length = 0;
      mock.timers.tick(LEASE_MS / 3 - 1);
      expect(calls).to.deep.equal([]);
      mock.timers.tick(1);
      expect(calls).to.deep.equal([`renew ${LEASE_MS}`, `renew ${LEASE_MS}`]);
      // A response that finished without its 'close' reaching the stage: its slot is given back at the next tick.
      second.response.writableFinished = true;
      mock.timers.tick(LEASE_MS / 3);
      expect(calls.slice(2)).to.deep.equal(['release', `renew ${LEASE_MS}`]);
      first.response.emit('close');
      expect(calls.slice(4)).to.deep.equal(['release']);
      // Nothing held: no renewal runs again. (Whether the timer itself stops is not asserted: Node 20's mock timers
      // keep an interval that clears itself from its own callback running.)
      mock.timers.tick(LEASE_MS * 3);
      expect(calls.slice(5)).to.deep.equal([]);
    } finally {
      mock.timers.reset();
    }
  });
});
