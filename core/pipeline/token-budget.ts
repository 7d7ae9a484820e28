/**
 * Token budgets: per device, per app and per provider, in tokens per fixed UTC day and per fixed UTC minute.
 *
 * - Proxied requests are admitted by reservation (token-reservation.ts, from `limitRate`): an estimate is reserved when
 *   the request is admitted and settled to the reported usage, in the windows the request started in. Refusals are
 *   `rateLimited`, reason `token_budget`, with `Retry-After` to the end of the window that is full (00:00 UTC for a
 *   day, the next whole UTC minute for a minute; the later one when several are).
 * - This file keeps the after-the-fact path too: {@link checkTokenBudgets} (refused once a budget is used up) and
 *   {@link chargeTokenBudgets} / {@link chargeTokens} (add tokens already spent, to the window they are charged in),
 *   for usage that has no request to reserve for (e.g. a long-lived session's usage reports).
 * - Counted in the rate-limit store (`spend`/`spent`), so every node of a fleet sharing Redis sees the same totals.
 *   Keys start with the app's `{…}` hash tag like the rate-limit keys and carry their window (the UTC day, or the
 *   minute's number since the epoch), so they need no reset and expire on their own after their window ends.
 * - Why fixed UTC windows rather than rolling ones: one counter per subject and window (a rolling window needs a bucket
 *   per sub-window or per request, and a read of all of them before each request), a reset time an operator can state
 *   and a client can show, and it matches how providers bill (per UTC day) and rate-limit (per minute). The cost: a
 *   device can spend a budget at the end of one window and again at the start of the next (at most twice the budget
 *   over any window's length). docs/decisions/2026-11-24-token-usage.md.
 * - Only counted while a budget is set: tokens spent before a budget was set in that window are not counted against it.
 */
import type { AppSettings, ProxyContext, RateLimitStore } from '../contract';
import { GatewayError } from '../contract';
import { effectiveSettings } from '../users/profiles';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
/** Day counters live an hour past their day (a slow node's late charge still lands), then expire. */
const KEEP_AFTER_DAY_MS = 3_600_000;
/** Minute counters live a minute past theirs. */
const KEEP_AFTER_MINUTE_MS = 60_000;

export type BudgetPolicy = 'device' | 'app' | 'provider' | 'provider-device' | 'device-minute' | 'app-minute' | 'provider-minute' | 'user' | 'user-minute';

export interface Budget {
  readonly policy: BudgetPolicy;
  readonly key: string;
  readonly limit: number;
  /** The window's length: a UTC day or a UTC minute. */
  readonly windowMs: number;
}

const NO_BUDGETS: Budget[] = [];

/**
 * The budgets that apply to one request, with their window's counter keys. `userKey`: the signed-in end user's
 * (core/users), for the per-user budgets (`settings` are then the user's, profile applied).
 */
