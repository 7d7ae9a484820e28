/**
 * Management operations shared by the CLI, the admin API and the assistant server. Every write runs in one transaction
 * and bumps the change feed, so a half-done change is never visible and every gateway process picks it up.
 * No operation ever returns a secret value: secrets come back masked; issued tokens are shown once, at creation.
 */
import { checkEndUserSettings } from './end-user-inputs';
import { AsyncLocalStorage } from 'node:async_hooks';
import { isIP } from 'node:net';
import type { Knex } from 'knex';
import { DEFAULT_APP_SETTINGS, GatewayError, SecretValue, TollgateError, attestationSecretKey, attestationSecretName, maskSecret, normalizeDeviceId, type AppSettings } from '../contract';
import { checkProviderKey, keyCheckUnsupported, KEY_CHECK_TIMEOUT_MS, type KeyCheckResult } from './key-check';
import type { ProviderRegistry } from '../registry/provider-registry';
import { hostMatches } from '../pipeline/proxy-path';
import { generateId, generateToken, hashToken, isWellFormedToken, tokenHint } from '../security/tokens';
import type { SecretCipher } from '../storage/encryption';
import { secretAssociatedData } from '../storage/cached-directory';
import { databaseUnavailable, isDatabaseUnavailable } from '../storage/database-errors';
import { IdempotencyStore, outcomeUnknown } from './idempotency';
import { defaultPriceSources, defaultPrices, type DefaultPrice, type DefaultPriceSource } from '../storage/default-prices';
import { FULL_GRANT, normalizeScopes, requireWithin, type AdminGrant, type AdminScope } from './admin-scopes';
import {
  AppRepository,
  AuditRepository,
  DeviceRepository,
  PriceRepository,
  SecretRepository,
  TokenRepository,
  UsageRepository,
  bumpChangeSequence,
  priceFinder,
  type AppRow,
  type AuditEntry,
  type DeviceRow,
  type PriceLookup,
  type SecretRow,
  type UsageFilter,
  type UsageSummary,
  type RequestLogEntry,
  type RequestLogQuery,
} from '../storage/repositories';
import { ATTESTATION_SECRET_NAMES, AppSettingsInput, AttestationSecretBodyInput, CreateAdminKeyInput, CreateAppInput, DeletePriceInput, SetPriceInput, SetSecretInput, UpdateAppInput, validateInput } from './inputs';

/** An app as management shows it (never its token). */
export interface AppView {
  readonly id: string;
  readonly name: string;
  readonly status: 'active' | 'disabled';
  readonly tokenHint: string;
  /** The token replaced by the last rotation while it still works (its grace period), else null. */
  readonly previousToken: { readonly tokenHint: string; readonly expiresAt: string } | null;
  readonly settings: AppSettings;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** Default grace period of a rotated-away app token: 7 days (168 hours), time to ship an app update. */
export const DEFAULT_ROTATION_GRACE_HOURS = 168;
/** The longest grace period an operator may pick: one year. */
export const MAX_ROTATION_GRACE_HOURS = 8760;

/** A secret as management shows it: masked, never the value. */
export interface SecretView {
  readonly appId: string;
  readonly provider: string;
  readonly masked: string;
  readonly baseUrl: string | null;
  readonly updatedAt: string;
  /** The last request forwarded with this key (written with each usage batch); null: not used since it was set. */
  readonly lastUsedAt: string | null;
}

/** The platform of a device, from its attestation method's name (`apple-…`, `android-…`, `development`). */
export type DevicePlatform = 'ios' | 'android' | 'development' | 'other';
export const DEVICE_PLATFORMS: readonly DevicePlatform[] = ['ios', 'android', 'development', 'other'];

export function devicePlatform(method: string): DevicePlatform {
  if (method.startsWith('apple-')) return 'ios';
  if (method.startsWith('android-')) return 'android';
  if (method === 'development') return 'development';
  return 'other';
}

/** Filters and page of the device list: newest attestation first, `offset` rows skipped, `total` of all that match. */
export interface DeviceQuery {
  /** The start of the device id (case-insensitive). */
  readonly prefix?: string | undefined;
  readonly platform?: DevicePlatform | undefined;
  readonly limit: number;
  readonly offset: number;
}

export interface DevicePage {
  readonly devices: DeviceView[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
  /** The offset of the next page; null on the last page. */
  readonly nextOffset: number | null;
}

export interface DeviceView {
  readonly deviceId: string;
  readonly method: string;
  readonly platform: DevicePlatform;
  readonly firstSeenAt: string;
  readonly lastAttestedAt: string;
  readonly revokedAt: string | null;
}

/** A device a signed-in user used (see {@link ManagementService.userDevices}). */
export interface UserDeviceView {
  readonly deviceId: string;
  /** Null: the device is no longer stored (deleted with its app's devices, or never attested here). */
  readonly platform: DevicePlatform | null;
  readonly method: string | null;
  /** This user's requests from the device, in the request log. */
  readonly requests: number;
  readonly firstSeenAt: string;
  readonly lastSeenAt: string;
  readonly lastAttestedAt: string | null;
  readonly revokedAt: string | null;
}

export interface ManagementOptions {
  /**
   * Called after every committed write in this process, with the change sequence that write took (drops the hot-path
   * caches at once; the change feed's next poll then has nothing new to drop them for).
   */
  readonly onChange?: (sequence: number) => void;
  /** Allow tenant base URLs on private or loopback addresses (tests only). Default false. */
  readonly allowPrivateUpstreams?: boolean;
  /** A production gateway: `attestationMode: "monitor"` needs `allowMonitorInProduction` too. */
  readonly production?: boolean;
  readonly clock?: () => number;
  /** How long "test this key" waits for the provider (default 10 s). */
  readonly keyCheckTimeoutMs?: number;
  /** Called after a device (`*`: every device of the app) was revoked (webhook `device.revoked`). */
  readonly onDeviceRevoked?: (appId: string, deviceId: string) => void;
  /**
   * Estimate spend from the dated default price table where the operator set no price (`TOLLGATE_DEFAULT_PRICES`,
   * default true); false: from the operator's prices only.
   */
  readonly defaultPrices?: boolean;
  /**
   * Called after a committed change of an app's security settings ({@link SECURITY_SETTINGS}), with each changed
   * setting's old and new value (logged at `warn`: monitor mode and opened routes must never change silently).
   */
  readonly onSecuritySettingsChange?: (appId: string, changes: SecurityChanges) => void;
}

/**
 * The settings that open an app beyond its attestation or its provider's usual routes. Their changes are audited with
 * the old and the new value and logged at `warn`. None holds a secret.
 */
export const SECURITY_SETTINGS = [
  'attestationMode',
  'monitorProviders',
  'allowMonitorInProduction',
  'openAccountRoutes',
  'openCredentialRoutes',
  'extraRoutes',
  'allowDevelopmentAttestation',
  'allowAppAttestDevelopment',
  'assertionMode',
] as const satisfies ReadonlyArray<keyof AppSettings>;

export type SecurityChanges = Partial<Record<(typeof SECURITY_SETTINGS)[number], { readonly from: unknown; readonly to: unknown }>>;

/** The security settings that differ between `before` and `after` (absent reads as null). */
export function securityChanges(before: AppSettings, after: AppSettings): SecurityChanges {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const key of SECURITY_SETTINGS) {
    const from = before[key] ?? null;
    const to = after[key] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[key] = { from, to };
  }
  return changes as SecurityChanges;
}

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

function appView(row: AppRow, nowMs: number): AppView {
  const previous = row.previousTokenHint && row.previousTokenExpiresAt && row.previousTokenExpiresAt > nowMs ? { tokenHint: row.previousTokenHint, expiresAt: iso(row.previousTokenExpiresAt) } : null;
  return { id: row.id, name: row.name, status: row.status, tokenHint: row.tokenHint, previousToken: previous, settings: row.settings, createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt) };
}

