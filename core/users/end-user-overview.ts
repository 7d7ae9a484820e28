/**
 * One signed-in user at a glance, for `tollgate users show` and the MCP tool `show_user`: who the user is, the limits
 * that hold with what remains (when the rate-limit counters are reachable: the serving process's store), the devices
 * the user's requests came from, the user's usage over a window and latest requests. The same reads as the dashboard's
 * user page, through the same services.
 */
import type { RateLimitStore } from '../contract';
import type { ManagementService, UserDeviceView } from '../management/management-service';
import type { EndUserLimits, EndUserService, EndUserView } from './end-user-service';

export interface EndUserOverview {
  readonly user: EndUserView;
  /** Null where the counters are not reachable from here (see `limitsNote`). */
  readonly limits: EndUserLimits['limits'] | null;
  readonly limitsNote?: string;
  readonly devices: UserDeviceView[];
  readonly usage: {
    readonly minutes: number;
    readonly requests: number;
    readonly errors: number;
    readonly inputTokens: number;
    readonly outputTokens: number;
    /** Null without prices (no operator price and the default table off). */
    readonly estimatedUsd: number | null;
  };
  readonly requests: Array<{ createdAt: string; deviceId: string | null; provider: string; method: string | null; route: string | null; status: number; errorType: string | null; reason: string | null; model: string | null; inputTokens: number | null; outputTokens: number | null; estimatedUsd: number | null | undefined }>;
}

export async function endUserOverview(
  users: EndUserService,
  management: ManagementService,
  appId: string,
  userId: string,
  options: { minutes: number; requests: number; store?: RateLimitStore | undefined; clock?: () => number },
): Promise<EndUserOverview> {
  const user = await users.get(appId, userId);
  const now = (options.clock ?? Date.now)();
  const [limits, devices, summary, log] = await Promise.all([
    options.store ? users.limits(appId, user.id, options.store) : Promise.resolve(null),
    management.userDevices(appId, user.id),
    management.usageSummary(appId, now - options.minutes * 60_000, now + 1, { userId: user.id }),
    management.requestLog({ appId, userId: user.id, limit: options.requests }),
  ]);
  return {
    user,
    limits: limits?.limits ?? null,
    ...(limits ? {} : { limitsNote: `the limits' counters live in the serving gateway (in its memory, or the shared store it uses): GET /v1/admin/apps/${appId}/users/{userId}/limits there` }),
    devices,
    usage: {
      minutes: options.minutes,
      requests: summary.totalRequests,
      errors: summary.requestsPerMinute.reduce((sum, entry) => sum + entry.errors, 0),
      inputTokens: summary.tokens.inputTokens,
      outputTokens: summary.tokens.outputTokens,
      estimatedUsd: summary.spend ? summary.spend.totalUsd : null,
    },
    requests: log.requests.map((entry) => ({
      createdAt: entry.createdAt,
      deviceId: entry.deviceId,
      provider: entry.provider,
      method: entry.method,
      route: entry.route,
      status: entry.status,
      errorType: entry.errorType,
      reason: entry.reason,
      model: entry.model,
      inputTokens: entry.inputTokens,
      outputTokens: entry.outputTokens,
      estimatedUsd: entry.estimatedUsd,
    })),
  };
}
