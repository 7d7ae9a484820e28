import type { ServerResponse } from 'node:http';
import { inject, injectable } from 'tsyringe';
import {
  CLOCK,
  GatewayError,
  RATE_LIMIT_STORE,
  type LimitOutcome,
  type PipelineStage,
  type ProxyContext,
  type RateLimitRule,
  type RateLimitRuleResult,
  type RateLimitStore,
} from '../contract';

/**
 * Writes the rate-limit headers of the IETF httpapi draft "RateLimit header fields for HTTP"
 * (draft-ietf-httpapi-ratelimit-headers, structured-field form): one list item per policy.
 *
 *   RateLimit-Policy: "device";q=60;w=60, "app";q=600;w=60
 *   RateLimit: "device";r=59;t=1, "app";r=599;t=1
 */
export function writeRateLimitHeaders(response: ServerResponse, outcomes: readonly LimitOutcome[]): void {
  response.setHeader('RateLimit-Policy', outcomes.map((o) => `"${o.policy}";q=${o.limit};w=${o.windowSeconds}`).join(', '));
  response.setHeader('RateLimit', outcomes.map((o) => `"${o.policy}";r=${o.remaining};t=${o.resetSeconds}`).join(', '));
}

/** A rate-limit store that cannot answer refuses the request (fail closed) rather than letting it through unlimited. */
export function storeUnavailable(cause: unknown): GatewayError {
  return new GatewayError('internalError', 'Rate limits cannot be checked right now; the request was refused. Retry shortly.', {
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
  ) {}

  run(context: ProxyContext): void | Promise<void> {
    const app = context.get('app');
    const device = context.get('device');
    const rules: RateLimitRule[] = [
      { policy: 'device', key: `d\u0000${app.id}\u0000${device.deviceId}`, limit: app.settings.deviceLimitPerMinute, windowSeconds: 60 },
      { policy: 'app', key: `a\u0000${app.id}`, limit: app.settings.appLimitPerMinute, windowSeconds: 60 },
    ];
    let results: RateLimitRuleResult[] | Promise<RateLimitRuleResult[]>;
    try {
      results = this.store.consume(rules, this.clock());
    } catch (error) {
      throw storeUnavailable(error);
    }
    if (results instanceof Promise) return results.then((settled) => this.decide(context, settled), (error: unknown) => Promise.reject(storeUnavailable(error)));
    this.decide(context, results);
  }

  private decide(context: ProxyContext, results: readonly RateLimitRuleResult[]): void {
    const outcomes = results.map(toOutcome);
    writeRateLimitHeaders(context.response, outcomes);
    const refused = results.filter((result) => !result.allowed);
    if (refused.length > 0) {
      const retryAfterSeconds = Math.max(...refused.map((result) => result.retryAfterSeconds));
      const policies = refused.map((result) => result.rule.policy).join(' and ');
      throw new GatewayError('rateLimited', `Rate limit exceeded (${policies}); retry after ${retryAfterSeconds} s.`, {
        retryAfterSeconds,
        reason: `rate_limited_${refused[0]!.rule.policy}`,
      });
    }
    context.set('limit', { outcomes });
  }
}