function secretView(row: SecretRow): SecretView {
  return { appId: row.appId, provider: row.provider, masked: row.masked, baseUrl: row.baseUrl, updatedAt: iso(row.updatedAt), lastUsedAt: isoOrNull(row.lastUsedAt ?? null) };
}

function deviceView(row: DeviceRow): DeviceView {
  return {
    deviceId: row.deviceId,
    method: row.method,
    platform: devicePlatform(row.method),
    firstSeenAt: iso(row.createdAt),
    lastAttestedAt: iso(row.lastAttestedAt),
    revokedAt: isoOrNull(row.revokedAt),
  };
}

function notFound(what: string): TollgateError {
  return new TollgateError('TG_ERR_NOT_FOUND', `${what} not found`);
}

/** Copies the validated settings fields over `base` (null resets a field to its default), normalizing the certificate digest. */
function mergeSettings(base: AppSettings, input: AppSettingsInput, production: boolean): AppSettings {
  const settings: Record<string, unknown> = { ...base };
  for (const key of Object.keys(DEFAULT_APP_SETTINGS) as (keyof AppSettings)[]) {
    const value = input[key as keyof AppSettingsInput];
    // null resets a setting to its default (for the narrowing lists and quotas: none).
    if (value === null) settings[key] = DEFAULT_APP_SETTINGS[key];
    else if (value !== undefined) settings[key] = value;
  }
  if (typeof settings.androidCertSha256 === 'string') settings.androidCertSha256 = settings.androidCertSha256.replace(/:/g, '').toLowerCase();
  // An empty list opens nothing: stored as none, so that the settings read the same as the default.
  if (Array.isArray(settings.openAccountRoutes)) settings.openAccountRoutes = settings.openAccountRoutes.length ? [...new Set(settings.openAccountRoutes as string[])].sort() : undefined;
  if (Array.isArray(settings.extraRoutes) && settings.extraRoutes.length === 0) settings.extraRoutes = undefined;
  if (Array.isArray(settings.openCredentialRoutes)) settings.openCredentialRoutes = settings.openCredentialRoutes.length ? [...new Set(settings.openCredentialRoutes as string[])].sort() : undefined;
  // An empty budget map sets no budget: stored as none (and the hot path's no-budget check stays a property read).
  for (const key of ['providerDailyTokens', 'providerDeviceDailyTokens', 'providerMinuteTokens'] as const) {
    if (settings[key] !== undefined && Object.keys(settings[key] as object).length === 0) settings[key] = undefined;
  }
  checkPolicy(settings as unknown as AppSettings, production);
  checkEndUserSettings(settings as unknown as AppSettings);
  return Object.freeze(settings) as unknown as AppSettings;
}

/**
 * A policy must be one the gateway can enforce, or it is refused (docs/security.md, "Policies, proofs and
 * identities"). `every-request` needs every method the app allows to prove a request: development attestation cannot,
 * and at least one method that can (App Attest with `appleAppId`; Android key attestation or Play Integrity standard
 * requests with `androidPackage`) must be configured.
 */
