/**
 * Data access. Every write that changes what the gateway enforces (apps, secrets, tokens, devices) bumps the change
 * feed in the same transaction, so that every process's caches see it within `TOLLGATE_CHANGE_POLL_MS`.
 */
import type { Knex } from 'knex';
import { DEFAULT_APP_SETTINGS, type AppSettings } from '../contract';
import { OPERATOR_PRICE, type DefaultPrice } from './default-prices';
import { parseScopes, type AdminScope } from '../management/admin-scopes';

export interface AppRow {
  readonly id: string;
  readonly name: string;
  readonly tokenHash: string;
  readonly tokenHint: string;
  /** The token replaced by the last rotation, accepted until {@link previousTokenExpiresAt} (null: none). */
  readonly previousTokenHash?: string | null;
  readonly previousTokenHint?: string | null;
  readonly previousTokenExpiresAt?: number | null;
  readonly status: 'active' | 'disabled';
  readonly settings: AppSettings;
  readonly devicesRevokedBefore: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface SecretRow {
  readonly appId: string;
  readonly provider: string;
  readonly sealedValue: string;
  readonly keyId: string;
  readonly masked: string;
  readonly baseUrl: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** The last request forwarded with this key (written in batches by the usage recorder); null: none since it was set. */
  readonly lastUsedAt?: number | null;
}

export interface DeviceRow {
  readonly appId: string;
  readonly deviceId: string;
  readonly method: string;
  readonly publicKey: string | null;
  readonly counter: number;
  readonly createdAt: number;
  readonly lastAttestedAt: number;
  readonly revokedAt: number | null;
}

export interface SigningKeyRow {
  readonly kid: string;
  readonly algorithm: string;
  readonly sealedPrivateKey: string;
  readonly publicJwk: string;
  readonly createdAt: number;
  readonly retiredAt: number | null;
}

export interface UsageEvent {
  readonly appId: string;
  readonly deviceId: string | null;
  readonly provider: string;
  readonly status: number;
  readonly errorType: string | null;
  readonly latencyMs: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly truncated: boolean;
  readonly createdAt: number;
  /** For the request log: the HTTP method, `{version}/{provider path}` (never the query, which may hold a key), the
   * gateway's error reason and the request id. Absent in events written before the request log existed. */
  readonly method?: string | null;
  readonly route?: string | null;
  readonly reason?: string | null;
  readonly requestId?: string | null;
  /** True: a valid device token; false: forwarded in monitor mode without one; null/absent: no device was established. */
  readonly verified?: boolean | null;
  /** Tokens the provider reported (null/absent: usage unknown), and the model that answered (or that was asked for). */
  readonly inputTokens?: number | null;
  readonly outputTokens?: number | null;
  readonly cachedTokens?: number | null;
  readonly reasoningTokens?: number | null;
  readonly model?: string | null;
  /** A realtime session's own figures (one row per session); null/absent for an HTTP request. */
  readonly session?: RealtimeSessionFigures | null;
  /** The signed-in user (the sign-in provider's `sub`); null/absent without a user token. */
  readonly userId?: string | null;
}

/** What the request log keeps of one realtime session, besides duration (`latencyMs`) and bytes each way. */
export interface RealtimeSessionFigures {
  /** Messages from the client to the provider, and from the provider to the client. */
  readonly framesIn: number;
  readonly framesOut: number;
  /** The close code and reason the client saw (the provider's, passed through, or the gateway's 44xx/45xx). */
  readonly closeCode: number;
  readonly closeReason: string;
  /** Who closed: `client`, `provider` or `gateway`. */
  readonly closedBy: 'client' | 'provider' | 'gateway';
  /** Audio seconds the provider reported, where it does. */
  readonly audioSeconds?: number;
}

type Row = Record<string, unknown>;

/** Parses stored settings over the defaults, so that a setting added later has its default for old rows. */
export function parseSettings(text: string): AppSettings {
  const stored = JSON.parse(text) as Partial<AppSettings>;
  return Object.freeze({ ...DEFAULT_APP_SETTINGS, ...stored });
}

function toApp(row: Row): AppRow {
  return {
    id: row.id as string,
    name: row.name as string,
    tokenHash: row.token_hash as string,
    tokenHint: row.token_hint as string,
    previousTokenHash: (row.previous_token_hash as string | null | undefined) ?? null,
    previousTokenHint: (row.previous_token_hint as string | null | undefined) ?? null,
    previousTokenExpiresAt: row.previous_token_expires_at === null || row.previous_token_expires_at === undefined ? null : Number(row.previous_token_expires_at),
    status: row.status as 'active' | 'disabled',
    settings: parseSettings(row.settings as string),
    devicesRevokedBefore: Number(row.devices_revoked_before),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

function toSecret(row: Row): SecretRow {
  return {
    appId: row.app_id as string,
    provider: row.provider as string,
    sealedValue: row.sealed_value as string,
    keyId: row.key_id as string,
    masked: row.masked as string,
    baseUrl: (row.base_url as string | null) ?? null,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    lastUsedAt: row.last_used_at == null ? null : Number(row.last_used_at),
  };
}

function toDevice(row: Row): DeviceRow {
  return {
    appId: row.app_id as string,
    deviceId: row.device_id as string,
    method: row.method as string,
    publicKey: (row.public_key as string | null) ?? null,
    counter: Number(row.counter),
    createdAt: Number(row.created_at),
    lastAttestedAt: Number(row.last_attested_at),
    revokedAt: row.revoked_at === null || row.revoked_at === undefined ? null : Number(row.revoked_at),
  };
}

/**
 * Increments the change sequence inside `transaction` and returns its new value, in one statement (`RETURNING`, on
 * SQLite and PostgreSQL alike).
 */
export async function bumpChangeSequence(transaction: Knex | Knex.Transaction): Promise<number> {
  const [row] = (await transaction('change_feed').where({ id: 1 }).increment('sequence', 1).returning('sequence')) as Row[];
  return Number(row!.sequence);
}

/** The current change sequence. */
export async function readChangeSequence(database: Knex): Promise<number> {
  const row = (await database('change_feed').where({ id: 1 }).first('sequence')) as Row | undefined;
  return row ? Number(row.sequence) : 0;
}

export class AppRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  async insert(app: AppRow): Promise<void> {
    await this.database('apps').insert({
      id: app.id,
      name: app.name,
      token_hash: app.tokenHash,
      token_hint: app.tokenHint,
      status: app.status,
      settings: JSON.stringify(app.settings),
      devices_revoked_before: app.devicesRevokedBefore,
      created_at: app.createdAt,
      updated_at: app.updatedAt,
    });
  }

  async findById(id: string): Promise<AppRow | undefined> {
    const row = (await this.database('apps').where({ id }).first()) as Row | undefined;
    return row ? toApp(row) : undefined;
  }

  async findByTokenHash(tokenHash: string): Promise<AppRow | undefined> {
    // The current token, or the previous one during its grace period (the caller checks the expiry on every request).
    const row = (await this.database('apps').where({ token_hash: tokenHash }).orWhere({ previous_token_hash: tokenHash }).first()) as Row | undefined;
    return row ? toApp(row) : undefined;
  }

  async list(): Promise<AppRow[]> {
    const rows = (await this.database('apps').orderBy('created_at', 'asc')) as Row[];
    return rows.map(toApp);
  }

  async update(
    id: string,
    changes: Partial<Pick<AppRow, 'name' | 'tokenHash' | 'tokenHint' | 'previousTokenHash' | 'previousTokenHint' | 'previousTokenExpiresAt' | 'status' | 'settings' | 'devicesRevokedBefore'>>,
    now: number,
  ): Promise<number> {
    const columns: Row = { updated_at: now };
    if (changes.name !== undefined) columns.name = changes.name;
    if (changes.tokenHash !== undefined) columns.token_hash = changes.tokenHash;
    if (changes.tokenHint !== undefined) columns.token_hint = changes.tokenHint;
    if (changes.previousTokenHash !== undefined) columns.previous_token_hash = changes.previousTokenHash;
    if (changes.previousTokenHint !== undefined) columns.previous_token_hint = changes.previousTokenHint;
    if (changes.previousTokenExpiresAt !== undefined) columns.previous_token_expires_at = changes.previousTokenExpiresAt;
    if (changes.status !== undefined) columns.status = changes.status;
    if (changes.settings !== undefined) columns.settings = JSON.stringify(changes.settings);
    if (changes.devicesRevokedBefore !== undefined) columns.devices_revoked_before = changes.devicesRevokedBefore;
    return this.database('apps').where({ id }).update(columns);
  }

  async delete(id: string): Promise<number> {
    return this.database('apps').where({ id }).delete();
  }
}

export class SecretRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  async upsert(secret: SecretRow): Promise<void> {
    await this.database('secrets')
      .insert({
        app_id: secret.appId,
        provider: secret.provider,
        sealed_value: secret.sealedValue,
        key_id: secret.keyId,
        masked: secret.masked,
        base_url: secret.baseUrl,
        created_at: secret.createdAt,
        updated_at: secret.updatedAt,
        // A new value has not been used yet: "last used" starts again.
        last_used_at: null,
      })
      .onConflict(['app_id', 'provider'])
      .merge(['sealed_value', 'key_id', 'masked', 'base_url', 'updated_at', 'last_used_at']);
  }

  /**
   * Moves "last used" forward to `usedAt` (never back: several gateway processes write their own batches). Not a
   * change the gateway enforces, so the change feed is not bumped.
   */
  async markUsed(appId: string, provider: string, usedAt: number): Promise<void> {
    await this.database('secrets')
      .where({ app_id: appId, provider })
      .andWhere((builder) => builder.whereNull('last_used_at').orWhere('last_used_at', '<', usedAt))
      .update({ last_used_at: usedAt });
  }

  async find(appId: string, provider: string): Promise<SecretRow | undefined> {
    const row = (await this.database('secrets').where({ app_id: appId, provider }).first()) as Row | undefined;
    return row ? toSecret(row) : undefined;
  }

  async listForApp(appId: string): Promise<SecretRow[]> {
    const rows = (await this.database('secrets').where({ app_id: appId }).orderBy('provider')) as Row[];
    return rows.map(toSecret);
  }

  async listAll(): Promise<SecretRow[]> {
    return ((await this.database('secrets')) as Row[]).map(toSecret);
  }

  async delete(appId: string, provider: string): Promise<number> {
    return this.database('secrets').where({ app_id: appId, provider }).delete();
  }
}

export class TokenRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  async insertDevelopmentToken(row: { id: string; appId: string; tokenHash: string; tokenHint: string; label: string | null; createdAt: number }): Promise<void> {
    await this.database('development_tokens').insert({
      id: row.id,
      app_id: row.appId,
      token_hash: row.tokenHash,
      token_hint: row.tokenHint,
      label: row.label,
      created_at: row.createdAt,
      revoked_at: null,
    });
  }

