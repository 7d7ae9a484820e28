/**
 * Shared state for several gateway nodes in Redis (`TOLLGATE_REDIS_URL`): rate limits and attestation challenges.
 * Without `TOLLGATE_REDIS_URL` this plugin registers nothing and the in-process defaults stay.
 *
 * - Rate limits: GCRA, one Lua script over every rule of a request, all-or-nothing, with Redis's own clock (`TIME`) so
 *   that nodes with skewed clocks agree. Scripts run atomically, so N requests fired at N nodes at once admit exactly
 *   the limit.
 * - Challenges: `SET key app PX ttl NX` to issue, `GETDEL` to consume, so a challenge is used once across the fleet.
 * - Token budgets: a request's reservation is one script over its budget counters (all or nothing against their limits),
 *   its settlement another, so N requests fired at N nodes at once admit only the reservations that fit
 *   (core/pipeline/token-reservation.ts).
 * - Open-request slots are leases: one sorted set per app and device, each member a request scored by its lease expiry;
 *   the acquiring script prunes expired members first, so a crashed node's slots free themselves within one lease
 *   (docs/decisions/2026-11-24-stream-slot-leases.md). Releases of one event-loop turn share one pipeline per hash slot.
 * - Redis Cluster: `TOLLGATE_REDIS_URL=redis-cluster://host1:port1,host2:port2,…` (seed nodes). Every key of one script
 *   shares a `{app}` hash tag, so the script runs on one shard.
 * - Fail closed: commands are not queued while Redis is unreachable (`enableOfflineQueue: false`); a rate-limit or
 *   challenge call then throws, and the gateway refuses the request rather than letting it through unlimited. Each
 *   change of the connection's state (up, down) is reported once to the host, which logs it and exports
 *   `tollgate_dependency_up{dependency="redis"}`.
 * - A Redis that accepts TCP but does not answer (SIGSTOP, a long fork, a blackholed network) is failed closed just as
 *   fast: every command has a timeout (`TOLLGATE_REDIS_COMMAND_TIMEOUT_MS`, default 500, never above the readiness
 *   deadline), on every connection of both clients, and a command that timed out reports Redis down until a probe is
 *   answered again. Without it a request waited as long as Redis did (12 s in a 15 s freeze). On Redis Cluster a
 *   command may be retried across redirections, so its whole call is bounded by the same deadline
 *   (see {@link withCommandDeadline}).
 *
 * Device revocations and app changes are shared through the database's change feed (every node polls it), so they need
 * no Redis of their own.
 */
import { randomUUID } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import Redis, { Cluster } from 'ioredis';
import type { BudgetReservation, ChallengeStore, RateLimitRule, RateLimitRuleResult, RateLimitStore, SlotRequest, TollgatePlugin } from '../../core/contract';
import { readiness } from './readiness';
import { CommandHealth, DEFAULT_COMMAND_TIMEOUT_MS, commandTimeoutOf } from './command-health';

/**
 * GCRA over every rule of a request, all-or-nothing, with Redis's own clock. KEYS: one per rule, then optionally the
 * open-request slot set. ARGV: per rule, interval (ms) and window (ms); with a slot set, then its limit, lease (ms) and
 * holder: expired leases are pruned and a slot is taken when one is free (a refused attempt writes nothing), only when
 * every rule allowed the request; with no rule, that is the whole script (acquireSlot).
 * Returns, per rule: allowed (1/0), remaining, reset (ms), retry-after (ms); with a slot set, then 1 taken, 0 refused,
 * -1 not tried.
 */