function checkPolicy(settings: AppSettings, production: boolean): void {
  // Monitor mode forwards unattested requests: on a production gateway only with the explicit opt-in beside it.
  if (production && settings.attestationMode === 'monitor' && !settings.allowMonitorInProduction) {
    throw new TollgateError('TG_ERR_VALIDATION', 'attestationMode "monitor" forwards requests without a valid device token; on a production gateway set allowMonitorInProduction: true with it.', {
      attestationMode: ['"monitor" on a production gateway needs allowMonitorInProduction: true'],
    });
  }
  if (settings.assertionMode !== 'every-request') return;
  const problems: string[] = [];
  if (settings.allowDevelopmentAttestation) problems.push('development attestation cannot prove a request: set allowDevelopmentAttestation to false first');
  if (!settings.appleAppId && !settings.androidPackage) {
    problems.push('no allowed attestation method can prove a request: set appleAppId (App Attest) or androidPackage (Android key attestation, Play Integrity standard requests)');
  }
  if (problems.length > 0) throw new TollgateError('TG_ERR_VALIDATION', `assertionMode "every-request" cannot be enforced for this app: ${problems.join('; ')}`, { assertionMode: problems });
}

function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.internal') || host.endsWith('.local')) return true;
  const version = isIP(host);
  if (version === 4) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    return a === 10 || a === 127 || a === 0 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127);
  }
  if (version === 6) return host === '::1' || host === '::' || host.startsWith('fc') || host.startsWith('fd') || host.startsWith('fe80') || host.startsWith('::ffff:');
  return false;
}

/** The audit entry of a change, built from the change's result (ids, names, masked values; never a secret value). */
export type AuditBuilder<T> = (result: T) => Omit<AuditEntry, 'createdAt'>;

/** The audit write failed: the change was rolled back with it. */
function auditFailed(cause: unknown): GatewayError {
  if (isDatabaseUnavailable(cause)) return databaseUnavailable(cause);
  return new GatewayError('internalError', 'The change was not made: its audit entry could not be written.', { reason: 'audit_write_failed', cause });
}

export class ManagementService {
  private readonly clock: () => number;
  /** The audit entry owed by the change running in this async context (see {@link audited}). */
  private readonly pendingAudit = new AsyncLocalStorage<{ build: AuditBuilder<unknown>; written: boolean; extra?: Record<string, unknown> }>();

  /** Adds details to the audit entry of the change running now (old and new values only the change itself knows). */
  private noteAudit(details: Record<string, unknown>): void {
    const scope = this.pendingAudit.getStore();
    if (scope) scope.extra = { ...(scope.extra ?? {}), ...details };
  }

  /** The audit entry `build` makes, with the details the change noted. */
  private static withNoted(entry: Omit<AuditEntry, 'createdAt'>, extra: Record<string, unknown> | undefined): Omit<AuditEntry, 'createdAt'> {
    return extra ? { ...entry, details: { ...((entry.details as Record<string, unknown> | null) ?? {}), ...extra } } : entry;
  }

  /** Security changes committed by the write running now, reported once it commits. */
  private readonly committedSecurity = new AsyncLocalStorage<Array<{ appId: string; changes: SecurityChanges }>>();

  constructor(
    private readonly database: Knex,
    private readonly cipher: SecretCipher,
    private readonly registry: ProviderRegistry,
    private readonly options: ManagementOptions = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.idempotency = new IdempotencyStore(database, cipher, this.clock);
  }

  /** Answers of calls made with an Idempotency-Key, stored with their change (./idempotency.ts). */
  readonly idempotency: IdempotencyStore;

  /**
   * Runs `work` (one management call) so that the change it makes and its audit entry are one transaction: the entry
   * is inserted in the change's transaction, and when it cannot be written the change is rolled back and the caller
   * gets a typed error (`serviceUnavailable`/`database_unavailable` or `internalError`/`audit_write_failed`).
   * A `work` that changes nothing through this service gets its entry written on its own afterwards.
   */
  async audited<T>(build: AuditBuilder<T>, work: () => Promise<T>): Promise<T> {
    const scope: { build: AuditBuilder<unknown>; written: boolean; extra?: Record<string, unknown> } = { build: build as AuditBuilder<unknown>, written: false };
    const result = await this.pendingAudit.run(scope, work);
    if (!scope.written) {
      try {
        await new AuditRepository(this.database).append({ ...ManagementService.withNoted(build(result), scope.extra), createdAt: this.clock() });
      } catch (error) {
        throw auditFailed(error);
      }
    }
    return result;
  }

  private async write<T>(work: (transaction: Knex.Transaction) => Promise<T>): Promise<T> {
    const audit = this.pendingAudit.getStore();
    let sequence = 0;
    // Set once the change is complete and knex sends COMMIT: a connection lost from then on leaves the outcome unknown.
    let committing = false;
    let result: T;
    const security: Array<{ appId: string; changes: SecurityChanges }> = [];
    try {
      result = await this.database.transaction(async (transaction) => {
        security.length = 0;
        const value = await this.committedSecurity.run(security, () => work(transaction));
        sequence = await bumpChangeSequence(transaction);
        if (audit && !audit.written) {
          try {
            await new AuditRepository(transaction).append({ ...ManagementService.withNoted(audit.build(value), audit.extra), createdAt: this.clock() });
          } catch (error) {
            throw auditFailed(error);
          }
          audit.written = true;
        }
        await this.idempotency.recordIfPending(transaction, value);
        committing = true;
        return value;
      });
    } catch (error) {
      if (committing && isDatabaseUnavailable(error)) throw outcomeUnknown(error);
      throw error;
    }
    this.options.onChange?.(sequence);
    for (const { appId, changes } of security) this.options.onSecuritySettingsChange?.(appId, changes);
    return result;
  }

  /** Records the security settings a change alters: in its audit entry (old and new values), and for the warn log. */
  private noteSecurityChanges(appId: string, changes: SecurityChanges): void {
    if (Object.keys(changes).length === 0) return;
    this.noteAudit({ changes });
    this.committedSecurity.getStore()?.push({ appId, changes });
  }