  async findDevelopmentToken(tokenHash: string): Promise<{ id: string; appId: string; tokenHash: string; revokedAt: number | null } | undefined> {
    const row = (await this.database('development_tokens').where({ token_hash: tokenHash }).first()) as Row | undefined;
    if (!row) return undefined;
    return { id: row.id as string, appId: row.app_id as string, tokenHash: row.token_hash as string, revokedAt: row.revoked_at == null ? null : Number(row.revoked_at) };
  }

  async listDevelopmentTokens(appId: string): Promise<Array<{ id: string; tokenHint: string; label: string | null; createdAt: number; revokedAt: number | null }>> {
    const rows = (await this.database('development_tokens').where({ app_id: appId }).orderBy('created_at')) as Row[];
    return rows.map((row) => ({
      id: row.id as string,
      tokenHint: row.token_hint as string,
      label: (row.label as string | null) ?? null,
      createdAt: Number(row.created_at),
      revokedAt: row.revoked_at == null ? null : Number(row.revoked_at),
    }));
  }

  async insertAdminKey(row: { id: string; name: string; keyHash: string; keyHint: string; createdAt: number; scopes: readonly AdminScope[]; expiresAt: number | null }): Promise<void> {
    await this.database('admin_keys').insert({ id: row.id, name: row.name, key_hash: row.keyHash, key_hint: row.keyHint, created_at: row.createdAt, revoked_at: null, scopes: row.scopes.join(','), expires_at: row.expiresAt });
  }

  async findAdminKey(keyHash: string): Promise<{ id: string; name: string; keyHash: string; revokedAt: number | null; scopes: AdminScope[]; expiresAt: number | null } | undefined> {
    const row = (await this.database('admin_keys').where({ key_hash: keyHash }).first()) as Row | undefined;
    if (!row) return undefined;
    return {
      id: row.id as string,
      name: row.name as string,
      keyHash: row.key_hash as string,
      revokedAt: row.revoked_at == null ? null : Number(row.revoked_at),
      scopes: parseScopes(row.scopes),
      expiresAt: row.expires_at == null ? null : Number(row.expires_at),
    };
  }

  /** One admin key by id (hints only), or undefined. */
  async getAdminKey(id: string): Promise<{ id: string; name: string; scopes: AdminScope[]; expiresAt: number | null; revokedAt: number | null } | undefined> {
    const row = (await this.database('admin_keys').where({ id }).first()) as Row | undefined;
    if (!row) return undefined;
    return { id: row.id as string, name: row.name as string, scopes: parseScopes(row.scopes), expiresAt: row.expires_at == null ? null : Number(row.expires_at), revokedAt: row.revoked_at == null ? null : Number(row.revoked_at) };
  }

  async listAdminKeys(): Promise<Array<{ id: string; name: string; keyHint: string; scopes: AdminScope[]; createdAt: number; expiresAt: number | null; revokedAt: number | null }>> {
    const rows = (await this.database('admin_keys').orderBy('created_at')) as Row[];
    return rows.map((row) => ({
      id: row.id as string,
      name: row.name as string,
      keyHint: row.key_hint as string,
      scopes: parseScopes(row.scopes),
      createdAt: Number(row.created_at),
      expiresAt: row.expires_at == null ? null : Number(row.expires_at),
      revokedAt: row.revoked_at == null ? null : Number(row.revoked_at),
    }));
  }