const GCRA_SCRIPT = `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local with_slot = #ARGV > #KEYS * 2
local rules = #KEYS
if with_slot then rules = #KEYS - 1 end
local results = {}
local next_tats = {}
local all_allowed = true
for index = 1, rules do
  local key = KEYS[index]
  local interval = tonumber(ARGV[index * 2 - 1])
  local window = tonumber(ARGV[index * 2])
  local stored = tonumber(redis.call('GET', key))
  local tat = now
  if stored and stored > now then tat = stored end
  local new_tat = tat + interval
  local allow_at = new_tat - window
  if allow_at <= now then
    local remaining = math.floor((now - allow_at) / interval)
    table.insert(results, {1, remaining, new_tat - now, 0})
  else
    all_allowed = false
    table.insert(results, {0, 0, tat - now, allow_at - now})
  end
  next_tats[index] = new_tat
end
local slot = -1
if all_allowed then
  for index = 1, rules do
    redis.call('SET', KEYS[index], next_tats[index], 'PX', math.ceil(next_tats[index] - now) + 1000)
  end
  if with_slot then
    local slots = KEYS[rules + 1]
    local limit = tonumber(ARGV[rules * 2 + 1])
    local lease = tonumber(ARGV[rules * 2 + 2])
    redis.call('ZREMRANGEBYSCORE', slots, '-inf', now)
    if redis.call('ZCARD', slots) >= limit then
      slot = 0
    else
      redis.call('ZADD', slots, now + lease, ARGV[rules * 2 + 3])
      redis.call('PEXPIRE', slots, lease + 1000)
      slot = 1
    end
  end
end
local flat = {}
for _, result in ipairs(results) do
  for _, value in ipairs(result) do table.insert(flat, value) end
end
if with_slot then table.insert(flat, slot) end
return flat
`;

/** KEYS[1]: the slot set. ARGV: holder, lease (ms). Extends a lease that is still held; an expired one stays gone. */
const RENEW_SCRIPT = `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local lease = tonumber(ARGV[2])
local expires = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not expires or expires <= now then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[1])
if redis.call('PTTL', KEYS[1]) < lease + 1000 then redis.call('PEXPIRE', KEYS[1], lease + 1000) end
return 1
`;

/**
 * Token-budget reservation, all or nothing. KEYS: the budget counters of one request (one `{app}` hash tag). ARGV:
 * the amount, then per key its limit and TTL (ms). Adds the amount to every counter only when each stays within its
 * limit. Returns 1 or 0, then the totals (after the add when admitted).
 */
const RESERVE_SCRIPT = `
local amount = tonumber(ARGV[1])
local totals = {}
local fits = 1
for index = 1, #KEYS do
  local total = tonumber(redis.call('GET', KEYS[index])) or 0
  totals[index] = total
  if total + amount > tonumber(ARGV[index * 2]) then fits = 0 end
end
if fits == 1 then
  for index = 1, #KEYS do
    totals[index] = redis.call('INCRBY', KEYS[index], amount)
    redis.call('PEXPIRE', KEYS[index], ARGV[index * 2 + 1])
  end
end
local reply = {fits}
for index = 1, #KEYS do table.insert(reply, totals[index]) end
return reply
`;

/**
 * Settles a reservation. KEYS: the counters it was made in. ARGV: the delta (reported minus reserved), then per key
 * its TTL (ms). A counter never goes below 0 (one that expired meanwhile is not made negative).
 */
const SETTLE_SCRIPT = `
local delta = tonumber(ARGV[1])
for index = 1, #KEYS do
  local total = redis.call('INCRBY', KEYS[index], delta)
  if total < 0 then redis.call('SET', KEYS[index], 0) end
  redis.call('PEXPIRE', KEYS[index], ARGV[index + 1])
end
return 1
`;

/**
 * KEYS[1]: the set of live nodes. ARGV: this node's id, its lease (ms). Renews this node's lease, drops expired ones and
 * answers how many nodes are live: the fleet size a node divides its limits by when it falls back to local limits.
 */
const HEARTBEAT_SCRIPT = `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], lease * 2)
return redis.call('ZCARD', KEYS[1])
`;

/** How often a node renews its place in the fleet, and how long it stays counted without renewing. */
const HEARTBEAT_MS = 5000;
const HEARTBEAT_LEASE_MS = 15_000;