export function budgetsFor(settings: AppSettings, appId: string, deviceId: string, provider: string, nowMs: number, userKey?: string): Budget[] {
  const providerDay = settings.providerDailyTokens?.[provider];
  const providerDeviceDay = settings.providerDeviceDailyTokens?.[provider];
  const providerMinute = settings.providerMinuteTokens?.[provider];
  const userDay = userKey === undefined ? undefined : settings.userDailyTokens;
  const userMinute = userKey === undefined ? undefined : settings.userMinuteTokens;
  // The common case, no budget at all, costs a few property reads: no date formatting, no allocation.
  if (!settings.deviceDailyTokens && !settings.appDailyTokens && !providerDay && !providerDeviceDay && !settings.deviceMinuteTokens && !settings.appMinuteTokens && !providerMinute && !userDay && !userMinute) {
    return NO_BUDGETS;
  }
  const budgets: Budget[] = [];
  const tag = `{${appId}}\u0000tok\u0000`;
  if (settings.deviceDailyTokens || settings.appDailyTokens || providerDay || providerDeviceDay || userDay) {
    const day = new Date(nowMs).toISOString().slice(0, 10).replace(/-/g, '');
    if (settings.deviceDailyTokens) budgets.push({ policy: 'device', key: `${tag}d\u0000${deviceId}\u0000${day}`, limit: settings.deviceDailyTokens, windowMs: DAY_MS });
    if (settings.appDailyTokens) budgets.push({ policy: 'app', key: `${tag}a\u0000${day}`, limit: settings.appDailyTokens, windowMs: DAY_MS });
    if (providerDay) budgets.push({ policy: 'provider', key: `${tag}p\u0000${provider}\u0000${day}`, limit: providerDay, windowMs: DAY_MS });
    if (providerDeviceDay) budgets.push({ policy: 'provider-device', key: `${tag}pd\u0000${provider}\u0000${deviceId}\u0000${day}`, limit: providerDeviceDay, windowMs: DAY_MS });
    if (userDay) budgets.push({ policy: 'user', key: `${tag}u\u0000${userKey!}\u0000${day}`, limit: userDay, windowMs: DAY_MS });
  }
  if (settings.deviceMinuteTokens || settings.appMinuteTokens || providerMinute || userMinute) {
    // The minute's number since the epoch: cheaper than formatting a date, and as unique.
    const minute = Math.floor(nowMs / MINUTE_MS);
    if (settings.deviceMinuteTokens) budgets.push({ policy: 'device-minute', key: `${tag}dm\u0000${deviceId}\u0000${minute}`, limit: settings.deviceMinuteTokens, windowMs: MINUTE_MS });
    if (settings.appMinuteTokens) budgets.push({ policy: 'app-minute', key: `${tag}am\u0000${minute}`, limit: settings.appMinuteTokens, windowMs: MINUTE_MS });
    if (providerMinute) budgets.push({ policy: 'provider-minute', key: `${tag}pm\u0000${provider}\u0000${minute}`, limit: providerMinute, windowMs: MINUTE_MS });
    if (userMinute) budgets.push({ policy: 'user-minute', key: `${tag}um\u0000${userKey!}\u0000${minute}`, limit: userMinute, windowMs: MINUTE_MS });
  }
  return budgets;
}

/** Milliseconds until the end of the fixed UTC window of `windowMs` that holds `nowMs`. */
function msToWindowEnd(nowMs: number, windowMs: number): number {
  return Math.floor(nowMs / windowMs) * windowMs + windowMs - nowMs;
}

/** Seconds until the next 00:00 UTC (at least 1). */
export function secondsToUtcMidnight(nowMs: number): number {
  return Math.max(1, Math.ceil(msToWindowEnd(nowMs, DAY_MS) / 1000));
}

/** Seconds until the next whole UTC minute (at least 1). */
export function secondsToNextUtcMinute(nowMs: number): number {
  return Math.max(1, Math.ceil(msToWindowEnd(nowMs, MINUTE_MS) / 1000));
}

const POLICY_NAMES: Record<BudgetPolicy, string> = {
  device: 'device per day',
  app: 'app per day',
  provider: 'provider per day',
  'provider-device': 'device with this provider per day',
  'device-minute': 'device per minute',
  'app-minute': 'app per minute',
  'provider-minute': 'provider per minute',
  user: 'user per day',
  'user-minute': 'user per minute',
};

/** The name of a budget's policy in messages (`device per day`). */
export function budgetPolicyName(policy: BudgetPolicy): string {
  return POLICY_NAMES[policy];
}

/** When the counter of `budget` for the window holding `nowMs` expires (unix ms): its window's end plus a grace. */
export function budgetExpiresAt(budget: Budget, nowMs: number): number {
  return Math.floor(nowMs / budget.windowMs) * budget.windowMs + budget.windowMs + (budget.windowMs === DAY_MS ? KEEP_AFTER_DAY_MS : KEEP_AFTER_MINUTE_MS);
}

/** Told when a charge carried a budget past 80 % or 100 % of its limit (once per budget and window: the charge that crossed it). */
export type ThresholdListener = (budget: Budget, percent: 80 | 100, total: number) => void;