  private async requireApp(transaction: Knex | Knex.Transaction, appId: string): Promise<AppRow> {
    const app = typeof appId === 'string' ? await new AppRepository(transaction).findById(appId) : undefined;
    if (!app) throw notFound(`app "${String(appId)}"`);
    return app;
  }

  /** Provider slugs in route settings must name registered providers (a typo would silently open nothing). */
  private checkRouteSettings(input: AppSettingsInput): void {
    const unknown = (slugs: readonly string[]) => slugs.filter((slug) => !this.registry.find(slug));
    const fields: Record<string, string[]> = {};
    const closedUnknown = unknown(input.openAccountRoutes ?? []);
    if (closedUnknown.length) fields.openAccountRoutes = [`unknown provider ${closedUnknown.join(', ')}`];
    const credentialUnknown = unknown(input.openCredentialRoutes ?? []);
    if (credentialUnknown.length) fields.openCredentialRoutes = [`unknown provider ${credentialUnknown.join(', ')}`];
    const extraUnknown = unknown((input.extraRoutes ?? []).map((route) => route.provider));
    if (extraUnknown.length) fields.extraRoutes = [`unknown provider ${extraUnknown.join(', ')}`];
    if (Object.keys(fields).length) {
      throw new TollgateError('TG_ERR_VALIDATION', `invalid input: ${Object.entries(fields).map(([field, messages]) => `${field}: ${messages.join('; ')}`).join(' | ')}`, fields);
    }
  }

  /** Creates an app. The app token is in the answer and nowhere else, ever. */
  async createApp(plain: unknown): Promise<AppView & { appToken: string }> {
    const input = validateInput(CreateAppInput, plain);
    this.checkRouteSettings(input);
    const now = this.clock();
    const appToken = generateToken('app');
    const row: AppRow = {
      id: generateId('app'),
      name: input.name,
      tokenHash: hashToken(appToken),
      tokenHint: tokenHint(appToken),
      status: 'active',
      settings: mergeSettings(DEFAULT_APP_SETTINGS, input, this.options.production ?? false),
      devicesRevokedBefore: 0,
      createdAt: now,
      updatedAt: now,
    };
    return this.write(async (transaction) => {
      await new AppRepository(transaction).insert(row);
      this.noteSecurityChanges(row.id, securityChanges(DEFAULT_APP_SETTINGS, row.settings));
      return { ...appView(row, this.clock()), appToken };
    });
  }

  async listApps(): Promise<AppView[]> {
    return (await new AppRepository(this.database).list()).map(appView);
  }

  async getApp(appId: string): Promise<AppView> {
    return appView(await this.requireApp(this.database, appId), this.clock());
  }

  async updateApp(appId: string, plain: unknown): Promise<AppView> {
    const input = validateInput(UpdateAppInput, plain);
    this.checkRouteSettings(input);
    return this.write(async (transaction) => {
      const app = await this.requireApp(transaction, appId);
      const settings = mergeSettings(app.settings, input, this.options.production ?? false);
      const now = this.clock();
      await new AppRepository(transaction).update(appId, { name: input.name, settings }, now);
      this.noteSecurityChanges(appId, securityChanges(app.settings, settings));
      return appView({ ...app, name: input.name ?? app.name, settings, updatedAt: now }, this.clock());
    });
  }

  /**
   * Replaces the app token. The old one keeps working for `graceHours` (default 168 = 7 days), time to ship the new one
   * in an app update; `0` ends it at once (everywhere within the change-poll interval). A token rotated away before is
   * dropped: only the current and the previous token ever work.
   */
  async rotateAppToken(appId: string, graceHours: number = DEFAULT_ROTATION_GRACE_HOURS): Promise<{ id: string; appToken: string; tokenHint: string; previousToken: AppView['previousToken'] }> {
    if (typeof graceHours !== 'number' || !Number.isInteger(graceHours) || graceHours < 0 || graceHours > MAX_ROTATION_GRACE_HOURS) {
      throw new TollgateError('TG_ERR_VALIDATION', `graceHours must be a whole number from 0 to ${MAX_ROTATION_GRACE_HOURS}.`, { graceHours: [`must be a whole number from 0 to ${MAX_ROTATION_GRACE_HOURS}`] });
    }
    const appToken = generateToken('app');
    const now = this.clock();
    // The answer is made inside the change, so that a call with an Idempotency-Key stores exactly what it answers.
    return this.write(async (transaction) => {
      const app = await this.requireApp(transaction, appId);
      const grace = graceHours > 0;
      await new AppRepository(transaction).update(
        appId,
        {
          tokenHash: hashToken(appToken),
          tokenHint: tokenHint(appToken),
          previousTokenHash: grace ? app.tokenHash : null,
          previousTokenHint: grace ? app.tokenHint : null,
          previousTokenExpiresAt: grace ? now + graceHours * 3_600_000 : null,
        },
        now,
      );
      const row = await this.requireApp(transaction, appId);
      return { id: appId, appToken, tokenHint: tokenHint(appToken), previousToken: appView(row, now).previousToken };
    });
  }

  async setAppStatus(appId: string, status: 'active' | 'disabled'): Promise<AppView> {
    return this.write(async (transaction) => {
      const app = await this.requireApp(transaction, appId);
      const now = this.clock();
      await new AppRepository(transaction).update(appId, { status }, now);
      return appView({ ...app, status, updatedAt: now }, this.clock());
    });
  }

  async deleteApp(appId: string): Promise<{ id: string; deleted: true }> {
    await this.write(async (transaction) => {
      await this.requireApp(transaction, appId);
      await new AppRepository(transaction).delete(appId);
    });
    return { id: appId, deleted: true };
  }

