/**
 * The operator's configuration (docs/reference/configuration.md). Environment variables win over an optional
 * `tollgate.config.json` in the working directory, which may set the same keys.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { TollgateError } from '../contract';

export type Environment = 'development' | 'production';

/** The resolved configuration. Every field has its documented default. */
export interface Configuration {
  /** `TOLLGATE_PORT`, default 8080; 0 picks a free port. */
  readonly port: number;
  /** `TOLLGATE_HOST`, default 127.0.0.1. */
  readonly host: string;
  /** `TOLLGATE_ENV`, default `development` (`production` when `NODE_ENV=production`). */
  readonly environment: Environment;
  readonly production: boolean;
  /** `TOLLGATE_DATA_DIR`, default `./data` (absolute here). */
  readonly dataDirectory: string;
  /** `TOLLGATE_DATABASE_URL`: `postgres://…`; unset means SQLite in the data directory. */
  readonly databaseUrl: string | undefined;
  /** `TOLLGATE_REDIS_URL`. */
  readonly redisUrl: string | undefined;
  /** `TOLLGATE_MASTER_KEY` (base64 of 32 bytes). */
  readonly masterKey: string | undefined;
  /** `TOLLGATE_MASTER_KEY_FILE`. */
  readonly masterKeyFile: string | undefined;
  /** `TOLLGATE_LOG_LEVEL`, default `info`. */
  readonly logLevel: string;
  /** `TOLLGATE_PLUGINS`: npm package names. */
  readonly plugins: readonly string[];
  /** `TOLLGATE_MAX_BODY_BYTES`, default 25 MiB: largest request body forwarded. */
  readonly maxBodyBytes: number;
  /**
   * `TOLLGATE_SIGNED_BODY_MAX_BYTES`, default 8 MiB: largest body of a provider that signs over the whole body (AWS
   * SigV4: Bedrock), which the gateway holds in memory to sign; a larger one is refused 413 `signed_body_too_large`.
   */
  readonly signedBodyMaxBytes: number;
  /**
   * `TOLLGATE_SIGNED_BODY_BUDGET_BYTES`, default 64 MiB: the bytes of such bodies the process holds at once; past it a
   * request is refused 503 `signed_body_budget_exhausted` with `Retry-After`.
   */
  readonly signedBodyBudgetBytes: number;
  /** `TOLLGATE_UPSTREAM_CONNECT_TIMEOUT_MS`, default 10 000: TCP connect to the provider. */
  readonly upstreamConnectTimeoutMs: number;
  /** `TOLLGATE_UPSTREAM_TIMEOUT_MS`, default 120 000: from sending the request to the first response byte. */
  readonly upstreamFirstByteTimeoutMs: number;
  /**
   * `TOLLGATE_UPSTREAM_MAX_SOCKETS`, default 0 (no cap): open connections per upstream host before requests queue (each
   * queued request waits at most `TOLLGATE_UPSTREAM_QUEUE_TIMEOUT_MS`).
   */
  readonly upstreamMaxSockets: number;
  /** `TOLLGATE_CHANGE_POLL_MS`, default 1000: how often caches look for changes made by other processes. */
  readonly changePollMs: number;
  /** The first webhook retry's delay, each next one four times longer (`TOLLGATE_WEBHOOK_RETRY_MS`, default 5000). */
  readonly webhookRetryMs: number;
  /** `TOLLGATE_REQUEST_LOG_RETENTION_DAYS`, default 30 (7 to 3650): per-request rows (request log, usage) older than this are deleted hourly. */
  readonly requestLogRetentionDays: number;
  /**
   * `TOLLGATE_DEFAULT_PRICES`, default true: spend is estimated from the dated default price table
   * (the provider manifests' `prices`) where the operator set no price; false: from the operator's prices only.
   */
  readonly defaultPrices: boolean;
  /** `TOLLGATE_PUBLIC_URL`: the gateway's address as apps reach it (generated code embeds it). Default: the listen address. */
  readonly publicUrl: string | undefined;
  /** `TOLLGATE_HEADERS_TIMEOUT_MS`, default 20 000: a client must send its whole request head within this (slow-loris). */
  readonly headersTimeoutMs: number;
  /**
   * `TOLLGATE_REQUEST_TIMEOUT_MS`, default 30 000: every route but the proxy must have received its whole request (head
   * and body) within this; a client still sending gets 408 and the connection closes.
   */
  readonly requestTimeoutMs: number;
  /**
   * `TOLLGATE_BODY_IDLE_TIMEOUT_MS`, default 15 000: on every route (proxy included), a request body that makes no
   * progress for this long (while the gateway is waiting for it) is cut off.
   */
  readonly bodyIdleTimeoutMs: number;
  /** `TOLLGATE_KEEP_ALIVE_TIMEOUT_MS`, default 65 000: an idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /**
   * `TOLLGATE_TRUST_PROXY`, default false: the gateway runs behind one reverse proxy that sets `X-Forwarded-For`,
   * `X-Forwarded-Proto` and `X-Forwarded-Host`; per-address limits then use the address that proxy saw, and the
   * dashboard's Origin check (without `TOLLGATE_PUBLIC_URL`) the scheme and host it was reached at.
   */
  readonly trustProxy: boolean;
  /**
   * `TOLLGATE_MONITOR_MODE`, default `allow`: `off` makes every app enforce attestation whatever its `attestationMode`
   * (no request is forwarded unverified), a switch on the host that no admin key can undo.
   */
  readonly monitorMode: 'allow' | 'off';
  /** `TOLLGATE_SHUTDOWN_GRACE_MS`, default 30 000: how long in-flight streams may finish on SIGTERM. */
  readonly shutdownGraceMs: number;
  /**
   * `TOLLGATE_STREAM_LEASE_MS`, default 20 000 (300 to 30 000): the lease on an open-request slot, renewed every third
   * of it while the request runs. A crashed node's slots free themselves within one lease.
   */
  readonly streamLeaseMs: number;
  /** `TOLLGATE_DATABASE_ACQUIRE_TIMEOUT_MS`, default 5000: longest wait for a PostgreSQL connection (pool or new). */
  readonly databaseAcquireTimeoutMs: number;
  /**
   * `TOLLGATE_DATABASE_QUERY_TIMEOUT_MS`, default 15 000: longest PostgreSQL statement (server-side `statement_timeout`
   * and client-side `query_timeout`, so a frozen server cannot hold a request either). 0 turns both off.
   */
  readonly databaseQueryTimeoutMs: number;
  /**
   * `TOLLGATE_SHARED_STORE_FAILURE`, default `refuse`: what a node does while the shared store (Redis) cannot answer:
   * `refuse` (fail closed) or `local` (in-process limits and budgets at the node's share; docs/guides/scale-out.md).
   */
  readonly sharedStoreFailure: 'refuse' | 'local';
  /**
   * `TOLLGATE_SQLITE_SYNCHRONOUS`, default `full`: SQLite's `synchronous` pragma. `full` makes every acknowledged change
   * survive a power cut (the WAL is synced at each commit); `normal` loses up to the last ~30 s of changes on a power
   * cut (not on a crash of the process) for fewer syncs. docs/guides/production.md, "Durability".
   */
  readonly sqliteSynchronous: 'full' | 'normal';
  /** `TOLLGATE_READINESS_TIMEOUT_MS`, default 2000: each `/readyz` check that has not answered by then is `failing`. */
  readonly readinessTimeoutMs: number;
  /** `TOLLGATE_UPSTREAM_QUEUE_TIMEOUT_MS`, default 10 000: longest wait for a free upstream socket (with a socket cap set). */
  readonly upstreamQueueTimeoutMs: number;
  /** `TOLLGATE_UPSTREAM_IDLE_TIMEOUT_MS`, default 300 000: a started response that sends no byte for this long is cut. 0 turns it off. */
  readonly upstreamIdleTimeoutMs: number;
  /**
   * `TOLLGATE_ADMIN_PORT`: when set, a second listener serves the dashboard, `/v1/admin/*`, `/mcp` and `/metrics`, and
   * the public port answers them 404 (core/server/admin-listener.ts). Unset: one listener serves everything.
   */
  readonly adminPort: number | undefined;
  /** `TOLLGATE_ADMIN_HOST`, default 127.0.0.1: the admin listener's address. */
  readonly adminHost: string;
  /** `TOLLGATE_ADMIN_PUBLIC_URL`: the admin listener's address as browsers reach it (the dashboard's Origin check). */
  readonly adminPublicUrl: string | undefined;
  /** `TOLLGATE_PROVIDER_<SLUG>_BASE_URL` overrides, keyed by the upper-cased variable stem (`OPENAI`, `AZURE_OPENAI`). */
  readonly providerBaseUrls: Readonly<Record<string, string>>;
  /** `TOLLGATE_PROVIDER_<SLUG>_REALTIME_URL` overrides of a provider's realtime socket origin, keyed like `providerBaseUrls`. */
  readonly providerRealtimeUrls?: Readonly<Record<string, string>>;
  /** `TOLLGATE_REALTIME_MAX_FRAME_BYTES`: the largest WebSocket message relayed either way (default 4 MiB). */
  readonly realtimeMaxFrameBytes: number;
}

