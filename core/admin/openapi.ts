/**
 * The OpenAPI 3.1 document of the management API, built from the same route table that mounts the routes (so the two
 * cannot drift) and from the class-validator DTOs (class-validator-jsonschema turns their decorators into JSON Schema,
 * so the document states exactly what the validator accepts).
 */
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import type { AdminRoute } from './admin-routes';

type Schema = Record<string, unknown>;

const string = { type: 'string' };
const dateTime = { type: 'string', format: 'date-time' };
const nullable = (schema: Schema): Schema => ({ oneOf: [schema, { type: 'null' }] });
const object = (properties: Record<string, Schema>, required = Object.keys(properties)): Schema => ({ type: 'object', properties, required });
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** Response shapes (the DTO schemas describe request bodies). */
const RESPONSE_SCHEMAS: Record<string, Schema> = {
  Error: object({
    error: object(
      {
        type: { type: 'string', enum: ['unauthorized', 'forbidden', 'invalidRequest', 'notFound', 'conflict', 'rateLimited', 'serviceUnavailable', 'internalError'] },
        reason: { type: 'string', pattern: '^[a-z][a-z0-9_]*$', description: 'a stable snake_case reason (docs/reference/errors.md)' },
        message: string,
        requestId: string,
        fields: { type: 'object', additionalProperties: { type: 'array', items: string }, description: 'each failing field and why (validation errors)' },
      },
      ['type', 'reason', 'message', 'requestId'],
    ),
  }),
  AppSettings: { type: 'object', description: 'the app settings; see AppSettingsInput for each field', additionalProperties: true },
  App: object({
    id: string,
    name: string,
    status: { type: 'string', enum: ['active', 'disabled'] },
    tokenHint: string,
    previousToken: nullable(object({ tokenHint: string, expiresAt: dateTime })),
    settings: ref('AppSettings'),
    createdAt: dateTime,
    updatedAt: dateTime,
  }),
  CreatedApp: {
    allOf: [ref('App'), object({ appToken: { type: 'string', pattern: '^at_[0-9A-Za-z]{32}$', description: 'shown once, never again' } })],
  },
  RotatedToken: object({ id: string, appToken: { type: 'string', pattern: '^at_[0-9A-Za-z]{32}$' }, tokenHint: string, previousToken: nullable(object({ tokenHint: string, expiresAt: dateTime })) }),
  Deleted: object({ id: string, deleted: { const: true } }),
  Webhook: object({ id: string, appId: string, url: string, events: { type: 'array', items: string }, createdAt: dateTime }),
  CreatedWebhook: { allOf: [ref('Webhook'), object({ secret: { type: 'string', pattern: '^whsec_', description: 'the Standard Webhooks signing secret, shown once' } })] },
  WebhookDelivery: object({ id: string, webhookId: string, type: string, status: { type: 'string', enum: ['pending', 'delivered', 'failed'] }, attempts: { type: 'integer' }, lastStatus: nullable({ type: 'integer' }), lastError: nullable(string), createdAt: dateTime, nextAttemptAt: nullable(dateTime), finishedAt: nullable(dateTime) }),
  EndUser: object({ id: string, appId: string, issuer: string, profile: nullable(string), firstSeenAt: dateTime, lastSeenAt: dateTime, blocked: { type: 'boolean' }, blockedAt: nullable(dateTime) }),
  EndUserLimits: object({
    id: string,
    issuer: string,
    profile: { ...nullable(string), description: "the profile of the user's last seen token (its tier claim); null: the app's own limits" },
    profileApplies: { type: 'boolean', description: 'false: the profile names no profile of the app now, and the app\'s own limits hold' },
    limits: {
      type: 'array',
      description: "the user's limits (across all the user's devices) and the app's, as GET /v1/me answers them; per-device limits are left out",
      items: object({
        name: { type: 'string', description: 'e.g. user-requests-minute, user-tokens-day, app-requests-day, user-session-seconds-day' },
        scope: { type: 'string', enum: ['user', 'app'] },
        unit: { type: 'string', enum: ['requests', 'tokens', 'seconds'] },
        limit: { type: 'integer' },
        remaining: { type: 'integer' },
        window: { type: 'string', enum: ['minute', 'day'] },
        resetsAt: dateTime,
      }),
    },
  }),
  EndUserDevice: object({
    deviceId: string,
    platform: nullable({ type: 'string', enum: ['ios', 'android', 'development', 'other'] }),
    method: nullable(string),
    requests: { type: 'integer', description: "this user's requests from the device in the request log" },
    firstSeenAt: { ...dateTime, description: "the user's first request from the device in the request log" },
    lastSeenAt: { ...dateTime, description: "the user's last request from the device" },
    lastAttestedAt: nullable(dateTime),
    revokedAt: nullable(dateTime),
  }),
  Secret: object({
    appId: string,
    provider: string,
    masked: { type: 'string', description: 'the value masked, e.g. sk-…abcd (nothing of a value under 24 characters, a JSON or a PEM value); never the value' },
    baseUrl: nullable(string),
    updatedAt: dateTime,
    lastUsedAt: { ...nullable(dateTime), description: 'the last request forwarded with this key (recorded with each usage batch, about a second late); null: not used since it was set' },
  }),
  KeyCheck: object({
    appId: string,
    provider: string,
    outcome: { type: 'string', enum: ['ok', 'rejected', 'unexpected', 'unreachable'], description: 'ok: 2xx; rejected: 401/403 (or a computed credential that could not be made); unexpected: another status; unreachable: no answer' },
    status: nullable({ type: 'integer', description: 'the provider’s HTTP status' }),
    latencyMs: { type: 'integer' },
    request: { type: 'string', description: 'what was requested, e.g. GET v1/models' },
    checkedAt: dateTime,
  }),
  AttestationSecret: object({ appId: string, name: string, masked: { type: 'string', description: 'masked like provider keys (a service-account JSON shows only its client_email domain); never the value' }, updatedAt: dateTime }),
  AttestationSecretDeleted: object({ appId: string, name: string, deleted: { const: true } }),
  SecretDeleted: object({ appId: string, provider: string, deleted: { const: true } }),
  DevelopmentToken: object({ id: string, tokenHint: string, label: nullable(string), createdAt: dateTime, revokedAt: nullable(dateTime) }),
  CreatedDevelopmentToken: object({ id: string, appId: string, developmentToken: { type: 'string', pattern: '^dt_[0-9A-Za-z]{32}$', description: 'shown once' }, allowed: { type: 'boolean' } }),
  DevelopmentTokenRevoked: object({ appId: string, id: string, revoked: { const: true } }),
  Device: object({ deviceId: string, method: string, platform: { type: 'string', enum: ['ios', 'android', 'development', 'other'] }, firstSeenAt: dateTime, lastAttestedAt: dateTime, revokedAt: nullable(dateTime) }),
  DeviceList: object({
    devices: { type: 'array', items: ref('Device') },
    total: { type: 'integer', description: 'devices that match the filters, all pages' },
    limit: { type: 'integer' },
    offset: { type: 'integer' },
    nextOffset: nullable({ type: 'integer', description: 'the offset of the next page; null on the last' }),
  }),
  DeviceDetail: {
    allOf: [ref('Device'), object({ lastSeenAt: { ...nullable(dateTime), description: 'its last request in the request log (null: none kept)' } })],
  },
  DeviceRevoked: object({ appId: string, deviceId: string, revoked: { const: true } }),
  DevicesRevoked: object({ appId: string, revokedBefore: dateTime }),
  Usage: object({
    fromMs: { type: 'integer' },
    toMs: { type: 'integer' },
    totalRequests: { type: 'integer' },
    requestsPerMinute: {
      type: 'array',
      items: object({ minute: { type: 'integer' }, requests: { type: 'integer' }, errors: { type: 'integer' }, tokens: { type: 'integer' }, budgetRefusals: { type: 'integer', description: 'refusals by a token budget (reason token_budget), counted in errors too' } }),
    },
    errorsByType: { type: 'array', items: object({ type: string, count: { type: 'integer' } }) },
    latencyByProvider: { type: 'array', items: object({ provider: string, requests: { type: 'integer' }, p50Ms: { type: 'number' }, p95Ms: { type: 'number' } }) },
    topDevices: { type: 'array', items: object({ deviceId: string, requests: { type: 'integer' } }) },
    verification: object({ verified: { type: 'integer' }, unverified: { type: 'integer' } }),
    tokens: {
      type: 'object',
      description: 'tokens as the providers reported them (requests whose usage is unknown are left out)',
      properties: {
        inputTokens: { type: 'integer' },
        outputTokens: { type: 'integer' },
        cachedTokens: { type: 'integer' },
        reasoningTokens: { type: 'integer' },
        requestsWithUsage: { type: 'integer' },
        byApp: { type: 'array', items: { type: 'object', description: 'all-apps summary only: appId, requests and the token counts' } },
        byDevice: { type: 'array', items: { type: 'object', description: 'top 10 devices: deviceId, requests and the token counts' } },
        byProvider: { type: 'array', items: { type: 'object', description: 'provider, requests and the token counts' } },
        byModel: { type: 'array', items: { type: 'object', description: 'top 50 models: model, requests and the token counts' } },
      },
      required: ['inputTokens', 'outputTokens', 'cachedTokens', 'reasoningTokens', 'byDevice', 'byProvider', 'byModel'],
    },
    spend: nullable(
      object({
        currency: { const: 'USD' },
        totalUsd: { type: 'number' },
        unpricedTokens: { type: 'integer', description: 'tokens of models without a price (not in the total)' },
        priceAsOf: { type: 'array', items: string, description: 'every price date the total used: YYYY-MM-DD of the default price table, or "operator price"' },
        byModel: { type: 'array', items: object({ provider: string, model: string, usd: { type: 'number' }, priceAsOf: { type: 'string', description: 'YYYY-MM-DD of the default price table, or "operator price"' } }) },
        byDevice: { type: 'array', items: object({ deviceId: string, usd: { type: 'number' } }) },
        byApp: { type: 'array', description: 'all-apps summary only (empty for one app): the top 50 apps by spend', items: object({ appId: string, usd: { type: 'number' } }) },
        perMinute: { type: 'array', description: "one device's or one user's summary only: the estimated spend per minute (minutes without spend left out)", items: object({ minute: { type: 'integer' }, usd: { type: 'number' } }) },
      }, ['currency', 'totalUsd', 'unpricedTokens', 'priceAsOf', 'byModel', 'byDevice', 'byApp']),
    ),
    realtime: { ...object({ sessions: { type: 'integer' }, seconds: { type: 'integer' } }), description: 'realtime sessions that started in the window (rows written when they end), and their open seconds summed' },
  }),
  Price: object({ provider: string, model: string, inputUsdPerMillion: { type: 'number' }, outputUsdPerMillion: { type: 'number' }, updatedAt: dateTime }),
  PriceDeleted: object({ provider: string, model: string, deleted: { const: true } }),
  DefaultPrices: object({
    enabled: { type: 'boolean', description: 'false: TOLLGATE_DEFAULT_PRICES=false, spend uses the operator prices only' },
    sources: { type: 'object', additionalProperties: object({ url: string, asOf: { type: 'string', format: 'date' } }), description: "each provider's price page and the day it was read" },
    prices: {
      type: 'array',
      items: object({
        provider: string,
        model: string,
        inputUsdPerMillion: { type: 'number' },
        outputUsdPerMillion: { type: 'number' },
        priceAsOf: { type: 'string', format: 'date', description: "the day the provider's price page was read" },
        source: string,
        overridden: { type: 'boolean', description: 'an operator price for this provider and model wins over this row' },
      }),
    },
  }),
  Integration: object({
    platform: { type: 'string', enum: ['ios', 'android', 'flutter', 'react-native'] },
    language: string,
    install: string,
    configuration: { type: 'array', items: object({ file: string, place: string, language: string, content: string }) },
    initializationPlace: string,
    initialization: string,
    request: string,
    features: {
      type: 'array',
      description: 'beside the request: a realtime session, a signed-in user (setUserTokenProvider), me(), and a provider SDK through Tollgate',
      items: object({ id: { type: 'string', enum: ['realtime', 'signed-in-user', 'me', 'provider-sdk'] }, title: string, description: string, content: string }),
    },
    code: string,
    generic: { type: 'boolean' },
    development: { type: 'boolean' },
  }),
  AdminKey: object({ id: string, name: string, keyHint: string, scopes: ref('AdminScopes'), createdAt: dateTime, expiresAt: { ...nullable(dateTime), description: 'when the key stops working (null: never)' }, revokedAt: nullable(dateTime) }),
  AdminScopes: {
    type: 'array',
    items: { type: 'string', enum: ['read', 'apps', 'secrets', 'admin'] },
    description: 'read: every GET; apps: apps, settings, tokens, devices, end users, webhooks, prices; secrets: provider keys and attestation credentials; admin: admin keys and dashboard administrators, and everything else',
  },
  CreatedAdminKey: object({ id: string, name: string, scopes: ref('AdminScopes'), expiresAt: nullable(dateTime), adminKey: { type: 'string', pattern: '^ak_[0-9A-Za-z]{32}$', description: 'shown once' } }),
  AdminKeyRevoked: object({ id: string, revoked: { const: true } }),
  AuditEntry: object({ id: { type: 'integer', description: 'increasing with time; pass the last one as before for the next page' }, actor: string, action: string, target: nullable(string), details: nullable({ type: 'object' }), createdAt: dateTime }),
  Provider: object({
    slug: string,
    name: string,
    versions: { type: 'array', items: string },
    capabilities: { type: 'array', items: string },
    streaming: { type: 'array', items: string },
    perTenantHost: { type: 'boolean', description: 'the secret needs a baseUrl (the tenant’s own host)' },
    accountRoutes: {
      type: 'array',
      description: 'account-class routes, closed unless an app opens them (openAccountRoutes); why says what opening exposes',
      items: object({ methods: { type: 'array', items: string }, path: string, why: string }),
    },
    integrationCapabilities: { type: 'array', items: string, description: 'the capabilities the integration-code generator offers for this provider' },
    keyCheck: nullable({ type: 'string', description: 'the request "test this key" sends, e.g. GET v1/models; null: the key cannot be tested' }),
  }),
  RequestLog: object({
    requests: {
      type: 'array',
      items: object({
        id: { type: 'integer' },
        createdAt: dateTime,
        deviceId: nullable(string),
        userId: { ...nullable(string), description: "the signed-in user (the sign-in provider's sub); null without a user token" },
        provider: string,
        method: nullable(string),
        route: nullable(string),
        status: { type: 'integer' },
        errorType: nullable(string),
        reason: nullable(string),
        latencyMs: { type: 'integer' },
        bytesIn: { type: 'integer' },
        bytesOut: { type: 'integer' },
        truncated: { type: 'boolean' },
        requestId: nullable(string),
        inputTokens: nullable({ type: 'integer', description: 'as the provider reported them; null: usage unknown' }),
        outputTokens: nullable({ type: 'integer' }),
        model: nullable(string),
        estimatedUsd: nullable({ type: 'number', description: "tokens × the model's price; null: no tokens reported or no price for the model" }),
        priceAsOf: nullable({ type: 'string', description: 'the price the estimate used: YYYY-MM-DD of the default price table, or "operator price"' }),
        session: nullable(
          object(
            {
              framesIn: { type: 'integer' },
              framesOut: { type: 'integer' },
              closeCode: { type: 'integer' },
              closeReason: string,
              closedBy: { type: 'string', enum: ['client', 'provider', 'gateway'] },
              audioSeconds: { type: 'number' },
            },
            ['framesIn', 'framesOut', 'closeCode', 'closeReason', 'closedBy'],
          ),
        ),
      }),
    },
    nextBefore: nullable({ type: 'integer' }),
  }),
  User: object({ id: string, username: string, createdAt: dateTime, lockedUntil: nullable(dateTime) }),
  PasswordChanged: object({ changed: { const: true } }),
  RequestLogCsv: { type: 'string', description: 'CSV (RFC 4180) with a header row' },
  Session: object({ user: object({ id: string, username: string }), csrfToken: string, expiresAt: dateTime }),
  SignedOut: object({ signedOut: { const: true } }),
};