/**
 * GCRA_SCRIPT's read without a charge (`GET /v1/me`), with Redis's clock. KEYS: one per rule; ARGV: per rule, interval
 * and window (ms). Returns per rule: remaining (units that fit now, at most the limit) and reset (ms).
 */
const GCRA_PEEK_SCRIPT = `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local flat = {}
for index = 1, #KEYS do
  local interval = tonumber(ARGV[index * 2 - 1])
  local window = tonumber(ARGV[index * 2])
  local stored = tonumber(redis.call('GET', KEYS[index]))
  local tat = now
  if stored and stored > now then tat = stored end
  local remaining = math.floor((now - tat + window) / interval + 0.000000001)
  local limit = math.floor(window / interval + 0.5)
  if remaining > limit then remaining = limit end
  if remaining < 0 then remaining = 0 end
  table.insert(flat, remaining)
  table.insert(flat, tat - now)
end
return flat
`;

type RedisClient = Redis | Cluster;
type ScriptedClient = RedisClient & {
  tollgateGcra(count: number, ...args: string[]): Promise<number[]>;
  tollgateRenew(key: string, holder: string, lease: string): Promise<number>;
  tollgateReserve(count: number, ...args: string[]): Promise<number[]>;
  tollgateSettle(count: number, ...args: string[]): Promise<number>;
  tollgateHeartbeat(key: string, node: string, lease: string): Promise<number>;
  tollgatePeek(count: number, ...args: string[]): Promise<number[]>;
  tollgatePeek(count: number, ...args: string[]): Promise<number[]>;
};

function waitForReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * `redis://…` / `rediss://…` connect to one server; `redis-cluster://[user:password@]host:port,host:port,…` to a Redis
 * Cluster through the listed seed nodes (`rediss-cluster://` with TLS).
 */
