/**
 * The realtime sessions' one coupling to the token budgets (core/pipeline/token-budget.ts), kept in this file so that
 * a change of how budgets are counted (reservations) touches one small adapter: a session charges each usage frame's
 * tokens as it arrives and then asks whether a budget is used up, through the same store keys as HTTP answers.
 *
 * Session seconds are counted here too, in the same store (`spend`/`spent`), per device, per app and per signed-in user
 * per UTC day (`deviceDailySessionSeconds`, `appDailySessionSeconds`, `userDailySessionSeconds`, the user's profile
 * applied), under their own keys beside the token keys.
 */
import { GatewayError, type AppSettings, type ProxyContext, type RateLimitStore, type TokenUsage } from '../contract';
import { chargeTokenBudgets, checkTokenBudgets, secondsToUtcMidnight } from '../pipeline/token-budget';
import { effectiveSettings } from '../users/profiles';

const DAY_MS = 86_400_000;
/** Day counters live an hour past their day (as the token counters), then expire. */
const KEEP_AFTER_DAY_MS = 3_600_000;

/** Adds one frame's tokens to every token budget of the session's app that applies. */
export function chargeSessionTokens(store: RateLimitStore, context: ProxyContext, usage: TokenUsage, nowMs: number): Promise<void> | undefined {
  // chargeTokenBudgets reads the answer's usage from the outcome: one frame's usage is put there for the call.
  const previous = context.outcome.usage;
  context.outcome.usage = usage;
  try {
    return chargeTokenBudgets(store, context, nowMs);
  } finally {
    context.outcome.usage = previous;
  }
}

/** Throws `rateLimited` `token_budget` when a token budget of the session is used up. */
export function checkSessionTokens(store: RateLimitStore, context: ProxyContext, nowMs: number): void | Promise<void> {
  return checkTokenBudgets(store, context, nowMs);
}

interface SecondsBudget {
  readonly key: string;
  readonly limit: number;
  readonly name: string;
  readonly scope: 'device' | 'app' | 'user';
}

function secondsBudgets(context: ProxyContext, nowMs: number): SecondsBudget[] {
  return secondsBudgetsFor(effectiveSettings(context), context.get('app').id, context.get('device').deviceId, context.peek('user')?.key, nowMs);
}

/** The session-seconds budgets of an app's settings for a device and a user (without a device: the app's and the user's). */
function secondsBudgetsFor(settings: AppSettings, appId: string, deviceId: string | undefined, userKey: string | undefined, nowMs: number): SecondsBudget[] {
  const userDay = userKey === undefined ? undefined : settings.userDailySessionSeconds;
  const deviceDay = deviceId === undefined ? undefined : settings.deviceDailySessionSeconds;
  if (!deviceDay && !settings.appDailySessionSeconds && !userDay) return [];
  const day = new Date(nowMs).toISOString().slice(0, 10).replace(/-/g, '');
  const tag = `{${appId}}\u0000rts\u0000`;
  const budgets: SecondsBudget[] = [];
  if (deviceDay) budgets.push({ key: `${tag}d\u0000${deviceId!}\u0000${day}`, limit: deviceDay, name: 'device per day', scope: 'device' });
  if (settings.appDailySessionSeconds) budgets.push({ key: `${tag}a\u0000${day}`, limit: settings.appDailySessionSeconds, name: 'app per day', scope: 'app' });
  if (userDay) budgets.push({ key: `${tag}u\u0000${userKey!}\u0000${day}`, limit: userDay, name: 'user per day', scope: 'user' });
  return budgets;
}

function exhausted(budgets: readonly SecondsBudget[], spent: readonly number[], nowMs: number): void {
  const used = budgets.filter((budget, index) => (spent[index] ?? 0) >= budget.limit);
  if (used.length === 0) return;
  const retryAfterSeconds = secondsToUtcMidnight(nowMs);
  throw new GatewayError('rateLimited', `Realtime session seconds used up (${used.map((budget) => budget.name).join(' and ')}); they start again at 00:00 UTC, in ${retryAfterSeconds} s.`, {
    retryAfterSeconds,
    reason: 'session_seconds_budget',
  });
}

/** Throws `rateLimited` `session_seconds_budget` when the device's or the app's session seconds are used up today. */
export async function checkSessionSeconds(store: RateLimitStore, context: ProxyContext, nowMs: number): Promise<void> {
  const budgets = secondsBudgets(context, nowMs);
  if (budgets.length === 0) return;
  exhausted(budgets, await store.spent(budgets.map((budget) => budget.key)), nowMs);
}

/** Adds `seconds` to the session-seconds budgets, then throws as {@link checkSessionSeconds} when one is used up. */
export async function chargeSessionSeconds(store: RateLimitStore, context: ProxyContext, seconds: number, nowMs: number): Promise<void> {
  const budgets = secondsBudgets(context, nowMs);
  if (budgets.length === 0 || seconds <= 0) return;
  const ttlMs = Math.floor(nowMs / DAY_MS) * DAY_MS + DAY_MS - nowMs + KEEP_AFTER_DAY_MS;
  const totals = await Promise.all(budgets.map((budget) => store.spend(budget.key, seconds, ttlMs)));
  exhausted(budgets, totals, nowMs);
}

/**
 * The session-seconds budgets of settings (a user's profile applied) for a device (none: the app's and the user's
 * only) and a user key, with what is left of each today (`GET /v1/me`, a user's limits); charges nothing.
 */
export async function sessionSecondsLeftFor(store: RateLimitStore, settings: AppSettings, appId: string, deviceId: string | undefined, userKey: string | undefined, nowMs: number): Promise<Array<{ scope: SecondsBudget['scope']; limit: number; remaining: number; resetsAtMs: number }>> {
  const budgets = secondsBudgetsFor(settings, appId, deviceId, userKey, nowMs);
  if (budgets.length === 0) return [];
  const spent = await store.spent(budgets.map((budget) => budget.key));
  const resetsAtMs = Math.floor(nowMs / DAY_MS) * DAY_MS + DAY_MS;
  return budgets.map((budget, index) => ({ scope: budget.scope, limit: budget.limit, remaining: Math.max(0, budget.limit - (spent[index] ?? 0)), resetsAtMs }));
}