  /** Revokes an admin key; false when there is no such key. */
  async revokeAdminKey(id: string, now: number): Promise<boolean> {
    await this.database('admin_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: now });
    return (await this.database('admin_keys').where({ id }).first()) !== undefined;
  }

  /** Revokes a development token of an app; false when there is no such token. */
  async revokeDevelopmentToken(appId: string, id: string, now: number): Promise<boolean> {
    await this.database('development_tokens').where({ app_id: appId, id }).whereNull('revoked_at').update({ revoked_at: now });
    return (await this.database('development_tokens').where({ app_id: appId, id }).first()) !== undefined;
  }

  async countAdminKeys(): Promise<number> {
    const row = (await this.database('admin_keys').whereNull('revoked_at').count({ count: '*' }).first()) as Row | undefined;
    return Number(row?.count ?? 0);
  }
}

export class DeviceRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  /** Records an attestation; a device revoked earlier stays revoked (re-attesting does not undo a revocation). */
  async recordAttestation(row: { appId: string; deviceId: string; method: string; publicKey: string | null; now: number }): Promise<DeviceRow> {
    await this.database('devices')
      .insert({
        app_id: row.appId,
        device_id: row.deviceId,
        method: row.method,
        public_key: row.publicKey,
        counter: 0,
        created_at: row.now,
        last_attested_at: row.now,
        revoked_at: null,
      })
      .onConflict(['app_id', 'device_id'])
      .merge({ last_attested_at: row.now, method: row.method });
    const stored = await this.find(row.appId, row.deviceId);
    return stored!;
  }

  async find(appId: string, deviceId: string): Promise<DeviceRow | undefined> {
    const row = (await this.database('devices').where({ app_id: appId, device_id: deviceId }).first()) as Row | undefined;
    return row ? toDevice(row) : undefined;
  }

  async listForApp(appId: string): Promise<DeviceRow[]> {
    return ((await this.database('devices').where({ app_id: appId }).orderBy('last_attested_at', 'desc')) as Row[]).map(toDevice);
  }

  /**
   * One page of an app's devices (newest attestation first), narrowed by the start of the id (case-insensitive) and by
   * the platform (from the attestation method's name), with the number of all that match.
   */
  async search(appId: string, query: { prefix?: string | undefined; platform?: string | undefined; limit: number; offset: number }): Promise<{ rows: DeviceRow[]; total: number }> {
    const scope = () => {
      let rows = this.database('devices').where({ app_id: appId });
      if (query.prefix) rows = rows.andWhereRaw("lower(device_id) like ? escape '\\'", [`${query.prefix.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)}%`]);
      if (query.platform === 'ios') rows = rows.andWhere('method', 'like', 'apple-%');
      else if (query.platform === 'android') rows = rows.andWhere('method', 'like', 'android-%');
      else if (query.platform === 'development') rows = rows.andWhere({ method: 'development' });
      else if (query.platform === 'other') rows = rows.andWhere('method', 'not like', 'apple-%').andWhere('method', 'not like', 'android-%').andWhereNot({ method: 'development' });
      return rows;
    };
    const counted = (await scope().count({ count: '*' }).first()) as Row | undefined;
    const rows = (await scope().orderBy([{ column: 'last_attested_at', order: 'desc' }, { column: 'device_id', order: 'asc' }]).limit(query.limit).offset(query.offset)) as Row[];
    return { rows: rows.map(toDevice), total: Number(counted?.count ?? 0) };
  }

  async listRevoked(): Promise<DeviceRow[]> {
    return ((await this.database('devices').whereNotNull('revoked_at')) as Row[]).map(toDevice);
  }

  /** Compare-and-set of the assertion counter: true when it held `expected` and now holds `next`. */
  async advanceCounter(appId: string, deviceId: string, expected: number, next: number): Promise<boolean> {
    const changed = await this.database('devices').where({ app_id: appId, device_id: deviceId, counter: expected }).whereNull('revoked_at').update({ counter: next });
    return changed === 1;
  }

  async revoke(appId: string, deviceId: string, now: number): Promise<number> {
    return this.database('devices').where({ app_id: appId, device_id: deviceId }).whereNull('revoked_at').update({ revoked_at: now });
  }
}

export class SigningKeyRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  async insert(row: SigningKeyRow): Promise<void> {
    await this.database('signing_keys').insert({
      kid: row.kid,
      algorithm: row.algorithm,
      sealed_private_key: row.sealedPrivateKey,
      public_jwk: row.publicJwk,
      created_at: row.createdAt,
      retired_at: row.retiredAt,
    });
  }

  async list(): Promise<SigningKeyRow[]> {
    const rows = (await this.database('signing_keys').orderBy('created_at', 'asc')) as Row[];
    return rows.map((row) => ({
      kid: row.kid as string,
      algorithm: row.algorithm as string,
      sealedPrivateKey: row.sealed_private_key as string,
      publicJwk: row.public_jwk as string,
      createdAt: Number(row.created_at),
      retiredAt: row.retired_at == null ? null : Number(row.retired_at),
    }));
  }

  async retire(kid: string, now: number): Promise<void> {
    await this.database('signing_keys').where({ kid }).update({ retired_at: now });
  }
}

/** One row of the request log (a usage event as the operator reads it). */
export interface RequestLogEntry {
  readonly id: number;
  readonly createdAt: number;
  readonly deviceId: string | null;
  /** The signed-in user (`sub`), null without a user token. */
  readonly userId: string | null;
  readonly provider: string;
  readonly method: string | null;
  readonly route: string | null;
  readonly status: number;
  readonly errorType: string | null;
  readonly reason: string | null;
  readonly latencyMs: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly truncated: boolean;
  readonly requestId: string | null;
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
  readonly model: string | null;
  /** Present on a realtime session's row. */
  readonly session: RealtimeSessionFigures | null;
  /** Estimated spend in USD (tokens × the model's price); null without tokens or without a price for the model. */
  readonly estimatedUsd?: number | null;
  /** The date of the price the estimate used (`YYYY-MM-DD` of the default table) or "operator price"; null with no estimate. */
  readonly priceAsOf?: string | null;
}

function parseSession(value: unknown): RealtimeSessionFigures | null {
  if (typeof value !== 'string' || value === '') return null;
  try {
    return JSON.parse(value) as RealtimeSessionFigures;
  } catch {
    return null;
  }
}

/** One device's or one signed-in user's events of an app (see {@link UsageRepository.summary}). */
export interface UsageFilter {
  readonly deviceId?: string | undefined;
  readonly userId?: string | undefined;
}

/** A device a signed-in user made requests from, as the request log kept them. */
export interface UserDeviceUse {
  readonly deviceId: string;
  readonly requests: number;
  readonly firstSeenAt: number;
  readonly lastSeenAt: number;
}

/** Filters of the request log; `before` is the id cursor of the previous page (newest first). */
export interface RequestLogQuery {
  readonly appId: string;
  readonly deviceId?: string | undefined;
  /** Only this signed-in user's rows (the sign-in provider's `sub`). */
  readonly userId?: string | undefined;
  readonly provider?: string | undefined;
  readonly outcome?: 'ok' | 'error' | undefined;
  /** A substring of the route, request id or reason. */
  readonly search?: string | undefined;
  /** Only the last N minutes. */
  readonly minutes?: number | undefined;
  /** A status class (`4xx`) or one status code (`429`). */
  readonly status?: string | undefined;
  /** A gateway error type, or `providerError` for a provider's own non-2xx answer. */
  readonly errorType?: string | undefined;
  readonly before?: number | undefined;
  readonly limit: number;
}

