/**
 * Management routes of end users (`/v1/admin/apps/{appId}/users…`), mounted with the others by the admin router: the
 * list, one user, the user's limits with what remains, the devices the user's requests came from, block and unblock.
 * A user's usage and requests are the app's (`…/usage?user=`, `…/requests?user=`).
 */
import type { RateLimitStore } from '../contract';
import type { ManagementService } from '../management/management-service';
import type { EndUserService } from '../users/end-user-service';
import type { AdminRoute } from './admin-routes';

/** What the per-user routes read besides the users: the devices (management) and the limits' counters. */
export interface EndUserRouteDependencies {
  readonly management: ManagementService;
  readonly rateLimits: RateLimitStore;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value : undefined);
const integer = (value: unknown): number | undefined => (typeof value === 'string' && /^\d{1,7}$/.test(value) ? Number(value) : undefined);

export function endUserRoutes(users: EndUserService, dependencies: EndUserRouteDependencies): AdminRoute[] {
  return [
    {
      method: 'get', path: '/apps/{appId}/users', scope: 'read', operationId: 'listEndUsers', tag: 'users', conflicts: true,
      summary: 'End users the gateway has seen for an app (signed in with its sign-in provider), most recently seen first',
      query: [
        { name: 'search', description: 'the start of the user id', schema: { type: 'string', minLength: 1, maxLength: 255 } },
        { name: 'limit', description: 'users per page (default 100, at most 1000)', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
        { name: 'offset', description: 'users to skip', schema: { type: 'integer', minimum: 0 } },
      ],
      response: { schema: 'EndUser', description: 'the users', array: true },
      handle: ({ params, query }) => users.list(params.appId!, { search: text(query.search), limit: integer(query.limit), offset: integer(query.offset) }),
    },
    {
      method: 'get', path: '/apps/{appId}/users/{userId}', scope: 'read', operationId: 'getEndUser', tag: 'users', conflicts: true,
      summary: 'One end user (by the sign-in provider\'s sub)',
      response: { schema: 'EndUser', description: 'the user' },
      handle: ({ params }) => users.get(params.appId!, params.userId!),
    },
    {
      method: 'get', path: '/apps/{appId}/users/{userId}/limits', scope: 'read', operationId: 'getEndUserLimits', tag: 'users', conflicts: true,
      summary: "The limits and budgets that hold for a user (its profile applied), with what remains of each, read from the counters the gateway charges (as GET /v1/me); charges nothing",
      response: { schema: 'EndUserLimits', description: "the user's and the app's limits" },
      handle: ({ params }) => users.limits(params.appId!, params.userId!, dependencies.rateLimits),
    },
    {
      method: 'get', path: '/apps/{appId}/users/{userId}/devices', scope: 'read', operationId: 'listEndUserDevices', tag: 'users', conflicts: true,
      summary: "The devices a user's requests came from (as long as the request log keeps them), most recently used first, at most 100",
      response: { schema: 'EndUserDevice', description: 'the devices', array: true },
      async handle({ params }) {
        const user = await users.get(params.appId!, params.userId!);
        return dependencies.management.userDevices(user.appId, user.id);
      },
    },
    {
      method: 'post', path: '/apps/{appId}/users/{userId}/block', scope: 'apps', operationId: 'blockEndUser', tag: 'users', conflicts: true,
      summary: 'Block an end user: refused (user_blocked) on every device and every node',
      response: { schema: 'EndUser', description: 'the blocked user' },
      audit: { action: 'end_user.block', target: ({ params }) => `${params.appId!}/${params.userId!}` },
      handle: ({ params }) => users.setBlocked(params.appId!, params.userId!, true),
    },
    {
      method: 'post', path: '/apps/{appId}/users/{userId}/unblock', scope: 'apps', operationId: 'unblockEndUser', tag: 'users', conflicts: true,
      summary: 'Unblock an end user',
      response: { schema: 'EndUser', description: 'the unblocked user' },
      audit: { action: 'end_user.unblock', target: ({ params }) => `${params.appId!}/${params.userId!}` },
      handle: ({ params }) => users.setBlocked(params.appId!, params.userId!, false),
    },
  ];
}
