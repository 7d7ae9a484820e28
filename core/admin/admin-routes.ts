/**
 * The management API, `/v1/admin/*` (protocol.md): one route table that both mounts the Express routes and describes
 * them in the OpenAPI document (openapi.ts).
 *
 * Every route but the sign-in, set-up and document routes needs credentials: `Authorization: Bearer ak_…` (an admin
 * key) or the dashboard session cookie. With the cookie, a state-changing request must carry the session's CSRF token
 * in `X-CSRF-Token` and, when the browser sends `Origin`, come from this server's own origin. Every change is written to
 * the audit log with its actor. Inputs are class-validator DTOs; a failure is a 400 naming each failing field, and
 * changes nothing.
 */
import type { Knex } from 'knex';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { idempotencyKeyOf } from '../management/idempotency';
import { parse as parseCookies } from 'cookie';
import { GatewayError, type RateLimitStore } from '../contract';
import { DEVELOPMENT_TOKEN_PATTERN, generateIntegrationCode, supportedCapabilities, INTEGRATION_CAPABILITIES, INTEGRATION_PLATFORMS, type IntegrationCapability, type IntegrationPlatform } from '../integration/code-generator';
import { ATTESTATION_SECRET_NAMES, AttestationSecretBodyInput, ChangePasswordInput, CreateAdminKeyInput, CreateAppInput, CreateUserInput, DevelopmentTokenInput, RotateTokenInput, SecretBodyInput, SetPriceInput, SetupInput, SignInInput, UpdateAppInput, validateInput } from '../management/inputs';
import { DEVICE_PLATFORMS, type DevicePlatform, type ManagementService } from '../management/management-service';
import { authenticateAdminKey } from '../management/admin-auth';
import { FULL_GRANT, requireNoExpiry, requireScope, type AdminGrant, type AdminScope } from '../management/admin-scopes';
import type { ProviderRegistry } from '../registry/provider-registry';
import { sendGatewayError, toGatewayError } from '../routes/errors';
import { AuditRepository, type RequestLogQuery } from '../storage/repositories';
import { CSRF_HEADER, SESSION_COOKIE, csrfTokensEqual, type DashboardAuth, type DashboardSession } from './dashboard-auth';
import { buildOpenApiDocument } from './openapi';
import { ADMIN_MAX_BODY_BYTES, clientAddress, expectedOrigin, originMatches, readJsonBody } from '../routes/request-guards';

export interface AdminApiDependencies {
  readonly database: Knex;
  readonly management: ManagementService;
  readonly registry: ProviderRegistry;
  readonly auth: DashboardAuth;
  readonly rateLimits: RateLimitStore;
  readonly production: boolean;
  readonly version: string;
  readonly clock: () => number;
  /** The gateway's public base URL, for generated integration code. */
  readonly gatewayUrl: () => string;
  /** `TOLLGATE_PUBLIC_URL`: when set, the only origin a dashboard write may come from. */
  readonly publicUrl?: string | undefined;
  /** `TOLLGATE_TRUST_PROXY`: client address and origin as the one trusted reverse proxy saw them. */
  readonly trustProxy?: boolean;
  /** Errors answered with 500 are logged here (never sent). */
  readonly onInternalError?: (error: unknown) => void;
  /** Requests refused with 503 because a dependency could not answer (logged at warn, counted by cause). */
  readonly onUnavailable?: (error: GatewayError) => void;
  /** Routes of other modules (end users, webhooks), mounted and documented like these. */
  readonly extraRoutes?: readonly AdminRoute[];
}

/** Who makes an admin request. */
interface Actor {
  /** The audit-log actor: `key:<name>` or `user:<username>`. */
  readonly name: string;
  readonly session?: DashboardSession;
  /** What the actor may do: an admin key's scopes and expiry; a dashboard session holds `admin`. */
  readonly grant: AdminGrant;
}

interface RouteContext {
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, unknown>>;
  readonly body: unknown;
  readonly actor: Actor | null;
  readonly request: Request;
  readonly response: Response;
}

/** The fields of a route's result that audit entries may name (ids, names, masked values). */
interface AuditedResult {
  readonly id?: string;
  readonly name?: string;
  readonly masked?: string;
  /** An admin key (`admin_key.create`). */
  readonly scopes?: readonly string[];
  readonly expiresAt?: string | null;
  /** A price (`price.set`, `price.delete`). */
  readonly provider?: string;
  readonly model?: string;
  readonly inputUsdPerMillion?: number;
  readonly outputUsdPerMillion?: number;
  /** A key check (`secret.test`). */
  readonly outcome?: string;
  readonly status?: number | null;
}

interface QueryParameter {
  readonly name: string;
  readonly description: string;
  readonly schema: Record<string, unknown>;
}

/**
 * One management route. A route that needs credentials declares, here and nowhere else, the scope it needs
 * (core/management/admin-scopes.ts); the router checks it before the body is read, and the OpenAPI document states it.
 */
export type AdminRoute = AdminRouteShape & ({ readonly public: true; readonly scope?: undefined } | { readonly public?: false; readonly scope: AdminScope });

interface AdminRouteShape {
  readonly method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path below `/v1/admin`, e.g. `/apps/{appId}`. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly tag: string;
  readonly body?: new () => object;
  readonly query?: readonly QueryParameter[];
  readonly status?: number;
  /** `csv`: the handler returns CSV text, sent as `text/csv` (an export); otherwise JSON of `schema`. */
  readonly response: { readonly schema: string; readonly description: string; readonly array?: boolean; readonly csv?: boolean };
  /** Written to the audit log in the change's own transaction, with the actor: what was done to what (never a secret value). */
  readonly audit?: {
    readonly action: string;
    target(context: RouteContext, result: AuditedResult): string | undefined;
    details?(context: RouteContext, result: AuditedResult): Record<string, unknown>;
  };
  readonly rateLimited?: boolean;
  /** The change may conflict with the current state (409 documented). */
  readonly conflicts?: boolean;
  /** The route names its object in the query rather than the path, and may not find it (404 documented). */
  readonly findsByQuery?: boolean;
  /** Takes an `Idempotency-Key`: a retry with the same key gets the first answer (core/management/idempotency.ts). */
  readonly idempotent?: boolean;
  handle(context: RouteContext): Promise<unknown>;
}

