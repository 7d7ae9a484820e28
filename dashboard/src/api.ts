/** The management API client of the dashboard: same origin, session cookie, CSRF token on every change. */
export interface ApiErrorBody {
  readonly type: string;
  readonly reason?: string;
  readonly message: string;
  readonly fields?: Record<string, string[]>;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody,
  ) {
    super(body.message);
  }
}

let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrfToken;
  const response = await fetch(`/v1/admin${path}`, { method, headers, credentials: 'same-origin', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await response.text();
  const parsed: unknown = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const error = (parsed as { error?: ApiErrorBody } | null)?.error ?? { type: 'internalError', message: `HTTP ${response.status}` };
    throw new ApiError(response.status, error);
  }
  return parsed as T;
}

export interface Session {
  user: { id: string; username: string };
  csrfToken: string;
  expiresAt: string;
}

export interface App {
  id: string;
  name: string;
  status: 'active' | 'disabled';
  tokenHint: string;
  previousToken: { tokenHint: string; expiresAt: string } | null;
  settings: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface User {
  id: string;
  username: string;
  createdAt: string;
  lockedUntil: string | null;
}

export interface RequestLog {
  requests: Array<{
    id: number;
    createdAt: string;
    deviceId: string | null;
    /** The signed-in user (the sign-in provider's `sub`); null without a user token. */
    userId?: string | null;
    provider: string;
    method: string | null;
    route: string | null;
    status: number;
    errorType: string | null;
    reason: string | null;
    latencyMs: number;
    bytesIn: number;
    bytesOut: number;
    truncated: boolean;
    requestId: string | null;
    /** Tokens × the model's price; null without tokens or without a price. */
    estimatedUsd?: number | null;
    /** The price the estimate used: the default table's date (YYYY-MM-DD) or "operator price". */
    priceAsOf?: string | null;
    /** Tokens the provider reported (null: usage unknown), and the model. */
    inputTokens: number | null;
    outputTokens: number | null;
    model: string | null;
    /** A realtime session's own figures (its row's `latencyMs` is its duration); null for an HTTP request. */
    session: RealtimeSessionFigures | null;
  }>;
  nextBefore: number | null;
}

export interface RealtimeSessionFigures {
  framesIn: number;
  framesOut: number;
  closeCode: number;
  closeReason: string;
  closedBy: 'client' | 'provider' | 'gateway';
  /** Where the provider reports it. */
  audioSeconds?: number;
}

/** A signed-in user of an app, by the sign-in provider's `sub`. */
export interface EndUser {
  id: string;
  appId: string;
  issuer: string;
  profile: string | null;
  firstSeenAt: string;
  lastSeenAt: string;
  blocked: boolean;
  blockedAt: string | null;
}

/** A limit or budget with what remains of it, as `GET /v1/me` and a user's page read them. */
export interface Limit {
  name: string;
  scope: 'device' | 'user' | 'app';
  unit: 'requests' | 'tokens' | 'seconds';
  limit: number;
  remaining: number;
  window: 'minute' | 'day';
  resetsAt: string;
}

/** The limits and budgets that hold for a user (`…/users/{userId}/limits`). */
export interface EndUserLimits {
  id: string;
  issuer: string;
  profile: string | null;
  profileApplies: boolean;
  limits: Limit[];
}

/** A device a user's requests came from (`…/users/{userId}/devices`). */
export interface EndUserDevice {
  deviceId: string;
  platform: 'ios' | 'android' | 'development' | 'other' | null;
  method: string | null;
  requests: number;
  firstSeenAt: string;
  lastSeenAt: string;
  lastAttestedAt: string | null;
  revokedAt: string | null;
}

export interface Webhook {
  id: string;
  appId: string;
  url: string;
  events: string[];
  createdAt: string;
}

export interface WebhookDelivery {
  id: string;
  webhookId: string;
  type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  nextAttemptAt: string | null;
  finishedAt: string | null;
}

export interface Secret {
  appId: string;
  provider: string;
  masked: string;
  baseUrl: string | null;
  updatedAt: string;
  /** The last request forwarded with this key; null: not used since it was set. */
  lastUsedAt?: string | null;
}

export interface Provider {
  slug: string;
  name: string;
  versions: string[];
  capabilities: string[];
  streaming: string[];
  perTenantHost: boolean;
  integrationCapabilities: string[];
  /** Account-class routes, closed unless an app opens them; `why` says what opening exposes. */
  accountRoutes: Array<{ methods: string[]; path: string; why: string }>;
  /** What "test this key" sends (e.g. `GET v1/models`); null: the provider declares no key check. */
  keyCheck?: string | null;
}

export interface Usage {
  totalRequests: number;
  /** `budgetRefusals`: refusals by a token budget (reason token_budget), counted in `errors` too. */
  requestsPerMinute: Array<{ minute: number; requests: number; errors: number; tokens?: number; budgetRefusals?: number }>;
  errorsByType: Array<{ type: string; count: number }>;
  latencyByProvider: Array<{ provider: string; requests: number; p50Ms: number; p95Ms: number }>;
  topDevices: Array<{ deviceId: string; requests: number }>;
  verification: { verified: number; unverified: number };
  /** Estimated spend: the operator's prices, else the dated default table; null when there is neither. */
  spend?: {
    currency: 'USD';
    totalUsd: number;
    unpricedTokens: number;
    /** Every price date the total used: YYYY-MM-DD of the default table, or "operator price". */
    priceAsOf: string[];
    byModel: Array<{ provider: string; model: string; usd: number; priceAsOf: string }>;
    byDevice: Array<{ deviceId: string; usd: number }>;
    /** All-apps summary only. */
    byApp?: Array<{ appId: string; usd: number }>;
    /** One device's or one user's summary only: the spend per minute (minutes without spend left out). */
    perMinute?: Array<{ minute: number; usd: number }>;
  } | null;
  tokens?: TokenSums & {
    /** All-apps summary only. */
    byApp?: Array<{ appId: string } & TokenSums>;
    byDevice: Array<{ deviceId: string } & TokenSums>;
    byProvider: Array<{ provider: string } & TokenSums>;
    byModel: Array<{ model: string } & TokenSums>;
  };
  /** Realtime sessions that started in the window and their open seconds. */
  realtime?: { sessions: number; seconds: number };
}

export interface TokenSums {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
  requests?: number;
  requestsWithUsage?: number;
}

/** One row of the operator's price table (USD per million tokens). */
export interface Price {
  provider: string;
  model: string;
  inputUsdPerMillion: number;
  outputUsdPerMillion: number;
  updatedAt: string;
}

/** The dated default price table (`GET /v1/admin/prices/defaults`). */
export interface DefaultPrices {
  enabled: boolean;
  prices: Array<{ provider: string; model: string; inputUsdPerMillion: number; outputUsdPerMillion: number; priceAsOf: string; source: string; overridden: boolean }>;
}

/** "Test this key": the outcome of one harmless request with the stored key (never the key or the provider's body). */
export interface KeyCheck {
  appId: string;
  provider: string;
  outcome: 'ok' | 'rejected' | 'unexpected' | 'unreachable';
  status: number | null;
  latencyMs: number;
  request: string;
  checkedAt: string;
}

export interface Device {
  deviceId: string;
  method: string;
  platform: 'ios' | 'android' | 'development' | 'other';
  firstSeenAt: string;
  lastAttestedAt: string;
  revokedAt: string | null;
  /** Device detail only: its last request in the request log. */
  lastSeenAt?: string | null;
}

export interface DevicePage {
  devices: Device[];
  total: number;
  limit: number;
  offset: number;
  nextOffset: number | null;
}