export function connect(url: string, commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS): RedisClient {
  const cluster = /^(rediss?)-cluster:\/\/(?:([^@/]*)@)?([^/?#]+)/.exec(url);
  // commandTimeout: ioredis rejects a command not answered in time ("Command timed out"); its reply, if it ever comes,
  // is still matched to it, so the connection stays in step.
  const common = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: commandTimeoutMs };
  if (!cluster) return new Redis(url, { ...common, lazyConnect: false });
  const [, scheme, credentials, hosts] = cluster as unknown as [string, string, string | undefined, string];
  const [username, password] = credentials ? credentials.split(':').map(decodeURIComponent) : [];
  const nodes = hosts.split(',').map((entry) => {
    const [host, port] = entry.trim().split(':');
    return { host: host!, port: Number(port) || 6379 };
  });
  return new Cluster(nodes, {
    enableOfflineQueue: false,
    enableReadyCheck: true,
    // A shard that is down answers CLUSTERDOWN or not at all: retry once, not 16 times (which took 1.2-1.7 s per refusal).
    maxRedirections: 2,
    retryDelayOnClusterDown: 50,
    retryDelayOnFailover: 50,
    slotsRefreshTimeout: Math.min(1000, commandTimeoutMs * 2),
    clusterRetryStrategy: (times) => Math.min(times * 200, 2000),
    redisOptions: {
      ...common,
      ...(username ? { username } : {}),
      ...(password ? { password } : {}),
      ...(scheme === 'rediss' ? { tls: {} } : {}),
    },
  });
}

/** Passes calls through unchanged: for a store built without health reporting (tests of the scripts alone). */
const UNWATCHED = { run: <T>(call: Promise<T>): Promise<T> => call, stop: () => undefined };

export class RedisRateLimitStore implements RateLimitStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix = 'tollgate:rl:',
    private readonly onClose: () => void = () => undefined,
    private readonly health: Pick<CommandHealth, 'run' | 'stop'> = UNWATCHED,
  ) {
    redis.defineCommand('tollgateGcra', { lua: GCRA_SCRIPT });
    redis.defineCommand('tollgateRenew', { lua: RENEW_SCRIPT, numberOfKeys: 1 });
    redis.defineCommand('tollgateReserve', { lua: RESERVE_SCRIPT });
    redis.defineCommand('tollgateSettle', { lua: SETTLE_SCRIPT });
    redis.defineCommand('tollgateHeartbeat', { lua: HEARTBEAT_SCRIPT, numberOfKeys: 1 });
    redis.defineCommand('tollgatePeek', { lua: GCRA_PEEK_SCRIPT });
  }

  /** What `consume` would find now, charging nothing (GCRA_PEEK_SCRIPT). */
  async peek(rules: readonly RateLimitRule[]): Promise<RateLimitRuleResult[]> {
    if (rules.length === 0) return [];
    const keys = rules.map((rule) => this.prefix + rule.key);
    const argv = rules.flatMap((rule) => [String((rule.windowSeconds * 1000) / rule.limit), String(rule.windowSeconds * 1000)]);
    const flat = (await this.health.run(this.scripted.tollgatePeek(keys.length, ...keys, ...argv))).map(Number);
    return rules.map((rule, index) => {
      const remaining = flat[index * 2]!;
      return { rule, allowed: remaining > 0, remaining, resetSeconds: Math.max(0, Math.ceil(flat[index * 2 + 1]! / 1000)), retryAfterSeconds: 0 };
    });
  }

  private readonly nodeId = randomUUID();
  private nodes = 1;
  private heartbeat: NodeJS.Timeout | undefined;

  /** Live nodes as last seen by the heartbeat (1 until the first one is answered). */
  fleetSize(): number {
    return this.nodes;
  }

  /** Renews this node's place in the fleet now and every HEARTBEAT_MS (a failure keeps the last count). */
  async startHeartbeat(): Promise<void> {
    const beat = () =>
      this.scripted.tollgateHeartbeat(`${this.prefix}{fleet}:nodes`, this.nodeId, String(HEARTBEAT_LEASE_MS)).then(
        (count) => {
          this.nodes = Math.max(1, Number(count));
        },
        () => undefined,
      );
    await beat();
    this.heartbeat = setInterval(() => void beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private get scripted(): ScriptedClient {
    return this.redis as ScriptedClient;
  }

  async consume(rules: readonly RateLimitRule[]): Promise<RateLimitRuleResult[]> {
    return this.resultsOf(rules, await this.gcra(rules));
  }

  /** The rate limits and the stream slot in one script, one round trip (see GCRA_SCRIPT). */
  async consumeAndAcquire(
    rules: readonly RateLimitRule[],
    _nowMs: number,
    slot: SlotRequest,
  ): Promise<{ results: RateLimitRuleResult[]; acquired: boolean | undefined }> {
    const flat = await this.gcra(rules, slot);
    const outcome = flat[rules.length * 4];
    return { results: this.resultsOf(rules, flat), acquired: outcome === -1 ? undefined : outcome === 1 };
  }

  /** Runs GCRA_SCRIPT over `rules` and, when given, the slot: its flat answer as numbers. */
  private async gcra(rules: readonly RateLimitRule[], slot?: SlotRequest): Promise<number[]> {
    const keys = rules.map((rule) => this.prefix + rule.key);
    const argv = rules.flatMap((rule) => [String((rule.windowSeconds * 1000) / rule.limit), String(rule.windowSeconds * 1000)]);
    if (slot) {
      keys.push(`${this.prefix}slot:${slot.key}`);
      argv.push(String(slot.limit), String(slot.leaseMs), slot.holder);
    }
    return (await this.health.run(this.scripted.tollgateGcra(keys.length, ...keys, ...argv))).map(Number);
  }

  private resultsOf(rules: readonly RateLimitRule[], flat: readonly number[]): RateLimitRuleResult[] {
    return rules.map((rule, index) => {
      const [allowed, remaining, resetMs, retryMs] = flat.slice(index * 4, index * 4 + 4) as [number, number, number, number];
      return {
        rule,
        allowed: allowed === 1,
        remaining,
        resetSeconds: Math.max(0, Math.ceil(resetMs / 1000)),
        retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil(retryMs / 1000)),
      };
    });
  }

  /**
   * Prunes expired leases and takes a slot, in one script: GCRA_SCRIPT with no rule. A refused attempt writes nothing (it
   * never extends another holder's lease, nor the key's lifetime); the key lives as long as its newest lease.
   */
  async acquireSlot(key: string, limit: number, leaseMs: number, holder: string): Promise<boolean> {
    const [taken] = await this.gcra([], { key, limit, leaseMs, holder });
    return taken === 1;
  }

  async renewSlot(key: string, holder: string, leaseMs: number): Promise<void> {
    await this.health.run(this.scripted.tollgateRenew(`${this.prefix}slot:${key}`, holder, String(leaseMs)));
  }

  /** Slots given back during this turn of the event loop, sent together (see flushReleases). */
  private pendingReleases: Array<{ readonly key: string; readonly holder: string; resolve(): void; reject(error: unknown): void }> = [];

  /**
   * Gives a slot back. The releases of one turn of the event loop (every response that ended in it) go out together,
   * after its I/O callbacks: one pipeline, so one write and one read, instead of a round trip each. The delay is that
   * turn's remainder, far less than the time a client needs to send its next request, which Redis then orders after the
   * release anyway (one connection per node).
   */
  releaseSlot(key: string, holder: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pendingReleases.push({ key: `${this.prefix}slot:${key}`, holder, resolve, reject });
      if (this.pendingReleases.length === 1) setImmediate(this.flushReleases);
    });
  }

  /** One pipeline of `ZREM`s per hash slot: on Redis Cluster, the keys of one pipeline must share a slot. */
  private readonly flushReleases = (): void => {
    const batch = this.pendingReleases;
    if (batch.length === 0) return;
    this.pendingReleases = [];
    const groups = new Map<number, typeof batch>();
    for (const entry of batch) {
      const slot = calculateSlot(entry.key);
      const group = groups.get(slot);
      if (group) group.push(entry);
      else groups.set(slot, [entry]);
    }
    for (const group of groups.values()) {
      const pipeline = this.redis.pipeline();
      for (const entry of group) pipeline.zrem(entry.key, entry.holder);
      pipeline.exec().then(
        (results) =>
          group.forEach((entry, index) => {
            const error = results?.[index]?.[0];
            if (error) entry.reject(error);
            else entry.resolve();
          }),
        (error: unknown) => group.forEach((entry) => entry.reject(error)),
      );
    }
  };

  /** Token budgets: `INCRBY` then `PEXPIRE` in one MULTI, so every node adds to the same counter. */
  async spend(key: string, amount: number, ttlMs: number): Promise<number> {
    const full = `${this.prefix}tok:${key}`;
    const results = await this.health.run(this.redis.multi().incrby(full, Math.round(amount)).pexpire(full, Math.ceil(ttlMs)).exec());
    const [error, total] = results?.[0] ?? [new Error('token counter: no reply'), 0];
    if (error) throw error;
    return Number(total);
  }

  /** One `MGET` (the keys of one call share the app's hash tag, so one shard answers). */
  async spent(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return [];
    const values = await this.health.run(this.redis.mget(...keys.map((key) => `${this.prefix}tok:${key}`)));
    return values.map((value) => (value === null ? 0 : Number(value)));
  }

  /** Token-budget reservation: one script over the request's counters (RESERVE_SCRIPT), atomic across the fleet. */
  async reserve(keys: readonly string[], limits: readonly number[], amount: number, ttlsMs: readonly number[]): Promise<BudgetReservation> {
    if (keys.length === 0) return { admitted: true, totals: [] };
    const argv = [String(Math.round(amount)), ...keys.flatMap((_key, index) => [String(limits[index]), String(Math.max(1, Math.ceil(ttlsMs[index]!)))])];
    const [admitted, ...totals] = (await this.health.run(this.scripted.tollgateReserve(keys.length, ...keys.map((key) => `${this.prefix}tok:${key}`), ...argv))).map(Number);
    return { admitted: admitted === 1, totals };
  }

  /** Settles a reservation: one script over the same counters (SETTLE_SCRIPT). */
  async settle(keys: readonly string[], delta: number, ttlsMs: readonly number[]): Promise<void> {
    if (keys.length === 0) return;
    const argv = [String(Math.round(delta)), ...ttlsMs.map((ttl) => String(Math.max(1, Math.ceil(ttl))))];
    await this.health.run(this.scripted.tollgateSettle(keys.length, ...keys.map((key) => `${this.prefix}tok:${key}`), ...argv));
  }

  async close(): Promise<void> {
    // Releases still gathered go out first; QUIT is answered after them on the same connection.
    this.flushReleases();
    this.onClose();
    this.health.stop();
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    // Leaves the fleet at once rather than after its lease.
    await this.redis.zrem(`${this.prefix}{fleet}:nodes`, this.nodeId).catch(() => undefined);
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

export class RedisChallengeStore implements ChallengeStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix = 'tollgate:challenge:',
    private readonly health: Pick<CommandHealth, 'run'> = UNWATCHED,
  ) {}

  async issue(appId: string, challenge: string, expiresAtMs: number): Promise<void> {
    await this.health.run(this.redis.set(this.prefix + challenge, appId, 'PX', Math.max(1, expiresAtMs - Date.now()), 'NX'));
  }

  async consume(appId: string, challenge: string): Promise<boolean> {
    const owner = await this.health.run(this.redis.getdel(this.prefix + challenge));
    return owner === appId;
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

export const tollgatePlugin: TollgatePlugin = {
  name: 'store-redis',
  contractVersion: 1,
  async register(host) {
    const url = host.settings.TOLLGATE_REDIS_URL;
    if (!url) return;
    const commandTimeoutMs = commandTimeoutOf(host.settings);
    const limits = connect(url, commandTimeoutMs);
    const challenges = connect(url, commandTimeoutMs);
    // One line per change of state (up, down), not one per failed command: the host logs it and exports the gauge.
    let up: boolean | undefined;
    let lastError = '';
    let closing = false;
    const report = (state: boolean) => {
      if (state === up || closing) return;
      up = state;
      host.reportDependencyState?.('redis', state, state ? undefined : lastError || 'connection closed');
    };
    for (const client of [limits, challenges]) {
      client.on('error', (error: Error) => {
        lastError = error.message;
      });
    }
    limits.on('ready', () => report(true));
    limits.on('close', () => report(false));
    limits.on('end', () => report(false));
    // Commands are not queued while disconnected (fail closed), so wait for the first connection before serving; if
    // Redis is down at boot the node starts anyway, reports not ready, and refuses limited requests until it is back.
    await Promise.all([limits, challenges].map((client) => waitForReady(client, 5000)));
    if (limits.status !== 'ready') report(false);
    // A command that times out says Redis is down even while its connection looks open (a frozen server).
    const health = new CommandHealth(
      commandTimeoutMs,
      limits instanceof Cluster,
      (state, cause) => {
        if (!state && cause) lastError = cause;
        report(state);
      },
      () => limits.ping(),
    );
    const store = new RedisRateLimitStore(limits, undefined, () => (closing = true), health);
    if (limits.status === 'ready') await store.startHeartbeat();
    else void store.startHeartbeat();
    host.replaceRateLimitStore(store);
    host.replaceChallengeStore(new RedisChallengeStore(challenges, undefined, health));
    host.registerReadinessCheck('redis', () => readiness(limits));
  },
};
