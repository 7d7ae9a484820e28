import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { inject, injectable } from 'tsyringe';
import {
  CLOCK,
  CONFIGURATION,
  GatewayError,
  RATE_LIMIT_STORE,
  type AppIdentity,
  type LimitOutcome,
  type PipelineStage,
  type ProxyContext,
  type RateLimitRule,
  type RateLimitRuleResult,
  type RateLimitStore,
  type SlotRequest,
} from '../contract';
import type { Configuration } from '../configuration/configuration';
import { reserveTokenBudgets } from './token-reservation';
import { effectiveSettings } from '../users/profiles';
import { InFlightList, type InFlightMember } from './in-flight-list';

/**
 * Writes the rate-limit headers of the IETF httpapi draft "RateLimit header fields for HTTP"
 * (draft-ietf-httpapi-ratelimit-headers, structured-field form): one list item per policy.
 *
 *   RateLimit-Policy: "device";q=60;w=60, "app";q=600;w=60
 *   RateLimit: "device";r=59;t=1, "app";r=599;t=1
 */
export function writeRateLimitHeaders(response: ServerResponse, outcomes: readonly LimitOutcome[]): void {
  const [policy, current] = rateLimitHeaderValues(outcomes);
  response.setHeader('RateLimit-Policy', policy);
  response.setHeader('RateLimit', current);
}

/** The values of `RateLimit-Policy` and `RateLimit` for these outcomes. */
export function rateLimitHeaderValues(outcomes: readonly LimitOutcome[]): [policy: string, current: string] {
  let policy = '';
  let current = '';
  for (const o of outcomes) {
    const separator = policy === '' ? '' : ', ';
    policy += `${separator}"${o.policy}";q=${o.limit};w=${o.windowSeconds}`;
    current += `${separator}"${o.policy}";r=${o.remaining};t=${o.resetSeconds}`;
  }
  return [policy, current];
}

/** A rate-limit store that cannot answer refuses the request (fail closed) rather than letting it through unlimited. */
export function storeUnavailable(cause: unknown): GatewayError {
  return new GatewayError('serviceUnavailable', 'Rate limits cannot be checked right now; the request was refused. Retry shortly.', {
    status: 503,
    retryAfterSeconds: 1,
    reason: 'rate_limit_store_unavailable',
    cause,
  });
}

function toOutcome(result: RateLimitRuleResult): LimitOutcome {
  return {
    policy: result.rule.policy,
    limit: result.rule.limit,
    windowSeconds: result.rule.windowSeconds,
    remaining: result.remaining,
    resetSeconds: result.resetSeconds,
  };
}

/**
 * Stage 3, `limitRate`: per-device and per-app requests per minute (the app's settings, default 60 and 600). Provides
 * `limit`; refuses with `rateLimited` and `Retry-After`.
 */
@injectable()
export class LimitRateStage implements PipelineStage {
  readonly name = 'limitRate' as const;

  constructor(
    @inject(RATE_LIMIT_STORE) private readonly store: RateLimitStore,
    @inject(CLOCK) private readonly clock: () => number,
    @inject(CONFIGURATION) private readonly configuration: Configuration,
  ) {}

  /** App entry → provider → device id → its rules and slot key (see subjectOf). */
  private readonly subjects = new WeakMap<AppIdentity, Map<string, Map<string, LimitSubject>>>();

  run(context: ProxyContext): void | Promise<void> {
    const subject = this.subjectOf(context);
    // A store one round trip away takes the stream slot in the same call as the rate limits (one round trip, not two).
    if (this.store.consumeAndAcquire) {
      const slot = this.slotRequest(subject);
      return this.store.consumeAndAcquire(subject.rules, this.clock(), slot).then(
        ({ results, acquired }) => (acquired === undefined ? this.decide(context, subject, results) : this.decide(context, subject, results, slot, acquired)),
        (error: unknown) => Promise.reject(storeUnavailable(error)),
      );
    }
    let results: RateLimitRuleResult[] | Promise<RateLimitRuleResult[]>;
    try {
      results = this.store.consume(subject.rules, this.clock());
    } catch (error) {
      throw storeUnavailable(error);
    }
    if (results instanceof Promise) return results.then((settled) => this.decide(context, subject, settled), (error: unknown) => Promise.reject(storeUnavailable(error)));
    return this.decide(context, subject, results);
  }

