/**
 * Token budgets (issue 20): per device, per app and per provider, in tokens per fixed UTC day.
 *
 * - Checked before forwarding (from `limitRate`, after the request limits) against what is already spent: a request is
 *   refused only once a budget is used up, so the request that crosses it completes and the next is refused with
 *   `rateLimited`, reason `token_budget`, and `Retry-After` up to 00:00 UTC, when the day's counters start again.
 * - Charged when the answer ends, with the input + output tokens the usage tap read (usage unknown charges nothing).
 * - Counted in the rate-limit store (`spend`/`spent`), so every node of a fleet sharing Redis sees the same totals.
 *   Keys start with the app's `{…}` hash tag like the rate-limit keys and carry the UTC day, so they need no reset
 *   and expire on their own an hour after their day ends.
 * - Why a fixed UTC day rather than a rolling 24 hours: one counter per subject (a rolling window needs a bucket per
 *   hour or per request), a reset time an operator can state and a client can show ("until 00:00 UTC"), and it matches
 *   how providers bill (per UTC day). The cost: a device can spend a budget just before midnight and again just after.
 * - Only counted while a budget is set: tokens spent before a budget was set that day are not counted against it.
 */
import type { AppSettings, ProxyContext, RateLimitStore } from '../contract';
import { GatewayError } from '../contract';

const DAY_MS = 86_400_000;
/** Counters live an hour past their day (a slow node's late charge still lands), then expire. */
const KEEP_AFTER_DAY_MS = 3_600_000;

interface Budget {
  readonly policy: 'device' | 'app' | 'provider';
  readonly key: string;
  readonly limit: number;
}

const NO_BUDGETS: Budget[] = [];

/** The budgets that apply to one request, with the day's counter keys. */
export function budgetsFor(settings: AppSettings, appId: string, deviceId: string, provider: string, nowMs: number): Budget[] {
  // The common case, no budget at all, costs no date formatting on the hot path.
  if (!settings.deviceDailyTokens && !settings.appDailyTokens && !settings.providerDailyTokens?.[provider]) return NO_BUDGETS;
  const day = new Date(nowMs).toISOString().slice(0, 10).replace(/-/g, '');
  const budgets: Budget[] = [];
  if (settings.deviceDailyTokens) budgets.push({ policy: 'device', key: `{${appId}}\u0000tok\u0000d\u0000${deviceId}\u0000${day}`, limit: settings.deviceDailyTokens });
  if (settings.appDailyTokens) budgets.push({ policy: 'app', key: `{${appId}}\u0000tok\u0000a\u0000${day}`, limit: settings.appDailyTokens });
  const providerBudget = settings.providerDailyTokens?.[provider];
  if (providerBudget) budgets.push({ policy: 'provider', key: `{${appId}}\u0000tok\u0000p\u0000${provider}\u0000${day}`, limit: providerBudget });
  return budgets;
}

/** Seconds until the next 00:00 UTC (at least 1). */
export function secondsToUtcMidnight(nowMs: number): number {
  return Math.max(1, Math.ceil((Math.floor(nowMs / DAY_MS) * DAY_MS + DAY_MS - nowMs) / 1000));
}

/**
 * Refuses the request when a budget is used up; resolves (or returns) when none is. Store failures are thrown as they
 * are: the caller maps them to `rate_limit_store_unavailable` (fail closed, as the request limits).
 */
export function checkTokenBudgets(store: RateLimitStore, context: ProxyContext, nowMs: number): void | Promise<void> {
  const app = context.get('app');
  const budgets = budgetsFor(app.settings, app.id, context.get('device').deviceId, context.provider.slug, nowMs);
  if (budgets.length === 0) return;
  const decide = (spent: readonly number[]) => {
    const exhausted = budgets.filter((budget, index) => (spent[index] ?? 0) >= budget.limit);
    if (exhausted.length === 0) return;
    const retryAfterSeconds = secondsToUtcMidnight(nowMs);
    const policies = exhausted.map((budget) => budget.policy).join(' and ');
    throw new GatewayError('rateLimited', `Daily token budget used up (${policies}); it starts again at 00:00 UTC, in ${retryAfterSeconds} s.`, {
      retryAfterSeconds,
      reason: 'token_budget',
    });
  };
  const spent = store.spent(budgets.map((budget) => budget.key));
  if (spent instanceof Promise) return spent.then(decide);
  decide(spent);
}

/** Adds the tokens of a finished request to every budget of its app that applies (none set: nothing to count). */
export async function chargeTokenBudgets(store: RateLimitStore, context: ProxyContext, nowMs: number): Promise<void> {
  const app = context.peek('app');
  const device = context.peek('device');
  const usage = context.outcome.usage;
  if (!app || !device || !usage) return;
  const tokens = (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
  if (tokens <= 0) return;
  const budgets = budgetsFor(app.settings, app.id, device.deviceId, context.provider.slug, nowMs);
  const ttlMs = Math.floor(nowMs / DAY_MS) * DAY_MS + DAY_MS - nowMs + KEEP_AFTER_DAY_MS;
  await Promise.all(budgets.map((budget) => store.spend(budget.key, tokens, ttlMs)));
}