  /** Stores a provider secret, encrypted. Answers the masked record. */
  async setSecret(plain: unknown): Promise<SecretView> {
    const input = validateInput(SetSecretInput, plain);
    const provider = this.registry.find(input.provider);
    if (!provider) throw new TollgateError('TG_ERR_VALIDATION', `unknown provider "${input.provider}"`, { provider: ['unknown provider'] });
    const baseUrl = input.baseUrl === undefined ? null : this.checkTenantBaseUrl(input.provider, input.baseUrl);
    if (baseUrl === null && provider.manifest.tenant?.baseUrl === 'required') {
      throw new TollgateError('TG_ERR_VALIDATION', `provider "${input.provider}" needs a base URL (--base-url), e.g. https://${provider.manifest.tenant.allowedHosts[0]?.replace('*.', 'example.')}`, {
        baseUrl: ['required for this provider'],
      });
    }
    const now = this.clock();
    return this.write(async (transaction) => {
      await this.requireApp(transaction, input.appId);
      const existing = await new SecretRepository(transaction).find(input.appId, input.provider);
      const row: SecretRow = {
        appId: input.appId,
        provider: input.provider,
        sealedValue: this.cipher.seal(input.value, secretAssociatedData(input.appId, input.provider)),
        keyId: this.cipher.keyId,
        masked: maskSecret(input.value),
        baseUrl,
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      };
      await new SecretRepository(transaction).upsert(row);
      return secretView(row);
    });
  }