  /**
   * The rules and slot key of this request's app, provider and device. They change only with the app's settings, and an
   * app entry is replaced, never changed, when its settings change (the directory's read model): so they are built once
   * per entry, provider and device and kept, weakly by entry, at most {@link SUBJECTS_PER_PROVIDER} devices each.
   */
  private subjectOf(context: ProxyContext): LimitSubject {
    const app = context.get('app');
    const user = context.peek('user');
    // A signed-in user's requests are keyed by device and user (and the profile that picked the user's limits).
    const deviceId = user ? `${context.get('device').deviceId}\u0000${user.key}\u0000${user.profile ?? ''}` : context.get('device').deviceId;
    const provider = context.provider.slug;
    let byProvider = this.subjects.get(app);
    if (!byProvider) {
      byProvider = new Map();
      this.subjects.set(app, byProvider);
    }
    let byDevice = byProvider.get(provider);
    if (!byDevice) {
      byDevice = new Map();
      byProvider.set(provider, byDevice);
    }
    let subject = byDevice.get(deviceId);
    if (!subject) {
      if (byDevice.size >= SUBJECTS_PER_PROVIDER) byDevice.clear();
      subject = limitSubject(app, provider, context.get('device').deviceId, effectiveSettings(context), user?.key);
      byDevice.set(deviceId, subject);
    }
    return subject;
  }

  /**
   * `tried`: the slot the store already tried in the same call (consumeAndAcquire), and whether it was `acquired`;
   * absent: take one after the checks.
   */
  private decide(context: ProxyContext, subject: LimitSubject, results: readonly RateLimitRuleResult[], tried?: SlotRequest, acquired = false): void | Promise<void> {
    const outcomes: LimitOutcome[] = [];
    let allowed = true;
    for (const result of results) {
      outcomes.push(toOutcome(result));
      if (!result.allowed) allowed = false;
    }
    // The headers go out with the response head: written here on a refusal, by `forward` (or the error path) otherwise.
    if (!allowed) {
      const refused = results.filter((result) => !result.allowed);
      writeRateLimitHeaders(context.response, outcomes);
      const retryAfterSeconds = Math.max(...refused.map((result) => result.retryAfterSeconds));
      const policies = refused.map((result) => result.rule.policy).join(' and ');
      throw new GatewayError('rateLimited', `Rate limit exceeded (${policies}); retry after ${retryAfterSeconds} s.`, {
        retryAfterSeconds,
        reason: `rate_limited_${refused[0]!.rule.policy.replace(/-/g, '_')}`,
      });
    }
    context.set('limit', { outcomes });
    // Token budgets (token-reservation.ts): the request's estimate is reserved, or it is refused.
    let budgets: void | Promise<void>;
    try {
      budgets = reserveTokenBudgets(this.store, context, this.clock(), this.configuration.maxBodyBytes);
    } catch (error) {
      return this.refuseAfterLimits(error, tried, acquired);
    }
    if (budgets instanceof Promise) {
      return budgets.then(
        () => this.afterBudgets(context, subject, tried, acquired),
        (error: unknown) => this.refuseAfterLimits(error, tried, acquired),
      );
    }
    return this.afterBudgets(context, subject, tried, acquired);
  }

  /** The stream slot: already tried together with the limits (`tried`), or taken now. */
  private afterBudgets(context: ProxyContext, subject: LimitSubject, tried: SlotRequest | undefined, acquired: boolean): void | Promise<void> {
    return tried ? this.admitSlot(context, tried, acquired) : this.takeStreamSlot(context, subject);
  }

  /** A refusal after the limits admitted the request: a slot taken together with the limits is given back. */
  private refuseAfterLimits(error: unknown, tried: SlotRequest | undefined, acquired: boolean): never {
    if (tried && acquired) this.giveBack(tried.key, tried.holder);
    throw error instanceof GatewayError ? error : storeUnavailable(error);
  }

  /** Gives a slot back; a store that cannot answer lets the lease run out instead. */
  private giveBack(key: string, holder: string): void {
    try {
      const released = this.store.releaseSlot(key, holder);
      if (released instanceof Promise) released.catch(() => undefined);
    } catch {
      // the lease runs out
    }
  }

  /**
   * A cap on open responses per device (streams can run for minutes). Each request holds its slot under a lease of
   * `TOLLGATE_STREAM_LEASE_MS`, renewed every third of it while the response is open and given back when it closes,
   * however it ends; a crashed node stops renewing, so its slots free themselves within one lease
   * (docs/decisions/2026-11-24-stream-slot-leases.md). Keys carry the app's hash tag like the rate-limit keys. One timer
   * renews every slot this node holds (not one timer per request).
   */
  private takeStreamSlot(context: ProxyContext, subject: LimitSubject): void | Promise<void> {
    const slot = this.slotRequest(subject);
    let acquired: boolean | Promise<boolean>;
    try {
      acquired = this.store.acquireSlot(slot.key, slot.limit, slot.leaseMs, slot.holder);
    } catch (error) {
      throw storeUnavailable(error);
    }
    if (acquired instanceof Promise) {
      return acquired.then((taken) => this.admitSlot(context, slot, taken), (error: unknown) => Promise.reject(storeUnavailable(error)));
    }
    this.admitSlot(context, slot, acquired);
  }

  /** The open-requests slot this request asks for: its device's set (with the app's hash tag), a fresh holder id. */
  private slotRequest(subject: LimitSubject): SlotRequest {
    return { key: subject.slotKey, limit: subject.slotLimit, leaseMs: this.configuration.streamLeaseMs, holder: nextHolder() };
  }