/** The usage_events columns a recorded event fills, in insert order, and their PostgreSQL types (for unnest). */
const USAGE_COLUMNS = [
  'app_id', 'device_id', 'provider', 'status', 'error_type', 'latency_ms', 'bytes_in', 'bytes_out', 'truncated', 'created_at',
  'method', 'route', 'reason', 'request_id', 'verified', 'input_tokens', 'output_tokens', 'cached_tokens', 'reasoning_tokens', 'model',
  'session', 'user_id',
] as const;
const USAGE_COLUMN_TYPES = [
  'varchar', 'varchar', 'varchar', 'integer', 'varchar', 'integer', 'bigint', 'bigint', 'boolean', 'bigint',
  'varchar', 'varchar', 'varchar', 'varchar', 'boolean', 'bigint', 'bigint', 'bigint', 'bigint', 'varchar',
  'text', 'varchar',
] as const;

type UsageValue = string | number | boolean | null;

/** One event as the values of {@link USAGE_COLUMNS}. */
function usageRow(event: UsageEvent): UsageValue[] {
  return [
    event.appId,
    event.deviceId,
    event.provider,
    event.status,
    event.errorType,
    event.latencyMs,
    event.bytesIn,
    event.bytesOut,
    event.truncated,
    event.createdAt,
    event.method ?? null,
    event.route === undefined || event.route === null ? null : event.route.slice(0, 300),
    event.reason ?? null,
    event.requestId ?? null,
    event.verified ?? null,
    event.inputTokens ?? null,
    event.outputTokens ?? null,
    event.cachedTokens ?? null,
    event.reasoningTokens ?? null,
    event.model === undefined || event.model === null ? null : event.model.slice(0, 200),
    event.session ? JSON.stringify(event.session) : null,
    event.userId ?? null,
  ];
}

/**
 * What makes writing a batch again harmless: an event already stored (the same `created_at` and request id, migration
 * 0007's unique index) is skipped, on both engines. Only uniqueness is waived; a NOT NULL violation still fails.
 */
const USAGE_ONCE = ' on conflict (created_at, request_id) where request_id is not null do nothing';

/** The part of a better-sqlite3 connection the usage insert uses. */
interface SqliteConnection {
  prepare(sql: string): { run(values: readonly UsageValue[]): unknown };
  transaction(body: () => void): () => void;
  pragma(source: string, options?: { simple?: boolean }): unknown;
}
/**
 * Rows per statement of the SQLite usage insert's wide form: one statement for 16 rows cost 3.4-3.6 µs of CPU per row
 * where one per row cost 4.4-4.6 (a microbenchmark of the real schema in 160-row transactions, docs/benchmarks.md).
 */
const SQLITE_ROWS_PER_INSERT = 16;

/** The prepared usage inserts of each SQLite connection, one row and {@link SQLITE_ROWS_PER_INSERT} rows (knex keeps one connection open for the process). */
const sqliteInserts = new WeakMap<object, { synchronous: number; one: { run(values: readonly UsageValue[]): unknown }; wide: { run(values: readonly UsageValue[]): unknown }; values: UsageValue[] }>();

export class UsageRepository {
  /** `defaultPrices`: the table spend falls back on where the operator set no price (empty: operator prices only). */
  constructor(
    private readonly database: Knex,
    private readonly defaultPrices: readonly DefaultPrice[] = [],
  ) {}

  /** Finds the price of a provider's model: the operator's own first, else the default table's (see {@link priceBook}). */
  async prices(): Promise<PriceLookup> {
    return priceBook(await new PriceRepository(this.database).list(), this.defaultPrices);
  }

  /** Each row with its estimated spend and the date of the price used (null where there are no tokens or no price). */
  async withSpend<T extends { readonly provider: string; readonly model: string | null; readonly inputTokens: number | null; readonly outputTokens: number | null }>(rows: readonly T[]): Promise<Array<T & { estimatedUsd: number | null; priceAsOf: string | null }>> {
    const lookup = rows.some((row) => row.model !== null && row.inputTokens !== null) ? await this.prices() : undefined;
    return rows.map((row) => {
      const price = lookup && row.model !== null && row.inputTokens !== null ? lookup(row.provider, row.model) : undefined;
      return price
        ? { ...row, estimatedUsd: costOf(price, row.inputTokens ?? 0, row.outputTokens ?? 0), priceAsOf: price.priceAsOf }
        : { ...row, estimatedUsd: null, priceAsOf: null };
    });
  }

  /**
   * One app's estimated spend over [fromMs, toMs) in USD: the total of the usage summary's spend (tokens per provider and
   * model as reported, × the price {@link prices} finds), without the rest of the summary. `unpricedTokens`: tokens of
   * models without a price (not in the total). Null when there is no price at all (as the summary's spend).
   */
  async spendOf(appId: string, fromMs: number, toMs: number): Promise<{ usd: number; unpricedTokens: number } | null> {
    const operatorPrices = await new PriceRepository(this.database).list();
    if (operatorPrices.length === 0 && this.defaultPrices.length === 0) return null;
    const priceOf = priceBook(operatorPrices, this.defaultPrices);
    const perModel = (await this.database('usage_events')
      .where({ app_id: appId })
      .andWhere('created_at', '>=', fromMs)
      .andWhere('created_at', '<', toMs)
      .whereNotNull('input_tokens')
      .select('provider', 'model')
      .sum({ input: 'input_tokens', output: 'output_tokens' })
      .groupBy('provider', 'model')) as Row[];
    let usd = 0;
    let unpricedTokens = 0;
    for (const row of perModel) {
      const input = Number(row.input ?? 0);
      const output = Number(row.output ?? 0);
      const model = (row.model as string | null) ?? null;
      const price = model === null ? undefined : priceOf(row.provider as string, model);
      if (price === undefined) unpricedTokens += input + output;
      else usd += costOf(price, input, output);
    }
    return { usd, unpricedTokens };
  }

