/**
 * `GET /v1/me` (protocol.md): what the calling device and its signed-in user may still spend. The same headers as a
 * proxied request and the same checks (the pipeline's stages up to `verifyUser`), then every request limit and token
 * budget that applies, read from the very counters the limits charge (the rate-limit store's `peek` and `spent`), so
 * the amounts are the ones the next requests meet, and the realtime session seconds left today. It charges nothing. Provider-wide limits are not listed (they are
 * the whole app's, per provider, and say nothing about this device).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ProxyContext, type AppSettings, type LimitOutcome, type PipelineStage, type ProviderManifest, type RateLimitRuleResult, type RateLimitStore } from '../contract';
import { limitSubject } from '../pipeline/limit-rate';
import { budgetsFor, type Budget } from '../pipeline/token-budget';
import { storeUnavailable } from '../pipeline/limit-rate';
import { effectiveSettings } from '../users/profiles';
import { sessionSecondsLeftFor } from '../realtime/budget-adapter';

/** One entry of the answer's `limits`. */
export interface MeLimit {
  readonly name: string;
  readonly scope: 'device' | 'user' | 'app';
  readonly unit: 'requests' | 'tokens' | 'seconds';
  readonly limit: number;
  readonly remaining: number;
  /** `minute` or `day`: requests per rolling window, tokens per fixed UTC window. */
  readonly window: 'minute' | 'day';
  /** When the amount is whole again (requests) or the window ends (tokens), ISO 8601. */
  readonly resetsAt: string;
}

export interface MeAnswer {
  readonly device: { readonly id: string; readonly method: string };
  readonly user: { readonly id: string; readonly issuer: string; readonly profile: string | null } | null;
  readonly limits: MeLimit[];
}

/** The context of a `/v1/me` call: no provider (the checks that run before the limits name none). */
const NO_PROVIDER = Object.freeze({ slug: '' }) as unknown as ProviderManifest;

const SCOPES: Record<string, MeLimit['scope']> = { device: 'device', 'device-day': 'device', app: 'app', 'app-day': 'app', user: 'user', 'user-day': 'user' };
const BUDGET_SCOPES: Partial<Record<Budget['policy'], MeLimit['scope']>> = { device: 'device', 'device-minute': 'device', app: 'app', 'app-minute': 'app', user: 'user', 'user-minute': 'user' };

/** Runs the checking stages (those before `limitRate`) on a context for this request; returns it once they passed. */
export async function checkCaller(stages: readonly PipelineStage[], request: IncomingMessage, response: ServerResponse, requestId: string, now: number): Promise<ProxyContext> {
  const context = new ProxyContext(requestId, request, response, { slug: '', version: '', providerPath: '', query: '' }, NO_PROVIDER, now);
  for (const stage of stages) {
    if (stage.name === 'limitRate') break;
    await stage.run(context);
  }
  return context;
}

/** The answer of `/v1/me` for a checked context. */
export async function describeLimits(context: ProxyContext, store: RateLimitStore, now: number): Promise<MeAnswer> {
  const app = context.get('app');
  const device = context.get('device');
  const user = context.peek('user') ?? null;
  const limits = await limitsOf(store, { appId: app.id, settings: effectiveSettings(context), deviceId: device.deviceId, userKey: user?.key }, now);
  return {
    device: { id: device.deviceId, method: device.method },
    user: user ? { id: user.subject, issuer: user.issuer, profile: user.profile ?? null } : null,
    limits,
  };
}

/** Whose limits {@link limitsOf} reads: an app's settings (a user's profile applied), a device and a user. */
export interface LimitsTarget {
  readonly appId: string;
  readonly settings: AppSettings;
  /** Absent: the limits of no one device (a user's page lists the user's and the app's, which hold on every device). */
  readonly deviceId?: string | undefined;
  /** The user's counter key (`userCounterKey`); absent: no user limits. */
  readonly userKey?: string | undefined;
}

/**
 * Every request limit, token budget and session-seconds budget that applies to a target, with what remains, read from
 * the counters the limits charge; charges nothing. `GET /v1/me` (a device and its user) and the management API's
 * user page (a user, no device) both answer with it.
 */
export async function limitsOf(store: RateLimitStore, target: LimitsTarget, now: number): Promise<MeLimit[]> {
  const { appId, settings, deviceId, userKey } = target;
  const scoped = (scope: MeLimit['scope'] | undefined) => scope !== undefined && (deviceId !== undefined || scope !== 'device');
  const limits: MeLimit[] = [];
  try {
    const { rules } = limitSubject({ id: appId, settings }, '', deviceId ?? '', settings, userKey);
    const applying = rules.filter((rule) => scoped(SCOPES[rule.policy] ?? 'app'));
    const results: RateLimitRuleResult[] = store.peek
      ? await store.peek(applying, now)
      : applying.map((rule) => ({ rule, allowed: true, remaining: rule.limit, resetSeconds: 0, retryAfterSeconds: 0 }));
    for (const result of results) {
      const outcome: LimitOutcome = { policy: result.rule.policy, limit: result.rule.limit, windowSeconds: result.rule.windowSeconds, remaining: result.remaining, resetSeconds: result.resetSeconds };
      limits.push({
        name: `${outcome.policy.replace(/-day$/, '')}-requests-${outcome.windowSeconds === 60 ? 'minute' : 'day'}`,
        scope: SCOPES[outcome.policy] ?? 'app',
        unit: 'requests',
        limit: outcome.limit,
        remaining: outcome.remaining,
        window: outcome.windowSeconds === 60 ? 'minute' : 'day',
        resetsAt: new Date(now + outcome.resetSeconds * 1000).toISOString(),
      });
    }
    const budgets = budgetsFor(settings, appId, deviceId ?? '', '', now, userKey).filter((budget) => scoped(BUDGET_SCOPES[budget.policy]));
    if (budgets.length) {
      const spent = await store.spent(budgets.map((budget) => budget.key));
      budgets.forEach((budget, index) => {
        const day = budget.windowMs === 86_400_000;
        limits.push({
          name: `${BUDGET_SCOPES[budget.policy]}-tokens-${day ? 'day' : 'minute'}`,
          scope: BUDGET_SCOPES[budget.policy]!,
          unit: 'tokens',
          limit: budget.limit,
          remaining: Math.max(0, budget.limit - (spent[index] ?? 0)),
          window: day ? 'day' : 'minute',
          resetsAt: new Date(Math.floor(now / budget.windowMs) * budget.windowMs + budget.windowMs).toISOString(),
        });
      });
    }
    // Realtime session seconds per UTC day (deviceDailySessionSeconds, appDailySessionSeconds, userDailySessionSeconds).
    for (const seconds of await sessionSecondsLeftFor(store, settings, appId, deviceId, userKey, now)) {
      limits.push({ name: `${seconds.scope}-session-seconds-day`, scope: seconds.scope, unit: 'seconds', limit: seconds.limit, remaining: seconds.remaining, window: 'day', resetsAt: new Date(seconds.resetsAtMs).toISOString() });
    }
  } catch (error) {
    throw storeUnavailable(error);
  }
  return limits;
}