type Source = Readonly<Record<string, string | undefined>>;

function readConfigFile(workingDirectory: string): Record<string, string> {
  const file = path.join(workingDirectory, 'tollgate.config.json');
  if (!existsSync(file)) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new TollgateError('TG_ERR_CONFIGURATION', `tollgate.config.json is not valid JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new TollgateError('TG_ERR_CONFIGURATION', 'tollgate.config.json must hold one JSON object of TOLLGATE_* keys');
  }
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!key.startsWith('TOLLGATE_')) {
      throw new TollgateError('TG_ERR_CONFIGURATION', `tollgate.config.json: unknown key "${key}" (keys are TOLLGATE_* names)`);
    }
    out[key] = String(value);
  }
  return out;
}

function boolean(source: Source, name: string, fallback: boolean): boolean {
  const raw = source[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new TollgateError('TG_ERR_CONFIGURATION', `${name} must be true or false, got "${raw}"`);
}

function integer(source: Source, name: string, fallback: number, minimum: number, maximum: number): number {
  const raw = source[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < minimum || value > maximum) {
    throw new TollgateError('TG_ERR_CONFIGURATION', `${name} must be an integer from ${minimum} to ${maximum}, got "${raw}"`);
  }
  return value;
}

function oneOf<T extends string>(source: Source, name: string, allowed: readonly T[], fallback: T): T {
  const raw = source[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new TollgateError('TG_ERR_CONFIGURATION', `${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

/**
 * Reads the configuration from `env` (default `process.env`) and `tollgate.config.json`.
 *
 * @throws TollgateError `TG_ERR_CONFIGURATION` naming the variable at fault.
 */
export function loadConfiguration(env: Source = process.env, workingDirectory = process.cwd()): Configuration {
  const source: Source = { ...readConfigFile(workingDirectory), ...env };
  const environmentName = source.TOLLGATE_ENV ?? (source.NODE_ENV === 'production' ? 'production' : 'development');
  if (environmentName !== 'development' && environmentName !== 'production') {
    throw new TollgateError('TG_ERR_CONFIGURATION', `TOLLGATE_ENV must be "development" or "production", got "${environmentName}"`);
  }
  const databaseUrl = source.TOLLGATE_DATABASE_URL || undefined;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new TollgateError('TG_ERR_CONFIGURATION', 'TOLLGATE_DATABASE_URL must be a postgres:// URL');
  }
  const providerBaseUrls: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    const match = /^TOLLGATE_PROVIDER_([A-Z0-9_]+)_BASE_URL$/.exec(name);
    if (match && value) providerBaseUrls[match[1]!] = value;
  }
  const providerRealtimeUrls: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    const match = /^TOLLGATE_PROVIDER_([A-Z0-9_]+)_REALTIME_URL$/.exec(name);
    if (match && value) providerRealtimeUrls[match[1]!] = value;
  }
  return Object.freeze({
    port: integer(source, 'TOLLGATE_PORT', 8080, 0, 65535),
    host: source.TOLLGATE_HOST || '127.0.0.1',
    environment: environmentName,
    production: environmentName === 'production',
    dataDirectory: path.resolve(workingDirectory, source.TOLLGATE_DATA_DIR || './data'),
    databaseUrl,
    redisUrl: source.TOLLGATE_REDIS_URL || undefined,
    masterKey: source.TOLLGATE_MASTER_KEY || undefined,
    masterKeyFile: source.TOLLGATE_MASTER_KEY_FILE || undefined,
    logLevel: source.TOLLGATE_LOG_LEVEL || 'info',
    plugins: (source.TOLLGATE_PLUGINS ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
    maxBodyBytes: integer(source, 'TOLLGATE_MAX_BODY_BYTES', 25 * 1024 * 1024, 1, 2 ** 40),
    signedBodyMaxBytes: integer(source, 'TOLLGATE_SIGNED_BODY_MAX_BYTES', 8 * 1024 * 1024, 1, 2 ** 40),
    signedBodyBudgetBytes: integer(source, 'TOLLGATE_SIGNED_BODY_BUDGET_BYTES', 64 * 1024 * 1024, 1, 2 ** 40),
    upstreamConnectTimeoutMs: integer(source, 'TOLLGATE_UPSTREAM_CONNECT_TIMEOUT_MS', 10_000, 1, 600_000),
    upstreamFirstByteTimeoutMs: integer(source, 'TOLLGATE_UPSTREAM_TIMEOUT_MS', 120_000, 1, 3_600_000),
    upstreamMaxSockets: integer(source, 'TOLLGATE_UPSTREAM_MAX_SOCKETS', 0, 0, 1_000_000),
    changePollMs: integer(source, 'TOLLGATE_CHANGE_POLL_MS', 1000, 10, 3_600_000),
    webhookRetryMs: integer(source, 'TOLLGATE_WEBHOOK_RETRY_MS', 5000, 10, 3_600_000),
    requestLogRetentionDays: integer(source, 'TOLLGATE_REQUEST_LOG_RETENTION_DAYS', 30, 7, 3650),
    defaultPrices: boolean(source, 'TOLLGATE_DEFAULT_PRICES', true),
    publicUrl: source.TOLLGATE_PUBLIC_URL ? source.TOLLGATE_PUBLIC_URL.replace(/\/$/, '') : undefined,
    headersTimeoutMs: integer(source, 'TOLLGATE_HEADERS_TIMEOUT_MS', 20_000, 100, 600_000),
    requestTimeoutMs: integer(source, 'TOLLGATE_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    bodyIdleTimeoutMs: integer(source, 'TOLLGATE_BODY_IDLE_TIMEOUT_MS', 15_000, 100, 3_600_000),
    keepAliveTimeoutMs: integer(source, 'TOLLGATE_KEEP_ALIVE_TIMEOUT_MS', 65_000, 100, 3_600_000),
    trustProxy: boolean(source, 'TOLLGATE_TRUST_PROXY', false),
    monitorMode: oneOf(source, 'TOLLGATE_MONITOR_MODE', ['allow', 'off'] as const, 'allow'),
    shutdownGraceMs: integer(source, 'TOLLGATE_SHUTDOWN_GRACE_MS', 30_000, 0, 3_600_000),
    databaseAcquireTimeoutMs: integer(source, 'TOLLGATE_DATABASE_ACQUIRE_TIMEOUT_MS', 5000, 100, 600_000),
    databaseQueryTimeoutMs: integer(source, 'TOLLGATE_DATABASE_QUERY_TIMEOUT_MS', 15_000, 0, 3_600_000),
    readinessTimeoutMs: integer(source, 'TOLLGATE_READINESS_TIMEOUT_MS', 2000, 50, 60_000),
    sqliteSynchronous: oneOf(source, 'TOLLGATE_SQLITE_SYNCHRONOUS', ['full', 'normal'] as const, 'full'),
    sharedStoreFailure: oneOf(source, 'TOLLGATE_SHARED_STORE_FAILURE', ['refuse', 'local'] as const, 'refuse'),
    upstreamQueueTimeoutMs: integer(source, 'TOLLGATE_UPSTREAM_QUEUE_TIMEOUT_MS', 10_000, 1, 600_000),
    upstreamIdleTimeoutMs: integer(source, 'TOLLGATE_UPSTREAM_IDLE_TIMEOUT_MS', 300_000, 0, 3_600_000),
    streamLeaseMs: integer(source, 'TOLLGATE_STREAM_LEASE_MS', 20_000, 300, 30_000),
    adminPort: source.TOLLGATE_ADMIN_PORT ? integer(source, 'TOLLGATE_ADMIN_PORT', 0, 0, 65535) : undefined,
    adminHost: source.TOLLGATE_ADMIN_HOST || '127.0.0.1',
    adminPublicUrl: source.TOLLGATE_ADMIN_PUBLIC_URL ? source.TOLLGATE_ADMIN_PUBLIC_URL.replace(/\/$/, '') : undefined,
    providerBaseUrls: Object.freeze(providerBaseUrls),
    providerRealtimeUrls: Object.freeze(providerRealtimeUrls),
    realtimeMaxFrameBytes: integer(source, 'TOLLGATE_REALTIME_MAX_FRAME_BYTES', 4 * 1024 * 1024, 1024, 100 * 1024 * 1024),
  });
}

/** The environment-variable stem of a provider slug: `acme-ai` → `ACME_AI`. */
export function providerVariableStem(slug: string): string {
  return slug.toUpperCase().replace(/-/g, '_');
}
