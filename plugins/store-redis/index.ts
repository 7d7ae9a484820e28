/**
 * Shared state for several gateway nodes in Redis (`TOLLGATE_REDIS_URL`): rate limits and attestation challenges.
 * Without `TOLLGATE_REDIS_URL` this plugin registers nothing and the in-process defaults stay.
 *
 * - Rate limits: GCRA, one Lua script over every rule of a request, all-or-nothing, with Redis's own clock (`TIME`) so
 *   that nodes with skewed clocks agree. Scripts run atomically, so N requests fired at N nodes at once admit exactly
 *   the limit.
 * - Challenges: `SET key app PX ttl NX` to issue, `GETDEL` to consume, so a challenge is used once across the fleet.
 * - Fail closed: commands are not queued while Redis is unreachable (`enableOfflineQueue: false`); a rate-limit or
 *   challenge call then throws, and the gateway refuses the request rather than letting it through unlimited.
 *
 * Device revocations and app changes are shared through the database's change feed (every node polls it), so they need
 * no Redis of their own.
 */
import Redis from 'ioredis';
import type { ChallengeStore, RateLimitRule, RateLimitRuleResult, RateLimitStore, TollgatePlugin } from '../../core/contract';

/**
 * KEYS: one per rule. ARGV: per rule, interval (ms) and window (ms).
 * Returns, per rule: allowed (1/0), remaining, reset (ms), retry-after (ms).
 */
const GCRA_SCRIPT = `
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local results = {}
local next_tats = {}
local all_allowed = true
for index, key in ipairs(KEYS) do
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
if all_allowed then
  for index, key in ipairs(KEYS) do
    redis.call('SET', key, next_tats[index], 'PX', math.ceil(next_tats[index] - now) + 1000)
  end
end
local flat = {}
for _, result in ipairs(results) do
  for _, value in ipairs(result) do table.insert(flat, value) end
end
return flat
`;

function waitForReady(client: Redis, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function connect(url: string): Redis {
  return new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: false });
}

export class RedisRateLimitStore implements RateLimitStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'tollgate:rl:',
  ) {
    redis.defineCommand('tollgateGcra', { lua: GCRA_SCRIPT });
  }

  async consume(rules: readonly RateLimitRule[]): Promise<RateLimitRuleResult[]> {
    const keys = rules.map((rule) => this.prefix + rule.key);
    const argv = rules.flatMap((rule) => [String((rule.windowSeconds * 1000) / rule.limit), String(rule.windowSeconds * 1000)]);
    const flat = (await (this.redis as unknown as { tollgateGcra(count: number, ...args: string[]): Promise<number[]> }).tollgateGcra(keys.length, ...keys, ...argv)).map(Number);
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

  /** INCR, then give it back if over the limit; the key expires so a crashed node's slots free themselves. */
  async acquireSlot(key: string, limit: number, ttlMs: number): Promise<boolean> {
    const slotKey = `${this.prefix}slot:${key}`;
    const [[, used]] = (await this.redis.multi().incr(slotKey).pexpire(slotKey, ttlMs).exec()) as [[unknown, number], unknown];
    if (used <= limit) return true;
    await this.redis.decr(slotKey);
    return false;
  }

  async releaseSlot(key: string): Promise<void> {
    await this.redis.decr(`${this.prefix}slot:${key}`);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

export class RedisChallengeStore implements ChallengeStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'tollgate:challenge:',
  ) {}

  async issue(appId: string, challenge: string, expiresAtMs: number): Promise<void> {
    await this.redis.set(this.prefix + challenge, appId, 'PX', Math.max(1, expiresAtMs - Date.now()), 'NX');
  }

  async consume(appId: string, challenge: string): Promise<boolean> {
    const owner = await this.redis.getdel(this.prefix + challenge);
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
    const limits = connect(url);
    const challenges = connect(url);
    for (const client of [limits, challenges]) client.on('error', () => undefined); // surfaced by readiness and by failed calls
    // Commands are not queued while disconnected (fail closed), so wait for the first connection before serving; if
    // Redis is down at boot the node starts anyway, reports not ready, and refuses limited requests until it is back.
    await Promise.all([limits, challenges].map((client) => waitForReady(client, 5000)));
    host.replaceRateLimitStore(new RedisRateLimitStore(limits));
    host.replaceChallengeStore(new RedisChallengeStore(challenges));
    host.registerReadinessCheck('redis', async () => {
      if ((await limits.ping()) !== 'PONG') throw new Error('redis did not answer PONG');
    });
  },
};