  /** Refuses the request when no slot was free; otherwise holds the slot until the response closes. */
  private admitSlot(context: ProxyContext, request: SlotRequest, acquired: boolean): void {
    if (!acquired) {
      throw new GatewayError('rateLimited', `Too many open requests from this device (at most ${request.limit} at once).`, { retryAfterSeconds: 1, reason: 'rate_limited_concurrent' });
    }
    const slot: HeldSlot = { key: request.key, holder: request.holder, response: context.response, released: false, inFlightIndex: -1 };
    this.held.add(slot);
    this.startRenewals(request.leaseMs);
    // `close` comes once: a plain listener, without `once`'s wrapper.
    slot.response.on('close', () => this.release(slot));
    // The client may have gone while the slot was being taken: its 'close' has fired already.
    if (slot.response.destroyed) this.release(slot);
  }

  /** Slots this node holds for open responses (an {@link InFlightList}, not a Set: see there why). */
  private readonly held = new InFlightList<HeldSlot>();
  private renewals: NodeJS.Timeout | undefined;

  private release(slot: HeldSlot): void {
    if (slot.released) return;
    slot.released = true;
    this.held.delete(slot);
    this.giveBack(slot.key, slot.holder);
  }

  /**
   * Renews every held lease each third of the lease. A failed renewal is retried at the next tick (the lease outlives
   * two missed renewals); a response already gone (its 'close' missed) is never renewed: its slot is given back.
   */
  private startRenewals(leaseMs: number): void {
    if (this.renewals) return;
    this.renewals = setInterval(() => {
      this.held.forEach((slot) => {
        if (slot.response.destroyed || slot.response.writableFinished) this.release(slot);
        else Promise.resolve(this.store.renewSlot(slot.key, slot.holder, leaseMs)).catch(() => undefined);
      });
      if (this.held.size === 0) {
        clearInterval(this.renewals);
        this.renewals = undefined;
      }
    }, Math.max(100, Math.floor(leaseMs / 3)));
    this.renewals.unref();
  }
}

/**
 * Slot holder ids: unique across nodes (a random prefix per process) and requests (a counter), without a UUID per
 * request.
 */
const HOLDER_PREFIX = randomBytes(9).toString('base64url');
let holderCount = 0;
function nextHolder(): string {
  holderCount += 1;
  return `${HOLDER_PREFIX}.${holderCount.toString(36)}`;
}

/** Devices whose rules are kept per app entry and provider; past it, that provider's are built again as they come. */
const SUBJECTS_PER_PROVIDER = 10_000;

/** What limits one app's requests from one device to one provider: its rules, in header order, and its slot set. */
export interface LimitSubject {
  readonly rules: readonly RateLimitRule[];
  readonly slotKey: string;
  readonly slotLimit: number;
}

/**
 * Every key starts with the app's hash tag (`{app id}`), so that one store call may touch them all (Redis Cluster).
 * `settings`: the app's, or the signed-in user's (profile applied); `userKey`: the user's, for the per-user limits.
 */
export function limitSubject(app: Pick<AppIdentity, 'id' | 'settings'>, provider: string, deviceId: string, settings: AppIdentity['settings'] = app.settings, userKey?: string): LimitSubject {
  const tag = `{${app.id}}`;
  const rules: RateLimitRule[] = [
    { policy: 'device', key: `${tag}\u0000d\u0000${deviceId}`, limit: settings.deviceLimitPerMinute, windowSeconds: 60 },
    { policy: 'app', key: `${tag}\u0000a`, limit: settings.appLimitPerMinute, windowSeconds: 60 },
  ];
  const providerLimit = settings.providerLimitsPerMinute?.[provider];
  if (providerLimit) rules.push({ policy: 'provider', key: `${tag}\u0000p\u0000${provider}`, limit: providerLimit, windowSeconds: 60 });
  if (settings.deviceDailyQuota) rules.push({ policy: 'device-day', key: `${tag}\u0000dd\u0000${deviceId}`, limit: settings.deviceDailyQuota, windowSeconds: 86_400 });
  if (settings.appDailyQuota) rules.push({ policy: 'app-day', key: `${tag}\u0000ad`, limit: settings.appDailyQuota, windowSeconds: 86_400 });
  // Per end user, across the user's devices (core/users).
  if (userKey !== undefined && settings.userLimitPerMinute) rules.push({ policy: 'user', key: `${tag}\u0000u\u0000${userKey}`, limit: settings.userLimitPerMinute, windowSeconds: 60 });
  if (userKey !== undefined && settings.userDailyQuota) rules.push({ policy: 'user-day', key: `${tag}\u0000ud\u0000${userKey}`, limit: settings.userDailyQuota, windowSeconds: 86_400 });
  return { rules, slotKey: `${tag}\u0000s\u0000${deviceId}`, slotLimit: settings.maxConcurrentStreamsPerDevice };
}

/** A concurrency slot held by one open response. */
interface HeldSlot extends InFlightMember {
  readonly key: string;
  readonly holder: string;
  readonly response: ServerResponse;
  released: boolean;
}