  /** The request log of one app, newest first, filtered; at most `limit` rows before the `before` cursor. */
  async requestLog(query: RequestLogQuery): Promise<RequestLogEntry[]> {
    let rows = this.database('usage_events').where({ app_id: query.appId });
    if (query.deviceId !== undefined) rows = rows.andWhere({ device_id: query.deviceId });
    if (query.userId !== undefined) rows = rows.andWhere({ user_id: query.userId });
    if (query.provider !== undefined) rows = rows.andWhere({ provider: query.provider });
    if (query.outcome === 'ok') rows = rows.andWhere('status', '<', 400).whereNull('error_type');
    if (query.outcome === 'error') rows = rows.andWhere((builder) => builder.where('status', '>=', 400).orWhereNotNull('error_type'));
    if (query.search !== undefined) {
      const pattern = `%${query.search.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
      rows = rows.andWhere((builder) =>
        builder.whereRaw("route like ? escape '\\'", [pattern]).orWhereRaw("request_id like ? escape '\\'", [pattern]).orWhereRaw("reason like ? escape '\\'", [pattern]),
      );
    }
    if (query.minutes !== undefined) rows = rows.andWhere('created_at', '>=', Date.now() - query.minutes * 60_000);
    if (query.status !== undefined) {
      const status = query.status;
      const low = status.endsWith('xx') ? Number(status[0]) * 100 : Number(status);
      rows = rows.andWhere('status', '>=', low).andWhere('status', '<=', status.endsWith('xx') ? low + 99 : low);
    }
    if (query.errorType === 'providerError') rows = rows.whereNull('error_type').andWhere('status', '>=', 400);
    else if (query.errorType !== undefined) rows = rows.andWhere({ error_type: query.errorType });
    if (query.before !== undefined) rows = rows.andWhere('id', '<', query.before);
    const found = (await rows.orderBy('id', 'desc').limit(query.limit)) as Row[];
    return found.map((row) => ({
      id: Number(row.id),
      createdAt: Number(row.created_at),
      deviceId: (row.device_id as string | null) ?? null,
      userId: (row.user_id as string | null) ?? null,
      provider: row.provider as string,
      method: (row.method as string | null) ?? null,
      route: (row.route as string | null) ?? null,
      status: Number(row.status),
      errorType: (row.error_type as string | null) ?? null,
      reason: (row.reason as string | null) ?? null,
      latencyMs: Number(row.latency_ms),
      bytesIn: Number(row.bytes_in),
      bytesOut: Number(row.bytes_out),
      truncated: Boolean(row.truncated),
      requestId: (row.request_id as string | null) ?? null,
      inputTokens: row.input_tokens == null ? null : Number(row.input_tokens),
      outputTokens: row.output_tokens == null ? null : Number(row.output_tokens),
      model: (row.model as string | null) ?? null,
      session: parseSession(row.session),
    }));
  }

  /**
   * The devices a signed-in user's requests came from (in the request log, as long as it keeps them), most recently used
   * first, at most `limit`; read through the `usage_events_user` index.
   */
  async devicesOfUser(appId: string, userId: string, limit = 100): Promise<UserDeviceUse[]> {
    const rows = (await this.database('usage_events')
      .where({ app_id: appId, user_id: userId })
      .whereNotNull('device_id')
      .select('device_id')
      .count({ requests: '*' })
      .min({ first: 'created_at' })
      .max({ last: 'created_at' })
      .groupBy('device_id')
      .orderBy('last', 'desc')
      .limit(limit)) as Row[];
    return rows.map((row) => ({ deviceId: row.device_id as string, requests: Number(row.requests), firstSeenAt: Number(row.first), lastSeenAt: Number(row.last) }));
  }

  /** Deletes usage events (request-log rows) created before `beforeMs`; returns how many. */
  async prune(beforeMs: number): Promise<number> {
    return this.database('usage_events').where('created_at', '<', beforeMs).delete();
  }

  /**
   * Writes a batch of usage events in one transaction. One fixed statement whatever the batch size (measured in
   * docs/benchmarks.md: knex's batchInsert built and SQLite prepared a 200-row, 4,000-parameter statement per chunk, the
   * largest cost of a request after Node's HTTP internals): on SQLite a prepared one-row insert run per event inside one
   * transaction; on PostgreSQL one `insert … select from unnest(…)` with one array parameter per column.
   */
  async insertBatch(events: readonly UsageEvent[]): Promise<void> {
    if (events.length === 0) return;
    const rows = events.map(usageRow);
    const client = this.database.client as { config: { client?: unknown }; acquireConnection(): Promise<unknown>; releaseConnection(connection: unknown): Promise<void> };
    if (client.config.client === 'better-sqlite3') {
      const connection = (await client.acquireConnection()) as SqliteConnection;
      try {
        let inserts = sqliteInserts.get(connection);
        if (!inserts) {
          const tuple = `(${USAGE_COLUMNS.map(() => '?').join(', ')})`;
          const insert = `insert into usage_events (${USAGE_COLUMNS.join(', ')}) values `;
          inserts = {
            // The connection's own level (FULL unless the operator chose NORMAL), restored after each batch.
            synchronous: Number(connection.pragma('synchronous', { simple: true })),
            one: connection.prepare(`${insert}${tuple}${USAGE_ONCE}`),
            wide: connection.prepare(`${insert}${Array.from({ length: SQLITE_ROWS_PER_INSERT }, () => tuple).join(', ')}${USAGE_ONCE}`),
            values: new Array<UsageValue>(SQLITE_ROWS_PER_INSERT * USAGE_COLUMNS.length),
          };
          sqliteInserts.set(connection, inserts);
        }
        const { one, wide, values, synchronous } = inserts;
        for (const row of rows) {
          // SQLite has no booleans (better-sqlite3 binds numbers): truncated and verified as 1/0.
          row[8] = row[8] ? 1 : 0;
          if (row[14] !== null) row[14] = row[14] ? 1 : 0;
        }
        // A usage batch commits without its own sync (NORMAL): with FULL every batch was an fsync on the event loop
        // (better-sqlite3 is synchronous), ten a second. Its rows reach the disk with the next synced commit (a
        // management change, FULL) or checkpoint; a power cut may take the batches since (docs/guides/production.md,
        // "Durability"). The level is set and restored in this same turn: no other statement runs in between.
        if (synchronous > 1) connection.pragma('synchronous = NORMAL');
        try {
          connection.transaction(() => {
            let index = 0;
            // Whole groups of rows by the wide statement, in order; the rest one by one.
            for (; index + SQLITE_ROWS_PER_INSERT <= rows.length; index += SQLITE_ROWS_PER_INSERT) {
              let at = 0;
              for (let offset = 0; offset < SQLITE_ROWS_PER_INSERT; offset += 1) for (const value of rows[index + offset]!) values[at++] = value;
              wide.run(values);
            }
            for (; index < rows.length; index += 1) one.run(rows[index]!);
          })();
        } finally {
          if (synchronous > 1) connection.pragma(`synchronous = ${synchronous}`);
          // The reused parameters hold no batch's strings until the next write, nor after a failed one.
          values.fill(null);
        }
      } finally {
        await client.releaseConnection(connection);
      }
      return;
    }
    // PostgreSQL: one array per column (knex passes an array binding to pg as one array parameter). In a transaction
    // as knex's batchInsert was: a batch whose answer timed out is rolled back, not written once more by the retry.
    const columns = USAGE_COLUMNS.map((_column, index) => rows.map((row) => row[index]));
    const sql = `insert into usage_events (${USAGE_COLUMNS.join(', ')}) select * from unnest(${USAGE_COLUMN_TYPES.map((type) => `?::${type}[]`).join(', ')})${USAGE_ONCE}`;
    await this.database.transaction(async (transaction) => {
      await transaction.raw(sql, columns as never);
    });
  }

  /**
   * What the dashboard charts: requests and errors per minute, errors by type, latency p50/p95 per provider and the
   * busiest devices, over [fromMs, toMs), for one app or (appId null) for all. Counting is done by the database;
   * percentiles are computed here from at most `latencySample` recent latencies per provider. `filter` (one app's
   * summaries only): one device's or one signed-in user's events; such a summary also has the spend per minute.
   */
  async summary(appId: string | null, fromMs: number, toMs: number, latencySample = 20_000, filter: UsageFilter = {}): Promise<UsageSummary> {
    const scope = () => {
      let query = this.database('usage_events').where('created_at', '>=', fromMs).andWhere('created_at', '<', toMs);
      if (appId === null) return query;
      query = query.andWhere({ app_id: appId });
      // One device's traffic (the per-device page): its app's events with its id; one user's likewise (the user page).
      if (filter.deviceId !== undefined) query = query.andWhere({ device_id: filter.deviceId });
      if (filter.userId !== undefined) query = query.andWhere({ user_id: filter.userId });
      return query;
    };
    const narrowed = appId !== null && (filter.deviceId !== undefined || filter.userId !== undefined);
    // Integer division on both engines: the start of each event's minute.
    const minute = '(created_at / 60000) * 60000';
    const perMinute = (await scope()
      .select({ minute: this.database.raw(minute) })
      .count({ requests: '*' })
      .sum({ errors: this.database.raw('case when error_type is null and status < 400 then 0 else 1 end') })
      .sum({ tokens: this.database.raw('coalesce(input_tokens, 0) + coalesce(output_tokens, 0)') })
      .sum({ budgetRefusals: this.database.raw("case when reason = 'token_budget' then 1 else 0 end") })
      .groupByRaw(minute)
      .orderBy('minute')) as Row[];
    const byError = (await scope().whereNotNull('error_type').select('error_type').count({ count: '*' }).groupBy('error_type').orderBy('count', 'desc')) as Row[];
    const upstreamErrors = (await scope().whereNull('error_type').andWhere('status', '>=', 400).count({ count: '*' }).first()) as Row | undefined;
    const topDevices = (await scope().whereNotNull('device_id').select('device_id').count({ count: '*' }).groupBy('device_id').orderBy('count', 'desc').limit(10)) as Row[];
    // Latency is the provider's: requests the gateway refused itself (error_type set) never reached it and are left out.
    const providers = (await scope().whereNull('error_type').select('provider').count({ count: '*' }).groupBy('provider').orderBy('count', 'desc')) as Row[];
    const latency = [] as UsageSummary['latencyByProvider'][number][];
    for (const row of providers) {
      const sample = ((await scope().whereNull('error_type').where({ provider: row.provider }).select('latency_ms').orderBy('created_at', 'desc').limit(latencySample)) as Row[])
        .map((entry) => Number(entry.latency_ms))
        .sort((a, b) => a - b);
      const at = (fraction: number) => sample[Math.min(sample.length - 1, Math.ceil(fraction * sample.length) - 1)] ?? 0;
      latency.push({ provider: row.provider as string, requests: Number(row.count), p50Ms: at(0.5), p95Ms: at(0.95) });
    }
    // Tokens as the providers reported them, per app, device, provider and model (events with usage unknown count 0).
    const tokenGroup = async (column: string, limit?: number) => {
      let query = scope()
        .whereNotNull('input_tokens')
        .select(column)
        .count({ requests: '*' })
        .sum({ input: 'input_tokens', output: 'output_tokens', cached: 'cached_tokens', reasoning: 'reasoning_tokens' })
        .groupBy(column)
        .orderByRaw('sum(coalesce(input_tokens, 0)) + sum(coalesce(output_tokens, 0)) desc');
      if (column === 'device_id' || column === 'model') query = query.whereNotNull(column);
      if (limit !== undefined) query = query.limit(limit);
      return ((await query) as Row[]).map((row) => ({
        key: row[column] as string,
        requests: Number(row.requests),
        inputTokens: Number(row.input ?? 0),
        outputTokens: Number(row.output ?? 0),
        cachedTokens: Number(row.cached ?? 0),
        reasoningTokens: Number(row.reasoning ?? 0),
      }));
    };
    const byApp = appId === null ? await tokenGroup('app_id', 50) : [];
    const byTokenDevice = await tokenGroup('device_id', 10);
    const byTokenProvider = await tokenGroup('provider');
    const byTokenModel = await tokenGroup('model', 50);
    const rename = <K extends string>(rows: Awaited<ReturnType<typeof tokenGroup>>, name: K) =>
      rows.map(({ key, ...rest }) => ({ [name]: key, ...rest }) as { [P in K]: string } & Omit<(typeof rows)[number], 'key'>);
    const tokenTotals = byTokenProvider.reduce(
      (sum, row) => ({ inputTokens: sum.inputTokens + row.inputTokens, outputTokens: sum.outputTokens + row.outputTokens, cachedTokens: sum.cachedTokens + row.cachedTokens, reasoningTokens: sum.reasoningTokens + row.reasoningTokens, requestsWithUsage: sum.requestsWithUsage + row.requests }),
      { inputTokens: 0, outputTokens: 0, cachedTokens: 0, reasoningTokens: 0, requestsWithUsage: 0 },
    );
    // Estimated spend: the operator's prices first, else the dated default table (neither: spend null, never a guess).
    const operatorPrices = await new PriceRepository(this.database).list();
    let spend: UsageSummary['spend'] = null;
    if (operatorPrices.length > 0 || this.defaultPrices.length > 0) {
      const priceOf = priceBook(operatorPrices, this.defaultPrices);
      const usedDates = new Set<string>();
      const cost = (provider: string, model: string | null, input: number, output: number) => {
        const price = model === null ? undefined : priceOf(provider, model);
        if (price === undefined) return undefined;
        usedDates.add(price.priceAsOf);
        return { usd: costOf(price, input, output), priceAsOf: price.priceAsOf };
      };
      // Per app too on the all-apps summary, so that the spend per app comes from the same rows.
      const groups = appId === null ? ['app_id', 'provider', 'model'] : ['provider', 'model'];
      const perModel = (await scope()
        .whereNotNull('input_tokens')
        .select(...groups)
        .sum({ input: 'input_tokens', output: 'output_tokens' })
        .groupBy(...groups)
        .limit(5000)) as Row[];
      let total = 0;
      let unpricedTokens = 0;
      const modelSpend = new Map<string, { provider: string; model: string; usd: number; priceAsOf: string }>();
      const appSpend = new Map<string, number>();
      for (const row of perModel) {
        const input = Number(row.input ?? 0);
        const output = Number(row.output ?? 0);
        const estimate = cost(row.provider as string, (row.model as string | null) ?? null, input, output);
        if (estimate === undefined) unpricedTokens += input + output;
        else {
          total += estimate.usd;
          const key = `${row.provider as string}\u0000${row.model as string}`;
          const entry = modelSpend.get(key) ?? { provider: row.provider as string, model: row.model as string, usd: 0, priceAsOf: estimate.priceAsOf };
          entry.usd += estimate.usd;
          modelSpend.set(key, entry);
          if (appId === null) appSpend.set(row.app_id as string, (appSpend.get(row.app_id as string) ?? 0) + estimate.usd);
        }
      }
      const byModel = [...modelSpend.values()];
      const topDeviceIds = byTokenDevice.map((row) => row.key);
      const perDevice = topDeviceIds.length
        ? ((await scope()
            .whereNotNull('input_tokens')
            .whereIn('device_id', topDeviceIds)
            .select('device_id', 'provider', 'model')
            .sum({ input: 'input_tokens', output: 'output_tokens' })
            .groupBy('device_id', 'provider', 'model')) as Row[])
        : [];
      const deviceSpend = new Map<string, number>();
      for (const row of perDevice) {
        const estimate = cost(row.provider as string, (row.model as string | null) ?? null, Number(row.input ?? 0), Number(row.output ?? 0));
        if (estimate !== undefined) deviceSpend.set(row.device_id as string, (deviceSpend.get(row.device_id as string) ?? 0) + estimate.usd);
      }
      // One device's or user's summary: the spend per minute too (a few rows per minute of the window at most).
      let perMinuteSpend: Array<{ minute: number; usd: number }> | undefined;
      if (narrowed) {
        const minuteRows = (await scope()
          .whereNotNull('input_tokens')
          .whereNotNull('model')
          .select({ minute: this.database.raw(minute) }, 'provider', 'model')
          .sum({ input: 'input_tokens', output: 'output_tokens' })
          .groupByRaw(`${minute}, provider, model`)) as Row[];
        const byMinute = new Map<number, number>();
        for (const row of minuteRows) {
          const estimate = cost(row.provider as string, row.model as string, Number(row.input ?? 0), Number(row.output ?? 0));
          if (estimate !== undefined) byMinute.set(Number(row.minute), (byMinute.get(Number(row.minute)) ?? 0) + estimate.usd);
        }
        perMinuteSpend = [...byMinute].map(([at, usd]) => ({ minute: at, usd })).sort((a, b) => a.minute - b.minute);
      }
      spend = {
        currency: 'USD',
        totalUsd: total,
        unpricedTokens,
        priceAsOf: [...usedDates].sort(),
        byModel: byModel.sort((a, b) => b.usd - a.usd),
        byDevice: topDeviceIds.map((deviceId) => ({ deviceId, usd: deviceSpend.get(deviceId) ?? 0 })).sort((a, b) => b.usd - a.usd),
        byApp: [...appSpend].map(([id, usd]) => ({ appId: id, usd })).sort((a, b) => b.usd - a.usd).slice(0, 50),
        ...(perMinuteSpend ? { perMinute: perMinuteSpend } : {}),
      };
    }
    const verification = (await scope().whereNotNull('verified').select('verified').count({ count: '*' }).groupBy('verified')) as Row[];
    // Realtime sessions: one row each, its duration in latency_ms.
    const sessions = (await scope().whereNotNull('session').count({ count: '*' }).sum({ ms: 'latency_ms' }).first()) as Row | undefined;
    const errorsByType = byError.map((row) => ({ type: row.error_type as string, count: Number(row.count) }));
    // Token-budget refusals are their own series (`tokenBudget`), apart from the request-rate refusals.
    const budgetRefusals = Number(((await scope().where({ error_type: 'rateLimited', reason: 'token_budget' }).count({ count: '*' }).first()) as Row | undefined)?.count ?? 0);
    if (budgetRefusals > 0) {
      const rateLimited = errorsByType.find((entry) => entry.type === 'rateLimited');
      if (rateLimited) rateLimited.count -= budgetRefusals;
      errorsByType.push({ type: 'tokenBudget', count: budgetRefusals });
    }
    const upstream = Number(upstreamErrors?.count ?? 0);
    if (upstream > 0) errorsByType.push({ type: 'providerError', count: upstream });
    return {
      fromMs,
      toMs,
      totalRequests: perMinute.reduce((sum, row) => sum + Number(row.requests), 0),
      requestsPerMinute: perMinute.map((row) => ({ minute: Number(row.minute), requests: Number(row.requests), errors: Number(row.errors ?? 0), tokens: Number(row.tokens ?? 0), budgetRefusals: Number(row.budgetRefusals ?? 0) })),
      errorsByType: errorsByType.filter((entry) => entry.count > 0).sort((a, b) => b.count - a.count || a.type.localeCompare(b.type)),
      latencyByProvider: latency,
      topDevices: topDevices.map((row) => ({ deviceId: row.device_id as string, requests: Number(row.count) })),
      verification: {
        verified: verification.filter((row) => Boolean(row.verified)).reduce((sum, row) => sum + Number(row.count), 0),
        unverified: verification.filter((row) => !row.verified).reduce((sum, row) => sum + Number(row.count), 0),
      },
      tokens: {
        ...tokenTotals,
        byApp: rename(byApp, 'appId'),
        byDevice: rename(byTokenDevice, 'deviceId'),
        byProvider: rename(byTokenProvider, 'provider'),
        byModel: rename(byTokenModel, 'model'),
      },
      spend,
      realtime: { sessions: Number(sessions?.count ?? 0), seconds: Math.round(Number(sessions?.ms ?? 0) / 1000) },
    };
  }

  async listForApp(appId: string, fromMs: number, toMs: number, limit = 1000): Promise<UsageEvent[]> {
    const rows = (await this.database('usage_events')
      .where({ app_id: appId })
      .andWhere('created_at', '>=', fromMs)
      .andWhere('created_at', '<', toMs)
      .orderBy('created_at', 'desc')
      .limit(limit)) as Row[];
    return rows.map((row) => ({
      appId: row.app_id as string,
      deviceId: (row.device_id as string | null) ?? null,
      provider: row.provider as string,
      status: Number(row.status),
      errorType: (row.error_type as string | null) ?? null,
      latencyMs: Number(row.latency_ms),
      bytesIn: Number(row.bytes_in),
      bytesOut: Number(row.bytes_out),
      truncated: Boolean(row.truncated),
      createdAt: Number(row.created_at),
      inputTokens: row.input_tokens == null ? null : Number(row.input_tokens),
      outputTokens: row.output_tokens == null ? null : Number(row.output_tokens),
      cachedTokens: row.cached_tokens == null ? null : Number(row.cached_tokens),
      reasoningTokens: row.reasoning_tokens == null ? null : Number(row.reasoning_tokens),
      model: (row.model as string | null) ?? null,
      session: parseSession(row.session),
      userId: (row.user_id as string | null) ?? null,
    }));
  }
}

/** One audited management action. `details` never holds a secret value (callers pass masked forms only). */
/** Usage over a window, as the dashboard charts it (see {@link UsageRepository.summary}). */
export interface UsageSummary {
  readonly fromMs: number;
  readonly toMs: number;
  readonly totalRequests: number;
  /** Per minute: requests, errors, tokens (input + output, as reported) and the refusals by a token budget (among the errors). */
  readonly requestsPerMinute: ReadonlyArray<{ readonly minute: number; readonly requests: number; readonly errors: number; readonly tokens: number; readonly budgetRefusals: number }>;
  /** Gateway-made errors by protocol type, plus `providerError` for upstream non-2xx answers and `tokenBudget` for
   * refusals by a token budget (counted apart from the other `rateLimited`). */
  readonly errorsByType: ReadonlyArray<{ readonly type: string; readonly count: number }>;
  readonly latencyByProvider: ReadonlyArray<{ readonly provider: string; readonly requests: number; readonly p50Ms: number; readonly p95Ms: number }>;
  readonly topDevices: ReadonlyArray<{ readonly deviceId: string; readonly requests: number }>;
  /** Requests with a valid device token, and those forwarded unverified in monitor mode. */
  readonly verification: { readonly verified: number; readonly unverified: number };
  /**
   * Tokens the providers reported (events whose usage is unknown are left out; `requestsWithUsage` counts the others):
   * totals, then per app (all-apps summaries only), the top 10 devices, every provider and the top 50 models.
   */
  /**
   * Estimated spend in USD (tokens × the model's price): the operator's price of a model, else the default table's;
   * null only when there is neither (no operator price and `TOLLGATE_DEFAULT_PRICES=false`). `unpricedTokens`: tokens
   * of models with no price (not in the total). `priceAsOf`: every price date the total used (`YYYY-MM-DD` of the
   * default table, or "operator price"); each model's row names its own. Devices: the top 10 by tokens; apps (all-apps
   * summaries): the top 50 by spend.
   */
  readonly spend: {
    readonly currency: 'USD';
    readonly totalUsd: number;
    readonly unpricedTokens: number;
    readonly priceAsOf: readonly string[];
    readonly byModel: ReadonlyArray<{ readonly provider: string; readonly model: string; readonly usd: number; readonly priceAsOf: string }>;
    readonly byDevice: ReadonlyArray<{ readonly deviceId: string; readonly usd: number }>;
    /** All-apps summaries only (empty for one app's): the top 50 apps by spend. */
    readonly byApp: ReadonlyArray<{ readonly appId: string; readonly usd: number }>;
    /** One device's or one user's summary only: the estimated spend per minute (minutes without spend left out). */
    readonly perMinute?: ReadonlyArray<{ readonly minute: number; readonly usd: number }>;
  } | null;
  /** Realtime sessions (WebSocket) that started in the window (a row is written when one ends), and their open seconds summed. */
  readonly realtime: { readonly sessions: number; readonly seconds: number };
  readonly tokens: TokenTotals & {
    readonly byApp: ReadonlyArray<{ readonly appId: string } & TokenTotals>;
    readonly byDevice: ReadonlyArray<{ readonly deviceId: string } & TokenTotals>;
    readonly byProvider: ReadonlyArray<{ readonly provider: string } & TokenTotals>;
    readonly byModel: ReadonlyArray<{ readonly model: string } & TokenTotals>;
  };
}

/** One row of the operator's price table: USD per million input and output tokens of one provider's model. */
export interface Price {
  readonly provider: string;
  readonly model: string;
  readonly inputUsdPerMillion: number;
  readonly outputUsdPerMillion: number;
  readonly updatedAt: number;
}

/** A dated version at the end of a model name: `-2024-07-18`, `-20240718`, `@20241022`, `-001`. */
const MODEL_VERSION_SUFFIX = /(?:[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3})|-v\d+(?::\d+)?)$/;

/**
 * Finds the price of a provider's model: the exact model name, else the name without its dated version suffix
 * (`gpt-4o-mini-2024-07-18` is priced as `gpt-4o-mini` unless it has its own row). Never a looser match: an unpriced
 * model has no spend rather than another model's price.
 */
export function priceFinder<T extends { readonly provider: string; readonly model: string }>(prices: readonly T[]): (provider: string, model: string) => T | undefined {
  const table = new Map(prices.map((price) => [`${price.provider}\u0000${price.model}`, price]));
  return (provider, model) => table.get(`${provider}\u0000${model}`) ?? table.get(`${provider}\u0000${model.replace(MODEL_VERSION_SUFFIX, '')}`);
}

/** The price a spend estimate used, with its date: the default table's `YYYY-MM-DD`, or "operator price". */
export interface PriceUsed {
  readonly inputUsdPerMillion: number;
  readonly outputUsdPerMillion: number;
  readonly priceAsOf: string;
}

export type PriceLookup = (provider: string, model: string) => PriceUsed | undefined;

/**
 * The price of a provider's model: the operator's own (exact name, then without its dated suffix), else the default
 * table's (the same two ways). An operator's price for `gpt-4o-mini` thus also wins over the default row of
 * `gpt-4o-mini-2024-07-18`'s undated name, never the other way round.
 */
export function priceBook(operator: readonly Price[], defaults: readonly DefaultPrice[]): PriceLookup {
  const own = priceFinder(operator);
  const fallback = priceFinder(defaults);
  return (provider, model) => {
    const set = own(provider, model);
    if (set) return { inputUsdPerMillion: set.inputUsdPerMillion, outputUsdPerMillion: set.outputUsdPerMillion, priceAsOf: OPERATOR_PRICE };
    return fallback(provider, model);
  };
}

/** USD for the tokens at a price per million. */
export function costOf(price: { readonly inputUsdPerMillion: number; readonly outputUsdPerMillion: number }, input: number, output: number): number {
  return (input * price.inputUsdPerMillion + output * price.outputUsdPerMillion) / 1_000_000;
}

export class PriceRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  async list(): Promise<Price[]> {
    const rows = (await this.database('prices').orderBy(['provider', 'model'])) as Row[];
    return rows.map((row) => ({
      provider: row.provider as string,
      model: row.model as string,
      inputUsdPerMillion: Number(row.input_usd_per_million),
      outputUsdPerMillion: Number(row.output_usd_per_million),
      updatedAt: Number(row.updated_at),
    }));
  }

  async set(price: Price): Promise<void> {
    const row = { provider: price.provider, model: price.model, input_usd_per_million: price.inputUsdPerMillion, output_usd_per_million: price.outputUsdPerMillion, updated_at: price.updatedAt };
    await this.database('prices').insert(row).onConflict(['provider', 'model']).merge();
  }

  /** True when a row was deleted. */
  async delete(provider: string, model: string): Promise<boolean> {
    return (await this.database('prices').where({ provider, model }).delete()) > 0;
  }
}

/** Token counts of a group of usage events. */
export interface TokenTotals {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  readonly reasoningTokens: number;
  /** In a group: its requests with usage; in the totals: `requestsWithUsage`. */
  readonly requests?: number;
  readonly requestsWithUsage?: number;
}

export interface AuditEntry {
  readonly actor: string;
  readonly action: string;
  readonly target: string | null;
  readonly details: Readonly<Record<string, unknown>> | null;
  readonly createdAt: number;
}

/** An entry as stored, with its id (increasing with time: the paging cursor `before`). */
export interface StoredAuditEntry extends AuditEntry {
  readonly id: number;
}

export class AuditRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  async append(entry: AuditEntry): Promise<void> {
    await this.database('audit_log').insert({
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      details: entry.details === null ? null : JSON.stringify(entry.details),
      created_at: entry.createdAt,
    });
  }

  async list(options: { fromMs?: number; toMs?: number; limit?: number; actor?: string; action?: string; beforeId?: number } = {}): Promise<StoredAuditEntry[]> {
    let query = this.database('audit_log').orderBy('id', 'desc').limit(options.limit ?? 200);
    if (options.beforeId !== undefined) query = query.where('id', '<', options.beforeId);
    if (options.actor !== undefined) query = query.where('actor', options.actor);
    if (options.action !== undefined) query = query.where('action', 'like', `${options.action.replace(/[%_\\]/g, '')}%`);
    if (options.fromMs !== undefined) query = query.where('created_at', '>=', options.fromMs);
    if (options.toMs !== undefined) query = query.where('created_at', '<', options.toMs);
    const rows = (await query) as Row[];
    return rows.map((row) => ({
      id: Number(row.id),
      actor: row.actor as string,
      action: row.action as string,
      target: (row.target as string | null) ?? null,
      details: row.details == null ? null : (JSON.parse(row.details as string) as Record<string, unknown>),
      createdAt: Number(row.created_at),
    }));
  }
}