/** A signed-in user's id (the sign-in provider's `sub`) in a query: 1-255 characters, no control characters. */
const USER_QUERY = /^[^\u0000-\u001f\u007f]{1,255}$/;

const MINUTES: QueryParameter = { name: 'minutes', description: 'the window, ending now (default 60, at most 10080 = 7 days)', schema: { type: 'integer', minimum: 1, maximum: 10_080 } };

const REQUEST_LOG_QUERY: readonly QueryParameter[] = [
  { name: 'device', description: 'only this device id', schema: { type: 'string', minLength: 1, maxLength: 200 } },
  { name: 'user', description: "only this signed-in user's requests (the sign-in provider's sub)", schema: { type: 'string', minLength: 1, maxLength: 255 } },
  { name: 'provider', description: 'only this provider slug', schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,39}$' } },
  { name: 'outcome', description: 'ok (2xx/3xx) or error (refused by the gateway or a provider error)', schema: { type: 'string', enum: ['ok', 'error'] } },
  { name: 'q', description: 'a piece of the route, request id or error reason', schema: { type: 'string', minLength: 1, maxLength: 200 } },
  { name: 'minutes', description: 'only the last N minutes (at most 90 days)', schema: { type: 'integer', minimum: 1, maximum: 129_600 } },
  { name: 'status', description: 'a status class (2xx, 3xx, 4xx, 5xx) or one status code', schema: { type: 'string', pattern: '^([2-5]xx|[1-5][0-9][0-9])$' } },
  { name: 'errorType', description: 'only this error type (a gateway error type, or providerError for a provider that answered non-2xx)', schema: { type: 'string', pattern: '^[A-Za-z]{1,40}$' } },
  { name: 'before', description: 'the cursor: rows older than this id (nextBefore of the previous page)', schema: { type: 'integer', minimum: 1 } },
  { name: 'limit', description: 'rows per page (default 50, at most 500; the CSV export defaults to 10,000)', schema: { type: 'integer', minimum: 1, maximum: 10_000 } },
];

const DEVICE_QUERY: readonly QueryParameter[] = [
  { name: 'q', description: 'the start of the device id (case-insensitive)', schema: { type: 'string', minLength: 1, maxLength: 200 } },
  { name: 'platform', description: 'ios (App Attest), android (Play Integrity, key attestation), development (simulators) or other', schema: { type: 'string', enum: DEVICE_PLATFORMS } },
  { name: 'limit', description: 'devices per page (default 50, at most 500)', schema: { type: 'integer', minimum: 1, maximum: 500 } },
  { name: 'offset', description: 'devices to skip (nextOffset of the previous page)', schema: { type: 'integer', minimum: 0 } },
];

/** A short text query parameter, or undefined. */
function textQuery(query: Readonly<Record<string, unknown>>, name: string, pattern: RegExp): string | undefined {
  const raw = query[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !pattern.test(raw)) {
    throw new GatewayError('invalidRequest', `The query parameter ${name} is not valid.`, { reason: 'validation', fields: { [name]: ['is not valid'] } });
  }
  return raw;
}

function requestLogQuery(appId: string, query: Readonly<Record<string, unknown>>, defaultLimit = 50): RequestLogQuery {
  const outcome = query.outcome === undefined ? undefined : enumQuery(query, 'outcome', ['ok', 'error'] as const, 'ok');
  return {
    appId,
    deviceId: textQuery(query, 'device', /^[^\u0000-\u001f]{1,200}$/),
    userId: textQuery(query, 'user', USER_QUERY),
    provider: textQuery(query, 'provider', /^[a-z0-9][a-z0-9-]{0,39}$/),
    outcome,
    search: textQuery(query, 'q', /^[^\u0000-\u001f]{1,200}$/),
    minutes: query.minutes === undefined ? undefined : integerQuery(query, 'minutes', 60, 1, 129_600),
    status: textQuery(query, 'status', /^([2-5]xx|[1-5][0-9][0-9])$/),
    errorType: textQuery(query, 'errorType', /^[A-Za-z]{1,40}$/),
    before: query.before === undefined ? undefined : integerQuery(query, 'before', 1, 1, Number.MAX_SAFE_INTEGER),
    limit: integerQuery(query, 'limit', defaultLimit, 1, 10_000),
  };
}

/** RFC 4180 CSV; a cell that a spreadsheet would run as a formula (=, +, -, @) is prefixed with a quote (OWASP CSV injection). */
function requestLogCsv(rows: ReadonlyArray<Record<string, unknown>>): string {
  // New columns go last: a spreadsheet or script reading the columns by position keeps working.
  const columns = ['createdAt', 'requestId', 'deviceId', 'provider', 'method', 'route', 'status', 'errorType', 'reason', 'latencyMs', 'bytesIn', 'bytesOut', 'truncated', 'inputTokens', 'outputTokens', 'model', 'estimatedUsd', 'priceAsOf', 'userId'];
  const cell = (value: unknown) => {
    let text = value === null || value === undefined ? '' : String(value);
    if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return `${[columns.join(','), ...rows.map((row) => columns.map((column) => cell(row[column])).join(','))].join('\r\n')}\r\n`;
}

/** A whole number query parameter within [min, max], or the default. */
function integerQuery(query: Readonly<Record<string, unknown>>, name: string, fallback: number, min: number, max: number): number {
  const raw = query[name];
  if (raw === undefined) return fallback;
  const value = typeof raw === 'string' && /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new GatewayError('invalidRequest', `The query parameter ${name} must be a whole number from ${min} to ${max}.`, { reason: 'validation', fields: { [name]: [`must be a whole number from ${min} to ${max}`] } });
  }
  return value;
}