function responseSchema(shape: AdminRoute['response']): Schema {
  return shape.array ? { type: 'array', items: ref(shape.schema) } : ref(shape.schema);
}

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ref('Error') } } });

/**
 * The DTO schemas. A custom constraint on a plain-object property (`@Validate` on a `Record`) comes out as a `$ref` to
 * a schema named `Object` (or `Array`) that does not exist; its `@JSONSchema` override already says what it accepts, so the
 * dangling reference is dropped.
 */
function dtoSchemas(): Record<string, Schema> {
  const schemas = validationMetadatasToSchemas({ refPointerPrefix: '#/components/schemas/' }) as Record<string, Schema>;
  for (const schema of Object.values(schemas)) {
    for (const property of Object.values((schema.properties ?? {}) as Record<string, Schema>)) {
      if (property.$ref === '#/components/schemas/Object' || property.$ref === '#/components/schemas/Array') delete property.$ref;
    }
  }
  return schemas;
}

/** Builds the document; `routes` is the admin route table. */
export function buildOpenApiDocument(routes: readonly AdminRoute[], version: string, pathEnums: Readonly<Record<string, readonly string[]>> = {}): Schema {
  const pathSchema = (name: string): Schema => (pathEnums[name]?.length ? { type: 'string', enum: [...pathEnums[name]!] } : { type: 'string', minLength: 1, maxLength: 200 });
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const parameters = [
      ...(route.path.match(/\{(\w+)\}/g) ?? []).map((match) => ({ name: match.slice(1, -1), in: 'path', required: true, schema: pathSchema(match.slice(1, -1)) })),
      ...(route.query ?? []).map((parameter) => ({ name: parameter.name, in: 'query', required: false, description: parameter.description, schema: parameter.schema })),
    ];
    const responses: Record<string, unknown> = {
      [String(route.status ?? 200)]: { description: route.response.description, content: { [route.response.csv ? 'text/csv' : 'application/json']: { schema: responseSchema(route.response) } } },
      '400': errorResponse('invalid input: error.fields names each failing field'),
    };
    responses['401'] = errorResponse(route.public ? 'wrong user name or password, or an invalid set-up token' : 'missing, wrong or expired credentials (admin_key_expired)');
    if (!route.public) {
      responses['403'] = errorResponse(
        route.method !== 'get'
          ? `an admin key without the ${route.scope} scope (scope_insufficient), or a dashboard session without its CSRF token or from another origin`
          : `an admin key without the ${route.scope} scope (scope_insufficient)`,
      );
    }
    if (route.path.includes('{') || route.findsByQuery) responses['404'] = errorResponse('no such app, secret, device, key or price');
    if (route.rateLimited) responses['429'] = errorResponse('too many attempts; see Retry-After');
    if (route.conflicts) responses['409'] = errorResponse('conflicts with the current state (a taken name, yourself, the last administrator)');
    paths[route.path] ??= {};
    paths[route.path]![route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.public ? {} : { description: `Needs an admin key with the \`${route.scope}\` scope${route.scope === 'admin' ? '' : ' (or `admin`)'}, or a dashboard session.` }),
      tags: [route.tag],
      ...(route.public ? {} : { 'x-tollgate-scope': route.scope }),
      ...(route.public ? { security: [] } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: ref(route.body.name) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tollgate management API',
      version,
      description:
        'Apps, per-app settings and limits, secrets (write-only: listed masked, never returned), development tokens, devices, usage, admin keys and the audit log. Authenticate with `Authorization: Bearer ak_…` or the dashboard session cookie (state-changing requests then carry `X-CSRF-Token`). Each operation names the admin-key scope it needs in `x-tollgate-scope` (read, apps, secrets or admin; admin implies all); a key without it gets 403 `scope_insufficient`, an expired key 401 `admin_key_expired`. Errors follow the gateway error shape.',
    },
    servers: [{ url: '/v1/admin' }],
    security: [{ adminKey: [] }, { dashboardSession: [] }],
    paths,
    components: {
      securitySchemes: {
        adminKey: { type: 'http', scheme: 'bearer', description: 'an admin key, `ak_…` (tollgate admin-keys create --scope …), holding the scopes each operation names in x-tollgate-scope' },
        dashboardSession: { type: 'apiKey', in: 'cookie', name: 'tollgate_session' },
      },
      schemas: { ...dtoSchemas(), ...RESPONSE_SCHEMAS },
    },
  };
}