  /** A tenant base URL must be https, on a host the manifest allows, and (outside tests) not on a private address. */
  private checkTenantBaseUrl(slug: string, value: string): string {
    const provider = this.registry.find(slug)!;
    const rule = provider.manifest.tenant;
    if (!rule) throw new TollgateError('TG_ERR_VALIDATION', `provider "${slug}" has a fixed host; it takes no base URL`, { baseUrl: ['not accepted for this provider'] });
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new TollgateError('TG_ERR_VALIDATION', 'baseUrl is not a URL', { baseUrl: ['must be an https URL'] });
    }
    const problems: string[] = [];
    if (url.protocol !== 'https:') problems.push('must use https');
    if (url.username || url.password || url.search || url.hash) problems.push('must not carry credentials, a query or a fragment');
    if (!rule.allowedHosts.some((pattern) => hostMatches(url.hostname, pattern))) problems.push(`host must match ${rule.allowedHosts.join(' or ')}`);
    if (isPrivateHost(url.hostname) && !this.options.allowPrivateUpstreams) problems.push('must not be a private or loopback address');
    const path = url.pathname.replace(/\/$/, '');
    if (rule.pathPattern && !new RegExp(rule.pathPattern).test(path)) problems.push(`path must match ${rule.pathPattern}`);
    if (problems.length > 0) throw new TollgateError('TG_ERR_VALIDATION', `baseUrl ${problems.join('; ')}`, { baseUrl: problems });
    return url.href.replace(/\/$/, '');
  }

  /** The app's provider keys, masked (attestation credentials are listed separately). */
  async listSecrets(appId: string): Promise<SecretView[]> {
    await this.requireApp(this.database, appId);
    return (await new SecretRepository(this.database).listForApp(appId)).filter((row) => attestationSecretName(row.provider) === null).map(secretView);
  }

  /**
   * "Test this key": one harmless request to the provider with the app's stored key, as the manifest's `keyCheck`
   * declares it (key-check.ts). Answers the outcome, the upstream status and the latency; never the key or the body.
   * A provider without a key check is refused with `key_check_unsupported`.
   */
  async testSecret(appId: string, provider: string): Promise<KeyCheckResult> {
    await this.requireApp(this.database, appId);
    const registered = typeof provider === 'string' && attestationSecretName(provider) === null ? this.registry.find(provider) : undefined;
    const row = registered ? await new SecretRepository(this.database).find(appId, provider) : undefined;
    if (!registered || !row) throw notFound(`secret for provider "${String(provider)}"`);
    if (!registered.manifest.keyCheck) throw keyCheckUnsupported(provider);
    const value = new SecretValue(this.cipher.open(row.sealedValue, secretAssociatedData(appId, provider)));
    const result = await checkProviderKey(registered, { provider, value, baseUrl: row.baseUrl ?? undefined }, this.options.keyCheckTimeoutMs ?? KEY_CHECK_TIMEOUT_MS);
    return { appId, provider, ...result, checkedAt: iso(this.clock()) };
  }

  /**
   * Stores an attestation credential of the app (Play Integrity keys, a service-account JSON), encrypted like a provider
   * key, under {@link attestationSecretKey}.
   */
  async setAttestationSecret(appId: string, name: string, plain: unknown): Promise<{ appId: string; name: string; masked: string; updatedAt: string }> {
    if (!(ATTESTATION_SECRET_NAMES as readonly string[]).includes(name)) {
      throw new TollgateError('TG_ERR_VALIDATION', `unknown attestation secret "${name}" (known: ${ATTESTATION_SECRET_NAMES.join(', ')})`, { name: [`must be one of ${ATTESTATION_SECRET_NAMES.join(', ')}`] });
    }
    const input = validateInput(AttestationSecretBodyInput, plain);
    const key = attestationSecretKey(name);
    const now = this.clock();
    return this.write(async (transaction) => {
      await this.requireApp(transaction, appId);
      const existing = await new SecretRepository(transaction).find(appId, key);
      const masked = maskSecret(input.value);
      await new SecretRepository(transaction).upsert({
        appId,
        provider: key,
        sealedValue: this.cipher.seal(input.value, secretAssociatedData(appId, key)),
        keyId: this.cipher.keyId,
        masked,
        baseUrl: null,
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      });
      return { appId, name, masked, updatedAt: iso(now) };
    });
  }

  async listAttestationSecrets(appId: string): Promise<Array<{ appId: string; name: string; masked: string; updatedAt: string }>> {
    await this.requireApp(this.database, appId);
    return (await new SecretRepository(this.database).listForApp(appId)).flatMap((row) => {
      const name = attestationSecretName(row.provider);
      return name === null ? [] : [{ appId, name, masked: row.masked, updatedAt: iso(row.updatedAt) }];
    });
  }

  async deleteAttestationSecret(appId: string, name: string): Promise<{ appId: string; name: string; deleted: true }> {
    await this.write(async (transaction) => {
      await this.requireApp(transaction, appId);
      if ((await new SecretRepository(transaction).delete(appId, attestationSecretKey(name))) === 0) throw notFound(`attestation secret "${name}"`);
    });
    return { appId, name, deleted: true };
  }

  async deleteSecret(appId: string, provider: string): Promise<{ appId: string; provider: string; deleted: true }> {
    await this.write(async (transaction) => {
      await this.requireApp(transaction, appId);
      if ((await new SecretRepository(transaction).delete(appId, provider)) === 0) throw notFound(`secret for provider "${provider}"`);
    });
    return { appId, provider, deleted: true };
  }

  /** A development attestation token (`dt_…`), shown once. */
  async createDevelopmentToken(appId: string, label?: string): Promise<{ id: string; appId: string; developmentToken: string; allowed: boolean }> {
    const token = generateToken('development');
    const id = generateId('dtk');
    return this.write(async (transaction) => {
      const found = await this.requireApp(transaction, appId);
      await new TokenRepository(transaction).insertDevelopmentToken({
        id,
        appId,
        tokenHash: hashToken(token),
        tokenHint: tokenHint(token),
        label: label ?? null,
        createdAt: this.clock(),
      });
      return { id, appId, developmentToken: token, allowed: found.settings.allowDevelopmentAttestation };
    });
  }

  /** The app a development token belongs to, or null when unknown or revoked. */
  async findDevelopmentTokenOwner(token: string): Promise<{ appId: string } | null> {
    if (!isWellFormedToken('development', token)) return null;
    const row = await new TokenRepository(this.database).findDevelopmentToken(hashToken(token));
    return row && row.revokedAt === null ? { appId: row.appId } : null;
  }

  /**
   * An admin API key (`ak_…`), shown once, with its scopes (default `admin`) and optional expiry. `creator` is who asks
   * (a key's grant; the CLI and dashboard sessions hold everything): the new key never has a scope the creator lacks,
   * nor outlives it (403 `scope_exceeds_own`).
   */
  async createAdminKey(plain: unknown, creator: AdminGrant = FULL_GRANT): Promise<{ id: string; name: string; scopes: AdminScope[]; expiresAt: string | null; adminKey: string }> {
    const input = validateInput(CreateAdminKeyInput, plain);
    const scopes = normalizeScopes(input.scopes ?? ['admin']);
    const now = this.clock();
    let expiresAt: number | null = null;
    if (input.expiresAt !== undefined) {
      expiresAt = Date.parse(input.expiresAt);
      if (!Number.isFinite(expiresAt) || expiresAt <= now || expiresAt > now + 10 * 365 * 86_400_000) {
        throw new TollgateError('TG_ERR_VALIDATION', 'expiresAt must be a date-time in the future, at most 10 years ahead', { expiresAt: ['must be in the future, at most 10 years ahead'] });
      }
    }
    requireWithin(creator, { scopes, expiresAt }, 'create');
    const key = generateToken('admin');
    const id = generateId('adm');
    return this.write(async (transaction) => {
      await new TokenRepository(transaction).insertAdminKey({ id, name: input.name, keyHash: hashToken(key), keyHint: tokenHint(key), createdAt: now, scopes, expiresAt });
      return { id, name: input.name, scopes, expiresAt: isoOrNull(expiresAt), adminKey: key };
    });
  }

  async listAdminKeys(): Promise<Array<{ id: string; name: string; keyHint: string; scopes: AdminScope[]; createdAt: string; expiresAt: string | null; revokedAt: string | null }>> {
    return (await new TokenRepository(this.database).listAdminKeys()).map((key) => ({ ...key, createdAt: iso(key.createdAt), expiresAt: isoOrNull(key.expiresAt), revokedAt: isoOrNull(key.revokedAt) }));
  }

  /**
   * Revokes an admin key: the next request made with it is refused. `actor` is who asks: a key cannot revoke a key
   * holding a scope it lacks (403 `scope_exceeds_own`).
   */
  async revokeAdminKey(id: string, actor: AdminGrant = FULL_GRANT): Promise<{ id: string; revoked: true }> {
    await this.write(async (transaction) => {
      const tokens = new TokenRepository(transaction);
      const target = await tokens.getAdminKey(String(id));
      if (!target) throw notFound(`admin key "${String(id)}"`);
      requireWithin(actor, { scopes: target.scopes }, 'revoke');
      await tokens.revokeAdminKey(String(id), this.clock());
    });
    return { id, revoked: true };
  }

  async listDevelopmentTokens(appId: string): Promise<Array<{ id: string; tokenHint: string; label: string | null; createdAt: string; revokedAt: string | null }>> {
    await this.requireApp(this.database, appId);
    return (await new TokenRepository(this.database).listDevelopmentTokens(appId)).map((token) => ({ ...token, createdAt: iso(token.createdAt), revokedAt: isoOrNull(token.revokedAt) }));
  }

  /** Revokes a development token: it can no longer be traded for device tokens. */
  async revokeDevelopmentToken(appId: string, id: string): Promise<{ appId: string; id: string; revoked: true }> {
    await this.write(async (transaction) => {
      await this.requireApp(transaction, appId);
      if (!(await new TokenRepository(transaction).revokeDevelopmentToken(appId, String(id), this.clock()))) throw notFound(`development token "${String(id)}"`);
    });
    return { appId, id, revoked: true };
  }

  /** The operator's own price table (USD per million tokens), shipped empty; it overrides the default table. */
  async listPrices(): Promise<Array<{ provider: string; model: string; inputUsdPerMillion: number; outputUsdPerMillion: number; updatedAt: string }>> {
    return (await new PriceRepository(this.database).list()).map((price) => ({ ...price, updatedAt: iso(price.updatedAt) }));
  }

  /**
   * The dated default price table (core/storage/default-prices.ts): each row with the date its provider's page was read
   * and the page, and whether an operator's price overrides it. `enabled` false: spend uses the operator's prices only.
   */
  async listDefaultPrices(): Promise<{ enabled: boolean; sources: Record<string, DefaultPriceSource>; prices: Array<DefaultPrice & { overridden: boolean }> }> {
    const own = priceFinder(await new PriceRepository(this.database).list());
    return {
      enabled: this.options.defaultPrices !== false,
      sources: defaultPriceSources(this.registry.list().map((provider) => provider.manifest)),
      prices: this.defaultPriceTable().map((price) => ({ ...price, overridden: own(price.provider, price.model) !== undefined })),
    };
  }

  /** The providers' published prices (their manifests' `prices`), read once. */
  private defaultPriceRows: readonly DefaultPrice[] | undefined;
  private defaultPriceTable(): readonly DefaultPrice[] {
    return (this.defaultPriceRows ??= defaultPrices(this.registry.list().map((provider) => provider.manifest)));
  }

  /** The usage repository, with the default price table unless the operator turned it off. */
  private usageRepository(): UsageRepository {
    return new UsageRepository(this.database, this.options.defaultPrices === false ? [] : this.defaultPriceTable());
  }

  /** One app's estimated spend over [fromMs, toMs), priced as the usage summary prices it (the spend.threshold alert). */
  async estimatedSpend(appId: string, fromMs: number, toMs: number): Promise<{ usd: number; unpricedTokens: number } | null> {
    return this.usageRepository().spendOf(appId, fromMs, toMs);
  }

  /** The price of a provider's model as spend estimates find it (the operator's, else the default table's). */
  async priceLookup(): Promise<PriceLookup> {
    return this.usageRepository().prices();
  }

  /** Sets one model's price; the usage summary's spend uses it at once, for past events too. */
  async setPrice(body: unknown): Promise<{ provider: string; model: string; inputUsdPerMillion: number; outputUsdPerMillion: number; updatedAt: string }> {
    const input = validateInput(SetPriceInput, body);
    if (!this.registry.find(input.provider)) throw new TollgateError('TG_ERR_VALIDATION', `unknown provider "${input.provider}"`, { provider: ['unknown provider'] });
    const price = { provider: input.provider, model: input.model, inputUsdPerMillion: input.inputUsdPerMillion, outputUsdPerMillion: input.outputUsdPerMillion, updatedAt: this.clock() };
    // The audit entry is built from what the transaction returns: return the result from it.
    return this.write(async (transaction) => {
      await new PriceRepository(transaction).set(price);
      return { ...price, updatedAt: iso(price.updatedAt) };
    });
  }

  async deletePrice(body: unknown): Promise<{ provider: string; model: string; deleted: true }> {
    const input = validateInput(DeletePriceInput, body);
    return this.write(async (transaction) => {
      if (!(await new PriceRepository(transaction).delete(input.provider, input.model))) throw notFound(`price of "${input.provider}" model "${input.model}"`);
      return { provider: input.provider, model: input.model, deleted: true as const };
    });
  }

  /** Usage for the dashboard's charts; `appId` null means every app. */
  async usageSummary(appId: string | null, fromMs: number, toMs: number, filter: UsageFilter = {}): Promise<UsageSummary> {
    if (appId !== null) await this.requireApp(this.database, appId);
    return this.usageRepository().summary(appId, fromMs, toMs, undefined, appId === null ? {} : filter);
  }

  /**
   * The request log of one app, newest first (see {@link RequestLogQuery}); each row with its estimated spend and the
   * date of the price used (`priceAsOf`).
   */
  async requestLog(query: RequestLogQuery): Promise<{ requests: Array<Omit<RequestLogEntry, 'createdAt'> & { createdAt: string }>; nextBefore: number | null }> {
    await this.requireApp(this.database, query.appId);
    const usage = this.usageRepository();
    const rows = await usage.withSpend(await usage.requestLog(query));
    return {
      requests: rows.map((row) => ({ ...row, createdAt: iso(row.createdAt) })),
      nextBefore: rows.length === query.limit ? rows[rows.length - 1]!.id : null,
    };
  }

  /** Deletes request-log rows older than `beforeMs` (the retention setting). */
  async pruneRequestLog(beforeMs: number): Promise<number> {
    return new UsageRepository(this.database).prune(beforeMs);
  }

  async countAdminKeys(): Promise<number> {
    return new TokenRepository(this.database).countAdminKeys();
  }

  async listDevices(appId: string): Promise<DeviceView[]> {
    await this.requireApp(this.database, appId);
    return (await new DeviceRepository(this.database).listForApp(appId)).map(deviceView);
  }

  /** One page of the app's devices, searched by id prefix and platform, with the total that match. */
  async searchDevices(appId: string, query: DeviceQuery): Promise<DevicePage> {
    await this.requireApp(this.database, appId);
    const { rows, total } = await new DeviceRepository(this.database).search(appId, query);
    const next = query.offset + rows.length;
    return { devices: rows.map(deviceView), total, limit: query.limit, offset: query.offset, nextOffset: next < total ? next : null };
  }

  /**
   * One device with its last request in the request log (`lastSeenAt`; null when none is kept, see
   * TOLLGATE_REQUEST_LOG_RETENTION_DAYS). The id may be given in any case where the method's ids are case-insensitive.
   */
  async getDevice(appId: string, deviceId: string): Promise<DeviceView & { lastSeenAt: string | null }> {
    await this.requireApp(this.database, appId);
    const devices = new DeviceRepository(this.database);
    const device = (await devices.find(appId, deviceId)) ?? (await this.findCaseInsensitive(devices, appId, deviceId));
    if (!device) throw notFound(`device "${String(deviceId)}"`);
    const [last] = await new UsageRepository(this.database).requestLog({ appId, deviceId: device.deviceId, limit: 1 });
    return { ...deviceView(device), lastSeenAt: last ? iso(last.createdAt) : null };
  }

  /**
   * The devices a signed-in user's requests came from (as long as the request log keeps them), most recently used
   * first: each with its requests, first and last use by this user, and the device's platform and revocation (null
   * fields for a device no longer stored).
   */
  async userDevices(appId: string, userId: string): Promise<UserDeviceView[]> {
    await this.requireApp(this.database, appId);
    const uses = await new UsageRepository(this.database).devicesOfUser(appId, userId);
    const stored = new Map<string, DeviceRow>();
    if (uses.length) {
      const devices = new DeviceRepository(this.database);
      for (const use of uses) {
        const row = await devices.find(appId, use.deviceId);
        if (row) stored.set(use.deviceId, row);
      }
    }
    return uses.map((use) => {
      const row = stored.get(use.deviceId);
      return {
        deviceId: use.deviceId,
        platform: row ? devicePlatform(row.method) : null,
        method: row?.method ?? null,
        requests: use.requests,
        firstSeenAt: iso(use.firstSeenAt),
        lastSeenAt: iso(use.lastSeenAt),
        lastAttestedAt: row ? iso(row.lastAttestedAt) : null,
        revokedAt: row ? isoOrNull(row.revokedAt) : null,
      };
    });
  }

  /**
   * Revokes one device: its tokens are refused on their next request. The id may be given in any case for the methods
   * whose ids are case-insensitive (`normalizeDeviceId`); the answer names the device's stored id.
   */
  async revokeDevice(appId: string, deviceId: string): Promise<{ appId: string; deviceId: string; revoked: true; attestationMode?: 'enforce'; monitorModeEnded?: true }> {
    let revokedId = deviceId;
    let monitorEnded = false;
    await this.write(async (transaction) => {
      await this.requireApp(transaction, appId);
      const devices = new DeviceRepository(transaction);
      const device = (await devices.find(appId, deviceId)) ?? (await this.findCaseInsensitive(devices, appId, deviceId));
      if (!device) throw notFound(`device "${deviceId}"`);
      revokedId = device.deviceId;
      await devices.revoke(appId, device.deviceId, this.clock());
      monitorEnded = await this.endMonitorMode(transaction, (await this.requireApp(transaction, appId)));
    });
    this.options.onDeviceRevoked?.(appId, revokedId);
    return { appId, deviceId: revokedId, revoked: true, ...(monitorEnded ? { attestationMode: 'enforce' as const, monitorModeEnded: true as const } : {}) };
  }

  /**
   * A revocation is an operator's explicit decision, and in monitor mode a revoked device could come back by simply
   * sending no device token (it is then indistinguishable from any unattested client). So revoking a device of an app
   * in monitor mode ends monitor mode: the app enforces attestation from this change on (audited with the old and the
   * new value, logged at warn). Turning monitor mode on again is a separate, explicit change.
   * docs/decisions/2026-12-05-monitor-mode.md.
   */
  private async endMonitorMode(transaction: Knex.Transaction, app: AppRow): Promise<boolean> {
    if (app.settings.attestationMode !== 'monitor') return false;
    const settings = Object.freeze({ ...app.settings, attestationMode: 'enforce' as const });
    await new AppRepository(transaction).update(app.id, { settings }, this.clock());
    this.noteSecurityChanges(app.id, securityChanges(app.settings, settings));
    return true;
  }

  /** The device stored under the normal form of `deviceId`, when its method's ids are case-insensitive. */
  private async findCaseInsensitive(devices: DeviceRepository, appId: string, deviceId: string): Promise<DeviceRow | undefined> {
    if (typeof deviceId !== 'string') return undefined;
    const lower = deviceId.toLowerCase();
    const device = lower === deviceId ? undefined : await devices.find(appId, lower);
    return device && normalizeDeviceId(device.method, deviceId) === device.deviceId ? device : undefined;
  }

  /** Revokes every device token of the app issued until now. */
  async revokeAllDevices(appId: string): Promise<{ appId: string; revokedBefore: string; attestationMode?: 'enforce'; monitorModeEnded?: true }> {
    const now = this.clock();
    let monitorEnded = false;
    await this.write(async (transaction) => {
      await this.requireApp(transaction, appId);
      await new AppRepository(transaction).update(appId, { devicesRevokedBefore: now + 1 }, now);
      monitorEnded = await this.endMonitorMode(transaction, await this.requireApp(transaction, appId));
    });
    this.options.onDeviceRevoked?.(appId, '*');
    return { appId, revokedBefore: iso(now + 1), ...(monitorEnded ? { attestationMode: 'enforce' as const, monitorModeEnded: true as const } : {}) };
  }

  async usage(appId: string, fromMs: number, toMs: number, limit = 1000) {
    await this.requireApp(this.database, appId);
    return new UsageRepository(this.database).listForApp(appId, fromMs, toMs, limit);
  }
}