function enumQuery<T extends string>(query: Readonly<Record<string, unknown>>, name: string, allowed: readonly T[], fallback: T): T {
  const raw = query[name];
  if (raw === undefined) return fallback;
  if (typeof raw !== 'string' || !(allowed as readonly string[]).includes(raw)) {
    throw new GatewayError('invalidRequest', `The query parameter ${name} must be one of ${allowed.join(', ')}.`, { reason: 'validation', fields: { [name]: [`must be one of ${allowed.join(', ')}`] } });
  }
  return raw as T;
}

function cookieOptions(production: boolean, maxAgeMs: number) {
  return { httpOnly: true, sameSite: 'strict' as const, secure: production, path: '/', maxAge: maxAgeMs };
}

function sessionView(session: DashboardSession) {
  return { user: session.user, csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() };
}

/** The route table. */
export function adminRoutes(deps: AdminApiDependencies): AdminRoute[] {
  const { management, registry, auth } = deps;
  const window = (query: Readonly<Record<string, unknown>>) => {
    const now = deps.clock();
    return { from: now - integerQuery(query, 'minutes', 60, 1, 10_080) * 60_000, to: now + 1 };
  };
  return [
    // Sign-in and set-up (public; rate-limited).
    {
      method: 'post', path: '/setup', operationId: 'completeSetup', tag: 'session', public: true, rateLimited: true, body: SetupInput,
      summary: 'Create the first administrator with the one-time set-up link printed at first start, and sign in',
      response: { schema: 'Session', description: 'signed in; the session cookie is set' }, status: 201,
      async handle({ body, response }) {
        const input = validateInput(SetupInput, body);
        const user = await auth.completeSetup(input.setupToken, input.username, input.password);
        await new AuditRepository(deps.database).append({ actor: `user:${user.username}`, action: 'admin.setup', target: user.id, details: null, createdAt: deps.clock() });
        return signIn(deps, response, input.username, input.password);
      },
    },
    {
      method: 'post', path: '/session', operationId: 'signIn', tag: 'session', public: true, rateLimited: true, body: SignInInput,
      summary: 'Sign in to the dashboard (sets an httpOnly, SameSite=Strict session cookie)',
      response: { schema: 'Session', description: 'signed in; the session cookie is set' },
      async handle({ body, response }) {
        const input = validateInput(SignInInput, body);
        return signIn(deps, response, input.username, input.password);
      },
    },
    {
      method: 'get', path: '/session', scope: 'read', operationId: 'getSession', tag: 'session',
      summary: 'The signed-in administrator and the CSRF token of the session',
      response: { schema: 'Session', description: 'the current session' },
      async handle({ actor }) {
        if (!actor?.session) throw new GatewayError('unauthorized', 'Not signed in to the dashboard.', { reason: 'no_session' });
        return sessionView(actor.session);
      },
    },
    {
      method: 'delete', path: '/session', scope: 'read', operationId: 'signOut', tag: 'session',
      summary: 'Sign out (ends the session)',
      response: { schema: 'SignedOut', description: 'signed out' },
      async handle({ actor, request, response }) {
        if (!actor?.session) throw new GatewayError('unauthorized', 'Not signed in to the dashboard.', { reason: 'no_session' });
        await auth.signOut(parseCookies(request.headers.cookie ?? '')[SESSION_COOKIE]);
        response.clearCookie(SESSION_COOKIE, { path: '/' });
        return { signedOut: true };
      },
    },
    {
      method: 'post', path: '/session/password', scope: 'read', operationId: 'changeOwnPassword', tag: 'session', body: ChangePasswordInput,
      summary: 'Change your own password (the current one is required); your other sessions end',
      response: { schema: 'PasswordChanged', description: 'changed' },
      audit: { action: 'user.change_password', target: ({ actor }) => actor?.session?.user.id },
      async handle({ actor, body, request }) {
        if (!actor?.session) throw new GatewayError('unauthorized', 'Not signed in to the dashboard.', { reason: 'no_session' });
        const input = validateInput(ChangePasswordInput, body);
        return auth.changeOwnPassword(actor.session.user.id, input.currentPassword, input.newPassword, parseCookies(request.headers.cookie ?? '')[SESSION_COOKIE]);
      },
    },
    // Dashboard administrators.
    {
      method: 'get', path: '/users', scope: 'read', operationId: 'listUsers', tag: 'admin', summary: 'List dashboard administrators',
      response: { schema: 'User', description: 'administrators', array: true },
      async handle() {
        return (await auth.listUsers()).map((user) => ({ id: user.id, username: user.username, createdAt: new Date(user.createdAt).toISOString(), lockedUntil: user.lockedUntil === null ? null : new Date(user.lockedUntil).toISOString() }));
      },
    },
    {
      method: 'post', path: '/users', scope: 'admin', operationId: 'createUser', tag: 'admin', body: CreateUserInput, status: 201, conflicts: true,
      summary: 'Add a dashboard administrator',
      response: { schema: 'User', description: 'the new administrator' },
      audit: { action: 'user.create', target: (_context, user) => user.id, details: (_context, user) => ({ name: user.name }) },
      async handle({ body, actor }) {
        requireNoExpiry(actor?.grant ?? FULL_GRANT, 'a dashboard administrator');
        const input = validateInput(CreateUserInput, body);
        const user = await auth.createUser(input.username, input.password);
        return { id: user.id, username: user.username, name: user.username, createdAt: new Date(deps.clock()).toISOString(), lockedUntil: null };
      },
    },
    {
      method: 'delete', path: '/users/{userId}', scope: 'admin', operationId: 'deleteUser', tag: 'admin', conflicts: true,
      summary: 'Remove a dashboard administrator and end their sessions (not yourself, not the last one)',
      response: { schema: 'Deleted', description: 'removed' },
      audit: { action: 'user.delete', target: ({ params }) => params.userId! },
      handle: ({ params, actor }) => auth.deleteUser(params.userId!, actor?.session?.user.id ?? null),
    },
    // Apps.
    {
      method: 'get', path: '/apps', scope: 'read', operationId: 'listApps', tag: 'apps', summary: 'List apps',
      response: { schema: 'App', description: 'every app', array: true },
      handle: () => management.listApps(),
    },
    {
      method: 'post', path: '/apps', scope: 'apps', operationId: 'createApp', tag: 'apps', body: CreateAppInput, status: 201,
      summary: 'Create an app; its app token is in this answer only',
      response: { schema: 'CreatedApp', description: 'the app and its token (shown once)' },
      idempotent: true,
      audit: { action: 'app.create', target: (_context, app) => app.id, details: (_context, app) => ({ name: app.name }) },
      handle: ({ body }) => management.createApp(body),
    },
    {
      method: 'get', path: '/apps/{appId}', scope: 'read', operationId: 'getApp', tag: 'apps', summary: 'Read an app and its settings',
      response: { schema: 'App', description: 'the app' },
      handle: ({ params }) => management.getApp(params.appId!),
    },
    {
      method: 'patch', path: '/apps/{appId}', scope: 'apps', operationId: 'updateApp', tag: 'apps', body: UpdateAppInput,
      summary: 'Change an app’s name or settings: attestation policy, development attestation, allowed providers and routes, limits and quotas',
      response: { schema: 'App', description: 'the changed app' },
      audit: { action: 'app.update', target: (_context, app) => app.id, details: ({ body }) => ({ fields: Object.keys(body as object) }) },
      handle: ({ params, body }) => management.updateApp(params.appId!, body),
    },
    {
      method: 'delete', path: '/apps/{appId}', scope: 'apps', operationId: 'deleteApp', tag: 'apps', summary: 'Delete an app with its secrets, tokens and devices',
      response: { schema: 'Deleted', description: 'deleted' },
      audit: { action: 'app.delete', target: ({ params }) => params.appId! },
      handle: ({ params }) => management.deleteApp(params.appId!),
    },
    {
      method: 'post', path: '/apps/{appId}/disable', scope: 'apps', operationId: 'disableApp', tag: 'apps', summary: 'Disable an app: its token is refused until enabled again',
      response: { schema: 'App', description: 'the disabled app' },
      audit: { action: 'app.disable', target: (_context, app) => app.id },
      handle: ({ params }) => management.setAppStatus(params.appId!, 'disabled'),
    },
    {
      method: 'post', path: '/apps/{appId}/enable', scope: 'apps', operationId: 'enableApp', tag: 'apps', summary: 'Enable a disabled app',
      response: { schema: 'App', description: 'the enabled app' },
      audit: { action: 'app.enable', target: (_context, app) => app.id },
      handle: ({ params }) => management.setAppStatus(params.appId!, 'active'),
    },
    {
      method: 'post', path: '/apps/{appId}/rotate-token', scope: 'apps', operationId: 'rotateAppToken', tag: 'apps', body: RotateTokenInput,
      summary: 'Issue a new app token; the old one keeps working for graceHours (default 168 = 7 days; 0 ends it at once)',
      response: { schema: 'RotatedToken', description: 'the new token (shown once) and the previous one while it still works' },
      idempotent: true,
      audit: { action: 'app.rotate_token', target: ({ params }) => params.appId!, details: ({ body }) => ({ graceHours: (body as RotateTokenInput | undefined)?.graceHours ?? 168 }) },
      async handle({ params, body }) {
        const input = validateInput(RotateTokenInput, body ?? {});
        return management.rotateAppToken(params.appId!, input.graceHours);
      },
    },
    // Secrets: write-only.
    {
      method: 'get', path: '/apps/{appId}/secrets', scope: 'read', operationId: 'listSecrets', tag: 'secrets', summary: 'List an app’s secrets, masked',
      response: { schema: 'Secret', description: 'masked secrets', array: true },
      handle: ({ params }) => management.listSecrets(params.appId!),
    },
    {
      method: 'put', path: '/apps/{appId}/secrets/{provider}', scope: 'secrets', operationId: 'putSecret', tag: 'secrets', body: SecretBodyInput,
      summary: 'Set (or replace) the provider key of an app; it is encrypted at rest and never returned again',
      response: { schema: 'Secret', description: 'the masked secret' },
      audit: { action: 'secret.set', target: ({ params }) => `${params.appId}/${params.provider}`, details: (_context, secret) => ({ masked: secret.masked }) },
      async handle({ params, body }) {
        const input = validateInput(SecretBodyInput, body);
        return management.setSecret({ appId: params.appId, provider: params.provider, value: input.value, ...(input.baseUrl !== undefined ? { baseUrl: input.baseUrl } : {}) });
      },
    },
    {
      method: 'post', path: '/apps/{appId}/secrets/{provider}/test', scope: 'secrets', operationId: 'testSecret', tag: 'secrets',
      summary: 'Test the stored key: one harmless request the provider documents (its manifest keyCheck, e.g. GET v1/models) to the provider’s own host; answers ok, rejected (401/403), unexpected or unreachable with the status and latency, never the key or the body',
      response: { schema: 'KeyCheck', description: 'the outcome (a provider without a key check: 400 key_check_unsupported)' },
      audit: { action: 'secret.test', target: ({ params }) => `${params.appId}/${params.provider}`, details: (_context, result) => ({ outcome: result.outcome, status: result.status }) },
      handle: ({ params }) => management.testSecret(params.appId!, params.provider!),
    },
    {
      method: 'delete', path: '/apps/{appId}/secrets/{provider}', scope: 'secrets', operationId: 'deleteSecret', tag: 'secrets', summary: 'Delete a provider key',
      response: { schema: 'SecretDeleted', description: 'deleted' },
      audit: { action: 'secret.delete', target: ({ params }) => `${params.appId}/${params.provider}` },
      handle: ({ params }) => management.deleteSecret(params.appId!, params.provider!),
    },
    // Attestation credentials (Play Integrity keys, service account): write-only too.
    {
      method: 'get', path: '/apps/{appId}/attestation-secrets', scope: 'read', operationId: 'listAttestationSecrets', tag: 'secrets', summary: 'List the app’s attestation credentials, masked',
      response: { schema: 'AttestationSecret', description: 'masked credentials', array: true },
      handle: ({ params }) => management.listAttestationSecrets(params.appId!),
    },
    {
      method: 'put', path: '/apps/{appId}/attestation-secrets/{name}', scope: 'secrets', operationId: 'putAttestationSecret', tag: 'secrets', body: AttestationSecretBodyInput,
      summary: 'Set a Play Integrity decryption or verification key (base64, from Play Console) or the service-account JSON for standard requests',
      response: { schema: 'AttestationSecret', description: 'the masked credential' },
      audit: { action: 'attestation_secret.set', target: ({ params }) => `${params.appId}/${params.name}` },
      handle: ({ params, body }) => management.setAttestationSecret(params.appId!, params.name!, body),
    },
    {
      method: 'delete', path: '/apps/{appId}/attestation-secrets/{name}', scope: 'secrets', operationId: 'deleteAttestationSecret', tag: 'secrets', summary: 'Delete an attestation credential',
      response: { schema: 'AttestationSecretDeleted', description: 'deleted' },
      audit: { action: 'attestation_secret.delete', target: ({ params }) => `${params.appId}/${params.name}` },
      handle: ({ params }) => management.deleteAttestationSecret(params.appId!, params.name!),
    },
    // Development tokens and devices.
    {
      method: 'get', path: '/apps/{appId}/development-tokens', scope: 'read', operationId: 'listDevelopmentTokens', tag: 'devices', summary: 'List development tokens (hints only)',
      response: { schema: 'DevelopmentToken', description: 'development tokens', array: true },
      handle: ({ params }) => management.listDevelopmentTokens(params.appId!),
    },
    {
      method: 'post', path: '/apps/{appId}/development-tokens', scope: 'apps', operationId: 'createDevelopmentToken', tag: 'devices', body: DevelopmentTokenInput, status: 201,
      summary: 'Create a development token (dt_…) for simulators and emulators; shown once',
      response: { schema: 'CreatedDevelopmentToken', description: 'the token (shown once)' },
      audit: { action: 'development_token.create', target: ({ params }, token) => `${params.appId}/${token.id}` },
      async handle({ params, body }) {
        const input = validateInput(DevelopmentTokenInput, body ?? {});
        return management.createDevelopmentToken(params.appId!, input.label);
      },
    },
    {
      method: 'post', path: '/apps/{appId}/development-tokens/{tokenId}/revoke', scope: 'apps', operationId: 'revokeDevelopmentToken', tag: 'devices', summary: 'Revoke a development token',
      response: { schema: 'DevelopmentTokenRevoked', description: 'revoked' },
      audit: { action: 'development_token.revoke', target: ({ params }) => `${params.appId}/${params.tokenId}` },
      handle: ({ params }) => management.revokeDevelopmentToken(params.appId!, params.tokenId!),
    },
    {
      method: 'get', path: '/apps/{appId}/devices', scope: 'read', operationId: 'listDevices', tag: 'devices', query: DEVICE_QUERY,
      summary: 'List the app’s attested devices, newest attestation first: searched by id prefix and platform, paged by offset, with the total',
      response: { schema: 'DeviceList', description: 'one page of devices' },
      handle: ({ params, query }) =>
        management.searchDevices(params.appId!, {
          prefix: textQuery(query, 'q', /^[^\u0000-\u001f]{1,200}$/),
          platform: query.platform === undefined ? undefined : enumQuery<DevicePlatform>(query, 'platform', DEVICE_PLATFORMS, 'other'),
          limit: integerQuery(query, 'limit', 50, 1, 500),
          offset: integerQuery(query, 'offset', 0, 0, 999_999_999),
        }),
    },
    {
      method: 'get', path: '/apps/{appId}/devices/{deviceId}', scope: 'read', operationId: 'getDevice', tag: 'devices',
      summary: 'One device: platform, attestation times, revocation, and its last request in the request log (lastSeenAt)',
      response: { schema: 'DeviceDetail', description: 'the device' },
      handle: ({ params }) => management.getDevice(params.appId!, params.deviceId!),
    },
    {
      method: 'post', path: '/apps/{appId}/devices/{deviceId}/revoke', scope: 'apps', operationId: 'revokeDevice', tag: 'devices',
      summary: 'Revoke a device: its next request gets attestationFailed, even with an unexpired token',
      response: { schema: 'DeviceRevoked', description: 'revoked' },
      audit: { action: 'device.revoke', target: ({ params }) => `${params.appId}/${params.deviceId}` },
      handle: ({ params }) => management.revokeDevice(params.appId!, params.deviceId!),
    },
    {
      method: 'post', path: '/apps/{appId}/devices/revoke-all', scope: 'apps', operationId: 'revokeAllDevices', tag: 'devices', summary: 'Revoke every device token of the app issued until now',
      response: { schema: 'DevicesRevoked', description: 'revoked' },
      audit: { action: 'device.revoke_all', target: ({ params }) => params.appId! },
      handle: ({ params }) => management.revokeAllDevices(params.appId!),
    },
    // The request log: one row per proxied request (usage events), newest first.
    {
      method: 'get', path: '/apps/{appId}/requests', scope: 'read', operationId: 'listRequests', tag: 'usage', query: REQUEST_LOG_QUERY,
      summary: 'The request log: time, device, provider, route, status, error type and reason, latency, bytes; newest first, filtered and paged',
      response: { schema: 'RequestLog', description: 'one page of the log; nextBefore is the cursor of the next page (null at the end)' },
      handle: ({ params, query }) => management.requestLog(requestLogQuery(params.appId!, query)),
    },
    {
      method: 'get', path: '/apps/{appId}/requests.csv', scope: 'read', operationId: 'exportRequests', tag: 'usage', query: REQUEST_LOG_QUERY,
      summary: 'The same request log as CSV (at most 10,000 rows a file; page with before)',
      response: { schema: 'RequestLogCsv', description: 'CSV with a header row', csv: true },
      async handle({ params, query }) {
        const { requests } = await management.requestLog({ ...requestLogQuery(params.appId!, query, 10_000) });
        return requestLogCsv(requests);
      },
    },
    // Usage and integration.
    {
      method: 'get', path: '/apps/{appId}/usage', scope: 'read', operationId: 'getAppUsage', tag: 'usage',
      query: [
        MINUTES,
        { name: 'device', description: 'only this device’s traffic (the per-device page)', schema: { type: 'string', minLength: 1, maxLength: 200 } },
        { name: 'user', description: 'only this signed-in user’s traffic (the per-user page; the sign-in provider’s sub)', schema: { type: 'string', minLength: 1, maxLength: 255 } },
      ],
      summary: 'Requests per minute, errors by type, latency p50/p95 per provider and top devices of one app (or of one of its devices or signed-in users, with the spend per minute)',
      response: { schema: 'Usage', description: 'usage over the window' },
      async handle({ params, query }) {
        const { from, to } = window(query);
        return management.usageSummary(params.appId!, from, to, { deviceId: textQuery(query, 'device', /^[^\u0000-\u001f]{1,200}$/), userId: textQuery(query, 'user', USER_QUERY) });
      },
    },
    {
      method: 'get', path: '/usage', scope: 'read', operationId: 'getUsage', tag: 'usage', query: [MINUTES], summary: 'Usage of every app together',
      response: { schema: 'Usage', description: 'usage over the window' },
      async handle({ query }) {
        const { from, to } = window(query);
        return management.usageSummary(null, from, to);
      },
    },
    // The operator's price table (USD per million tokens); where it has no row, spend uses the dated default table.
    {
      method: 'get', path: '/prices', scope: 'read', operationId: 'listPrices', tag: 'usage', summary: 'The price table: USD per million input and output tokens per provider and model',
      response: { schema: 'Price', description: 'prices', array: true },
      handle: () => management.listPrices(),
    },
    {
      method: 'get', path: '/prices/defaults', scope: 'read', operationId: 'listDefaultPrices', tag: 'usage',
      summary: "The dated default price table spend falls back on where no operator price is set: each row with its provider's price page and the day it was read",
      response: { schema: 'DefaultPrices', description: 'the default prices' },
      handle: () => management.listDefaultPrices(),
    },
    {
      method: 'put', path: '/prices', scope: 'apps', operationId: 'setPrice', tag: 'usage', body: SetPriceInput,
      summary: "Set one model's price (USD per million tokens); spend estimates use it at once",
      response: { schema: 'Price', description: 'the price as stored' },
      audit: { action: 'price.set', target: (_context, price) => `${price.provider ?? ''}/${price.model ?? ''}`, details: (_context, price) => ({ inputUsdPerMillion: price.inputUsdPerMillion, outputUsdPerMillion: price.outputUsdPerMillion }) },
      handle: ({ body }) => management.setPrice(body),
    },
    {
      method: 'delete', path: '/prices', scope: 'apps', operationId: 'deletePrice', tag: 'usage', findsByQuery: true,
      query: [
        { name: 'provider', description: 'provider slug', schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,39}$' } },
        { name: 'model', description: 'model name', schema: { type: 'string', maxLength: 200 } },
      ],
      summary: "Remove one model's price",
      response: { schema: 'PriceDeleted', description: 'removed' },
      audit: { action: 'price.delete', target: (_context, result) => `${result.provider ?? ''}/${result.model ?? ''}` },
      handle: ({ query }) => management.deletePrice({ provider: query.provider, model: query.model }),
    },
    {
      method: 'get', path: '/apps/{appId}/integration', scope: 'read', operationId: 'getIntegrationCode', tag: 'apps',
      query: [
        { name: 'platform', description: 'ios, android, flutter or react-native (default ios)', schema: { type: 'string', enum: INTEGRATION_PLATFORMS } },
        { name: 'provider', description: 'a provider slug (default: the first the app has a secret for, else the first in the catalog)', schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,39}$' } },
        { name: 'capability', description: 'chat, streaming, image, tts, translation or search (default chat); one the provider offers (400 validation otherwise)', schema: { type: 'string', enum: INTEGRATION_CAPABILITIES } },
        { name: 'developmentToken', description: 'a development token (dt_…) to wire in for simulators and emulators, in debug builds only; the app must allow development attestation', schema: { type: 'string', pattern: DEVELOPMENT_TOKEN_PATTERN.source } },
      ],
      summary: 'Initialization and request code for one platform (the generator the assistant server uses)',
      response: { schema: 'Integration', description: 'the snippet' },
      async handle({ params, query }) {
        const app = await management.getApp(params.appId!);
        const platform = enumQuery<IntegrationPlatform>(query, 'platform', INTEGRATION_PLATFORMS, 'ios');
        const capability = enumQuery<IntegrationCapability>(query, 'capability', INTEGRATION_CAPABILITIES, 'chat');
        const secrets = await management.listSecrets(app.id);
        const slug = typeof query.provider === 'string' ? query.provider : (secrets[0]?.provider ?? registry.list()[0]?.manifest.slug);
        const provider = slug === undefined ? undefined : registry.find(slug);
        if (!provider) throw new GatewayError('invalidRequest', `Unknown provider "${String(slug)}".`, { reason: 'validation', fields: { provider: ['must be a registered provider slug'] } });
        const developmentToken = query.developmentToken;
        if (developmentToken !== undefined && (typeof developmentToken !== 'string' || !DEVELOPMENT_TOKEN_PATTERN.test(developmentToken))) {
          throw new GatewayError('invalidRequest', 'The query parameter developmentToken must be a development token (dt_…).', { reason: 'validation', fields: { developmentToken: ['must match ^dt_[0-9A-Za-z]{32}$'] } });
        }
        return generateIntegrationCode({
          platform, capability, appToken: 'at_YOUR_APP_TOKEN', provider: provider.manifest, gatewayUrl: deps.gatewayUrl(),
          allowDevelopmentAttestation: app.settings.allowDevelopmentAttestation, ...(developmentToken !== undefined ? { developmentToken } : {}),
        });
      },
    },
    {
      method: 'get', path: '/providers', scope: 'read', operationId: 'listProviders', tag: 'providers', summary: 'The provider catalog',
      response: { schema: 'Provider', description: 'registered providers', array: true },
      async handle() {
        return registry.list().map(({ manifest }) => ({
          slug: manifest.slug,
          name: manifest.name,
          versions: Object.keys(manifest.versions),
          capabilities: [...manifest.capabilities],
          streaming: [...manifest.streaming],
          perTenantHost: Boolean(manifest.tenant),
          accountRoutes: (manifest.routes?.account ?? []).map((route) => ({ methods: [...route.methods], path: route.path, why: route.why })),
          integrationCapabilities: supportedCapabilities(manifest),
          keyCheck: manifest.keyCheck ? `${manifest.keyCheck.method} ${manifest.keyCheck.version}/${manifest.keyCheck.path}` : null,
        }));
      },
    },
    // Admin keys and the audit log.
    {
      method: 'get', path: '/admin-keys', scope: 'read', operationId: 'listAdminKeys', tag: 'admin', summary: 'List admin keys (hints only)',
      response: { schema: 'AdminKey', description: 'admin keys', array: true },
      handle: () => management.listAdminKeys(),
    },
    {
      method: 'post', path: '/admin-keys', scope: 'admin', operationId: 'createAdminKey', tag: 'admin', body: CreateAdminKeyInput, status: 201,
      summary: 'Create an admin key (ak_…) with scopes (default admin) and an optional expiry; shown once. Never with a scope the caller lacks, nor outliving the caller’s key (403 scope_exceeds_own)',
      response: { schema: 'CreatedAdminKey', description: 'the key (shown once)' },
      audit: { action: 'admin_key.create', target: (_context, key) => key.id, details: (_context, key) => ({ name: key.name, scopes: key.scopes, expiresAt: key.expiresAt }) },
      handle: ({ body, actor }) => management.createAdminKey(body, actor?.grant),
    },
    {
      method: 'delete', path: '/admin-keys/{keyId}', scope: 'admin', operationId: 'revokeAdminKey', tag: 'admin', summary: 'Revoke an admin key (never one holding a scope the caller lacks: 403 scope_exceeds_own)',
      response: { schema: 'AdminKeyRevoked', description: 'revoked' },
      audit: { action: 'admin_key.revoke', target: ({ params }) => params.keyId! },
      handle: ({ params, actor }) => management.revokeAdminKey(params.keyId!, actor?.grant),
    },
    {
      method: 'get', path: '/audit', scope: 'read', operationId: 'listAuditLog', tag: 'admin',
      query: [
        { name: 'minutes', description: 'only the window ending now (at most 10080 = 7 days); absent: the whole log, paged with limit and before', schema: { type: 'integer', minimum: 1, maximum: 10_080 } },
        { name: 'limit', description: 'at most this many entries, newest first (default 100, at most 1000)', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
        { name: 'before', description: 'the next page: only entries older than the one with this id (the last id of the previous page)', schema: { type: 'integer', minimum: 1 } },
        { name: 'action', description: 'only actions starting with this, e.g. secret.', schema: { type: 'string', maxLength: 100 } },
      ],
      summary: 'The audit log: who changed what, newest first, paged by id',
      response: { schema: 'AuditEntry', description: 'entries', array: true },
      async handle({ query }) {
        const range = query.minutes === undefined ? undefined : window({ minutes: query.minutes });
        const entries = await new AuditRepository(deps.database).list({
          fromMs: range?.from,
          toMs: range?.to,
          limit: integerQuery(query, 'limit', 100, 1, 1000),
          beforeId: query.before === undefined ? undefined : integerQuery(query, 'before', 1, 1, 999_999_999),
          action: typeof query.action === 'string' && query.action !== '' ? query.action.slice(0, 100) : undefined,
        });
        return entries.map((entry) => ({ ...entry, createdAt: new Date(entry.createdAt).toISOString() }));
      },
    },
  ];
}

/**
 * Charges one sign-in attempt to the client address (10 per 5 minutes: password spraying from one address) before the
 * body is read. Failed attempts per user name are counted by DashboardAuth (a lock after 5 failures in a row), so that
 * normal re-logins never lock anyone out.
 */
async function limitSignIn(deps: AdminApiDependencies, request: Request): Promise<void> {
  const rule = { policy: 'signin-address', key: `{signin}:a:${clientAddress(request, deps.trustProxy ?? false)}`, limit: 10, windowSeconds: 300 };
  const results = await deps.rateLimits.consume([rule], deps.clock());
  const refused = results.find((result) => !result.allowed);
  if (refused) {
    const seconds = Math.max(1, Math.ceil(refused.retryAfterSeconds));
    throw new GatewayError('rateLimited', `Too many sign-in attempts from this address; try again in ${seconds} s.`, { retryAfterSeconds: seconds, reason: 'rate_limited_signin_address' });
  }
}

async function signIn(deps: AdminApiDependencies, response: Response, username: string, password: string) {
  const result = await deps.auth.signIn(username, password);
  if (result && 'lockedForSeconds' in result) {
    throw new GatewayError('rateLimited', `Too many failed sign-ins for this user; try again in ${result.lockedForSeconds} s.`, { retryAfterSeconds: result.lockedForSeconds, reason: 'rate_limited_signin_user' });
  }
  if (!result) throw new GatewayError('unauthorized', 'The user name or the password is wrong.', { reason: 'sign_in_failed' });
  response.cookie(SESSION_COOKIE, result.sessionId, cookieOptions(deps.production, result.session.expiresAt - deps.clock()));
  return sessionView(result.session);
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The admin key or the dashboard session of a request; throws when neither is valid. */
async function authenticate(deps: AdminApiDependencies, request: Request): Promise<Actor> {
  if (request.headers.authorization !== undefined) {
    const admin = await authenticateAdminKey(deps.database, request.headers.authorization, deps.clock());
    if (!admin) throw new GatewayError('unauthorized', 'The admin key is missing, malformed, unknown or revoked (Authorization: Bearer ak_…).', { reason: 'admin_key_invalid' });
    return { name: `key:${admin.name}`, grant: admin };
  }
  const session = await deps.auth.session(parseCookies(request.headers.cookie ?? '')[SESSION_COOKIE]);
  if (!session) throw new GatewayError('unauthorized', 'Sign in to the dashboard, or send Authorization: Bearer ak_… (an admin key).', { reason: 'no_credentials' });
  if (!SAFE_METHODS.has(request.method)) {
    const origin = request.headers.origin;
    if (origin !== undefined && !originMatches(origin, expectedOrigin(request, { publicUrl: deps.publicUrl, trustProxy: deps.trustProxy ?? false }))) {
      throw new GatewayError('forbidden', 'Cross-origin requests cannot change anything.', { reason: 'cross_origin' });
    }
    if (!csrfTokensEqual(session.csrfToken, request.headers[CSRF_HEADER])) {
      throw new GatewayError('forbidden', 'This request needs the session’s CSRF token in X-CSRF-Token.', { reason: 'csrf' });
    }
  }
  return { name: `user:${session.user.username}`, session, grant: FULL_GRANT };
}

/** A cross-origin `Origin` on a public route that changes state: refused as the session routes refuse it. */
function refuseCrossSite(deps: AdminApiDependencies, request: Request): void {
  const origin = request.headers.origin;
  if (origin !== undefined && !originMatches(origin, expectedOrigin(request, { publicUrl: deps.publicUrl, trustProxy: deps.trustProxy ?? false }))) {
    throw new GatewayError('forbidden', 'Cross-origin requests cannot sign in.', { reason: 'cross_origin' });
  }
}

/** The Express router for `/v1/admin`. */
export function createAdminRouter(deps: AdminApiDependencies): Router {
  const router = express.Router({ strict: true });
  const routes = [...adminRoutes(deps), ...(deps.extraRoutes ?? [])];
  const document = buildOpenApiDocument(routes, deps.version, { provider: deps.registry.list().map(({ manifest }) => manifest.slug), name: [...ATTESTATION_SECRET_NAMES] });
  router.get('/openapi.json', (_request, response) => {
    response.setHeader('Cache-Control', 'no-store');
    response.json(document);
  });
  for (const route of routes) {
    const expressPath = route.path.replace(/\{(\w+)\}/g, ':$1');
    router[route.method](expressPath, async (request: Request, response: Response, next: NextFunction) => {
      try {
        // Credentials first: an unauthenticated request learns nothing, not even whether its body is valid.
        let actor: Actor | null = null;
        if (!route.public) {
          actor = await authenticate(deps, request);
          // The route's scope, before a byte of the body is read: a key without it learns nothing more.
          requireScope(actor.grant, route.scope, `${route.method.toUpperCase()} /v1/admin${route.path}`);
        }
        // Public routes (sign-in, set-up) are charged to the client address before their body is read.
        else if (route.rateLimited) await limitSignIn(deps, request);
        // Public routes (sign-in, set-up) have no session to carry a CSRF token: they refuse a cross-site Origin and
        // read only a body typed as JSON, which a cross-site form (`text/plain`) cannot send without a preflight, so a
        // page elsewhere cannot sign a visitor in to an account it chose (login CSRF).
        if (route.public && route.method !== 'get') refuseCrossSite(deps, request);
        if (route.body || route.method !== 'get') {
          request.body = await readJsonBody(request, ADMIN_MAX_BODY_BYTES, { anyType: !route.public });
        }
        const body = route.body && request.body === undefined ? {} : request.body;
        const context: RouteContext = { params: request.params as Record<string, string>, query: request.query as Record<string, unknown>, body, actor, request, response };
        // The change and its audit entry are one transaction: an audit entry that cannot be written undoes the change.
        const audit = route.audit;
        const run = () =>
          audit
            ? deps.management.audited(
                (value) => {
                  const audited = (value ?? {}) as AuditedResult;
                  return { actor: actor?.name ?? 'anonymous', action: `admin.${audit.action}`, target: audit.target(context, audited) ?? null, details: audit.details?.(context, audited) ?? null };
                },
                () => route.handle(context),
              )
            : route.handle(context);
        const idempotencyKey = route.idempotent ? idempotencyKeyOf(request.headers['idempotency-key']) : undefined;
        let result: unknown;
        if (idempotencyKey !== undefined) {
          const scope = `${actor?.name ?? 'anonymous'} ${route.operationId} ${JSON.stringify(context.params)}`;
          const keyed = await deps.management.idempotency.run(scope, idempotencyKey, body, run);
          if (keyed.replayed) response.setHeader('Idempotency-Replayed', 'true');
          result = keyed.value;
        } else result = await run();
        response.setHeader('Cache-Control', 'no-store');
        if (route.response.csv) {
          response.setHeader('Content-Disposition', 'attachment; filename="tollgate-requests.csv"');
          response.status(route.status ?? 200).type('text/csv; charset=utf-8').send(result);
        } else {
          response.status(route.status ?? 200).json(result);
        }
      } catch (error) {
        next(error);
      }
    });
  }
  // Known paths with another method: 405 with Allow; anything else under /v1/admin: 404.
  const allowed = new Map<string, string[]>();
  for (const route of routes) allowed.set(route.path, [...(allowed.get(route.path) ?? []), route.method.toUpperCase()]);
  for (const [path, methods] of allowed) {
    router.all(path.replace(/\{(\w+)\}/g, ':$1'), (_request: Request, response: Response) => {
      response.setHeader('Allow', methods.join(', '));
      sendGatewayError(response, String(response.getHeader('Tollgate-Request-Id') ?? ''), new GatewayError('invalidRequest', 'Method not allowed on this route.', { status: 405, reason: 'method_not_allowed' }));
    });
  }
  router.use((request: Request, response: Response) => {
    sendGatewayError(response, String(response.getHeader('Tollgate-Request-Id') ?? ''), new GatewayError('notFound', 'No such management route (see /v1/admin/openapi.json).', { reason: 'no_route' }), request);
  });
  router.use((error: unknown, request: Request, response: Response, _next: NextFunction) => {
    const gatewayError = toGatewayError(error);
    if (gatewayError.type === 'internalError') deps.onInternalError?.(error);
    else if (gatewayError.type === 'serviceUnavailable') deps.onUnavailable?.(gatewayError);
    sendGatewayError(response, String(response.getHeader('Tollgate-Request-Id') ?? ''), gatewayError, request);
  });
  return router;
}