/** Tells `listener` the highest mark (100 %, else 80 %) that the charge of `charged` tokens, ending at `total`, crossed. */
export function tellThreshold(budget: Budget, total: number, charged: number, listener: ThresholdListener): void {
  for (const percent of [100, 80] as const) {
    const mark = (budget.limit * percent) / 100;
    if (total - charged < mark && total >= mark) return listener(budget, percent, total);
  }
}

/**
 * Refuses the request when a budget is used up; resolves (or returns) when none is. Store failures are thrown as they
 * are: the caller maps them to `rate_limit_store_unavailable` (fail closed, as the request limits).
 */
export function checkTokenBudgets(store: RateLimitStore, context: ProxyContext, nowMs: number): void | Promise<void> {
  const app = context.get('app');
  const budgets = budgetsFor(effectiveSettings(context), app.id, context.get('device').deviceId, context.provider.slug, nowMs, context.peek('user')?.key);
  if (budgets.length === 0) return;
  const decide = (spent: readonly number[]) => {
    const exhausted = budgets.filter((budget, index) => (spent[index] ?? 0) >= budget.limit);
    if (exhausted.length === 0) return;
    // The request may go again once every used-up window has ended: the latest end.
    const windowMs = Math.max(...exhausted.map((budget) => budget.windowMs));
    const retryAfterSeconds = windowMs === DAY_MS ? secondsToUtcMidnight(nowMs) : secondsToNextUtcMinute(nowMs);
    const policies = exhausted.map((budget) => POLICY_NAMES[budget.policy]).join(' and ');
    const resets = windowMs === DAY_MS ? 'at 00:00 UTC' : 'at the next UTC minute';
    throw new GatewayError('rateLimited', `Token budget used up (${policies}); it starts again ${resets}, in ${retryAfterSeconds} s.`, {
      retryAfterSeconds,
      reason: 'token_budget',
    });
  };
  const spent = store.spent(budgets.map((budget) => budget.key));
  if (spent instanceof Promise) return spent.then(decide);
  decide(spent);
}

/**
 * Adds `tokens` already spent by `deviceId` with `provider` to every budget of the app that applies, in the windows
 * that hold `nowMs` (the after-the-fact charge). Undefined (no promise) when no budget applies or tokens <= 0.
 */
export function chargeTokens(store: RateLimitStore, settings: AppSettings, appId: string, deviceId: string, provider: string, tokens: number, nowMs: number): Promise<void> | undefined {
  if (!(tokens > 0)) return undefined;
  const budgets = budgetsFor(settings, appId, deviceId, provider, nowMs);
  if (budgets.length === 0) return undefined;
  try {
    return Promise.all(budgets.map((budget) => store.spend(budget.key, tokens, budgetExpiresAt(budget, nowMs) - nowMs))).then(() => undefined);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Adds the tokens of a finished request to every budget of its app that applies. None set (or no tokens): returns
 * undefined at once, without a promise, since this runs after every answer whose usage was read.
 */
export function chargeTokenBudgets(
  store: RateLimitStore,
  context: ProxyContext,
  nowMs: number,
  onThreshold?: ThresholdListener,
): Promise<void> | undefined {
  const app = context.peek('app');
  const device = context.peek('device');
  const usage = context.outcome.usage;
  if (!app || !device || !usage) return undefined;
  const tokens = (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
  if (tokens <= 0) return undefined;
  const budgets = budgetsFor(effectiveSettings(context), app.id, device.deviceId, context.provider.slug, nowMs, context.peek('user')?.key);
  if (budgets.length === 0) return undefined;
  try {
    return Promise.all(
      budgets.map(async (budget) => {
        const total = await store.spend(budget.key, tokens, budgetExpiresAt(budget, nowMs) - nowMs);
        if (onThreshold) tellThreshold(budget, total, tokens, onThreshold);
      }),
    ).then(() => undefined);
  } catch (error) {
    return Promise.reject(error);
  }
}
