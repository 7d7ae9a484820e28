/**
 * The composition root: builds the tsyringe container, loads providers and plugins, mounts the routes, and starts or
 * stops the HTTP server. The only place that names concrete stage and store classes.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Knex } from 'knex';
import type { DestinationStream, Logger } from 'pino';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import {
  ATTESTATION_VERIFIER,
  CHALLENGE_STORE,
  CLOCK,
  CONFIGURATION,
  DATABASE,
  DEVICE_KEYS,
  DEVICE_TOKENS,
  GATEWAY_DIRECTORY,
  GatewayError,
  LOGGER,
  PIPELINE_OBSERVER,
  PROVIDER_MANIFEST,
  RATE_LIMIT_STORE,
  SECRET_CIPHER,
  STAGE_NAMES,
  STAGE_TOKENS,
  TollgateError,
  USAGE_RECORDER,
  type AttestationVerifier,
  type ChallengeStore,
  type PipelineObserver,
  type PipelineStage,
  type PluginHost,
  type ProviderManifest,
  type ProxyContext,
  type RateLimitStore,
  type StageName,
} from '../contract';
import { loadConfiguration, type Configuration } from '../configuration/configuration';
import { DeviceTokenService } from '../attestation/device-tokens';
import { ManagementService } from '../management/management-service';
import { ForwardStage } from '../pipeline/forward';
import { InjectKeyStage } from '../pipeline/inject-key';
import { LimitRateStage } from '../pipeline/limit-rate';
import { Pipeline } from '../pipeline/pipeline';
import { ResolveSecretStage } from '../pipeline/resolve-secret';
import { VerifyDeviceStage, monitorModeEffective } from '../pipeline/verify-device';
import { VerifyTokenStage } from '../pipeline/verify-token';
import { VerifyUserStage } from '../pipeline/verify-user';
import { END_USER_DIRECTORY, EndUserDirectory } from '../users/end-user-store';
import { EndUserService } from '../users/end-user-service';
import { endUserRoutes } from '../admin/end-user-routes';
import { webhookRoutes } from '../admin/webhook-routes';
import { Webhooks } from '../webhooks/webhooks';
import { AttestationFailureAlerts, SpendAlerts } from '../webhooks/alerts';
import { checkCaller, describeLimits } from '../routes/me';
import { ProviderRegistry } from '../registry/provider-registry';
import { createAttestRouter } from '../routes/attest';
import { errorReasonOf, sendGatewayError, toGatewayError } from '../routes/errors';
import { createHealthRouter, withDeadline } from '../routes/health';
import { GatewayMetrics } from '../routes/metrics';
import { SignedBodyBudget } from '../pipeline/request-body';
import { PROXY_PREFIX, createProxyHandler, requestIdOf, type ObserverHook } from '../routes/proxy';
import { redactUrl } from '../security/redact';
import { CachedDirectory } from '../storage/cached-directory';
import { DatabaseDeviceKeys } from '../storage/device-keys';
import { SQLITE_FILE_NAME, checkDatabaseIntegrity, openDatabase, migrate } from '../storage/database';
import { DatabaseClock } from '../storage/database-clock';
import { lockDataDirectory, type DataDirectoryLock } from '../storage/data-lock';
import { SecretCipher } from '../storage/encryption';
import { resolveMasterKey, type MasterKey } from '../storage/master-key';
import { AppRepository, DeviceRepository, UsageRepository } from '../storage/repositories';
import { authenticateAdminKey } from '../management/admin-auth';
import { createMcpServer, type McpDependencies } from '../mcp/server';
import type { AdminGrant } from '../management/admin-scopes';
import { createAdminRouter } from '../admin/admin-routes';
import { DashboardAuth } from '../admin/dashboard-auth';
import { adminSecurityHeaders, createDashboardRouter } from '../admin/dashboard-assets';
import { setupKeyOf } from '../admin/shared-setup-token';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { UsageRecorder } from '../storage/usage-recorder';
import { chargeTokenBudgets, type Budget } from '../pipeline/token-budget';
import { reservationOf, settleTokenBudgets } from '../pipeline/token-reservation';
import { SessionRegistry } from '../realtime/session-registry';
import { UpgradeHandler } from '../realtime/upgrade-handler';
import { DevelopmentAttestationVerifier } from '../attestation/development-verifier';
import { MemoryChallengeStore } from '../stores/memory-challenge-store';
import { MemoryRateLimitStore } from '../stores/memory-rate-limit-store';
import { LocalFallbackRateLimitStore } from '../stores/local-fallback-store';
import { logMetricLines } from './log-writer';
import { BUILT_IN_PLUGINS_DIRECTORY, BUILT_IN_PROVIDERS_DIRECTORY, discoverPluginFolders, discoverProviderFolders, loadPluginPackage } from './plugin-loader';
import { createLogger, infoLineWriter } from './logger';
import { adminListenAddress, markSurface, servedOn, type Surface } from './admin-listener';
import { BodyWatch, MCP_MAX_BODY_BYTES, answerClientError, continueWhenRead, readJsonBody } from '../routes/request-guards';

export const TOLLGATE_VERSION: string = (require('../../../package.json') as { version: string }).version;

export interface GatewayOptions {
  /** Environment variables (default `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Working directory for `./data` and `tollgate.config.json` (default `process.cwd()`). */
  readonly workingDirectory?: string;
  /** Where JSON logs go (default stdout). */
  readonly logDestination?: DestinationStream;
  /** Provider folders to discover (default: the built-in `providers/`). */
  readonly providerDirectories?: readonly string[];
  /** Extra provider manifests (tests). */
  readonly extraProviders?: readonly ProviderManifest[];
  /** Allow private and loopback tenant base URLs (tests only). */
  readonly allowPrivateUpstreams?: boolean;
  readonly clock?: () => number;
}

/** Everything a process needs to manage state without serving HTTP (the CLI). */
export interface GatewayCore {
  readonly configuration: Configuration;
  readonly database: Knex;
  readonly masterKey: MasterKey;
  readonly cipher: SecretCipher;
  readonly registry: ProviderRegistry;
  readonly management: ManagementService;
  readonly logger: Logger;
  readonly container: DependencyContainer;
  /** Webhook endpoints, their delivery queue and the events sent to them. */
  readonly webhooks: Webhooks;
  close(): Promise<void>;
}

/** A running gateway. */
export interface RunningGateway extends GatewayCore {
  readonly server: Server;
  /** `http://host:port`. */
  readonly url: string;
  /** With `TOLLGATE_ADMIN_PORT`: the admin listener (dashboard, management API, MCP, metrics) and its URL; else null. */
  readonly adminServer: Server | null;
  readonly adminUrl: string | null;
  readonly directory: CachedDirectory;
  readonly deviceTokens: DeviceTokenService;
  readonly usage: UsageRecorder;
  readonly forward: ForwardStage;
  /**
   * The one-time set-up token (`su_…`) when no dashboard administrator exists yet: the banner prints
   * `{url}/dashboard/setup#token=…`. Null once an administrator exists.
   */
  readonly setupToken: string | null;
  /** Stops accepting connections, lets in-flight requests finish up to the grace period, flushes usage, closes. */
  close(): Promise<void>;
}

/** Collects what plugins register, checked before it goes into the container. */
class PluginRegistrations implements PluginHost {
  readonly providers: ProviderManifest[] = [];
  readonly verifiers: AttestationVerifier[] = [];
  readonly observers: PipelineObserver[] = [];
  readonly stages = new Map<StageName, PipelineStage>();
  rateLimitStore: RateLimitStore | undefined;
  challengeStore: ChallengeStore | undefined;

  /** Dependency → up, as last reported (`tollgate_dependency_up`). */
  readonly dependencyStates = new Map<string, boolean>();

  constructor(
    readonly settings: Readonly<Record<string, string | undefined>>,
    readonly production: boolean,
    private readonly logger?: Logger,
  ) {}

  /** Per dependency, the aspects reported down (e.g. the database's writes while its reads answer). */
  private readonly failingAspects = new Map<string, Set<string>>();

  /**
   * One log line per change of state: `warn` when it goes down (with the cause, no stack), `info` when it is back.
   * `aspect` keeps apart what may fail alone (the database's `read`s and `write`s): the dependency is up only when
   * every aspect reported is, so reads that answer while writes fail do not flap its state.
   */
  reportDependencyState(name: string, aspectUp: boolean, detail?: string, aspect = 'read'): void {
    let failing = this.failingAspects.get(name);
    if (!failing) this.failingAspects.set(name, (failing = new Set()));
    if (aspectUp) failing.delete(aspect);
    else failing.add(aspect);
    const up = failing.size === 0;
    if (this.dependencyStates.get(name) === up) return;
    const known = this.dependencyStates.has(name);
    this.dependencyStates.set(name, up);
    if (up) this.logger?.info({ dependency: name }, known ? `${name} is reachable again` : `${name} is reachable`);
    else this.logger?.warn({ dependency: name, cause: detail }, `${name} is unreachable`);
  }

  registerProvider(manifest: ProviderManifest): void {
    this.providers.push(manifest);
  }
  registerAttestationVerifier(verifier: AttestationVerifier): void {
    this.verifiers.push(verifier);
  }
  registerObserver(observer: PipelineObserver): void {
    this.observers.push(observer);
  }
  replaceStage(stage: StageName, implementation: PipelineStage): void {
    if (!STAGE_NAMES.includes(stage)) throw new TollgateError('TG_ERR_PLUGIN_INVALID', `unknown stage "${stage}"`);
    this.stages.set(stage, implementation);
  }
  replaceRateLimitStore(store: RateLimitStore): void {
    this.rateLimitStore = store;
  }
  replaceChallengeStore(store: ChallengeStore): void {
    this.challengeStore = store;
  }
  readonly readinessChecks: Record<string, () => Promise<void>> = {};
  registerReadinessCheck(name: string, check: () => Promise<void>): void {
    this.readinessChecks[name] = check;
  }
}

/**
 * Opens storage and builds the container: everything but the HTTP server. Used by `serve` and by CLI commands.
 */
export async function createGatewayCore(
  options: GatewayOptions & { readonly lockDataDirectory?: boolean } = {},
): Promise<GatewayCore & { plugins: PluginRegistrations; directory: CachedDirectory }> {
  const configuration = loadConfiguration(options.env ?? process.env, options.workingDirectory ?? process.cwd());
  const logger = createLogger(configuration.logLevel, options.logDestination);
  // The node's own clock; TOLLGATE_TEST_CLOCK_OFFSET_MS shifts it outside production, to test a skewed node.
  const testOffset = configuration.production ? 0 : Number(options.env?.TOLLGATE_TEST_CLOCK_OFFSET_MS ?? 0) || 0;
  const nodeClock = testOffset === 0 ? Date.now : () => Date.now() + testOffset;
  const masterKey = resolveMasterKey(configuration);
  const cipher = new SecretCipher(masterKey.key);
  // One server per SQLite directory (a second one would double every limit): `serve` takes the directory's lock.
  let lock: DataDirectoryLock | undefined;
  if (options.lockDataDirectory && !configuration.databaseUrl) {
    mkdirSync(configuration.dataDirectory, { recursive: true, mode: 0o700 });
    lock = lockDataDirectory(configuration.dataDirectory);
  }
  const database = openDatabase(configuration, { debug: (message) => logger.debug({ knex: String(message) }, 'database driver') });
  try {
    // A server checks the file before it serves from it; CLI commands (which run beside a server) do not.
    if (options.lockDataDirectory) await checkDatabaseIntegrity(database, path.join(configuration.dataDirectory, SQLITE_FILE_NAME));
    await migrate(database);
  } catch (error) {
    await database.destroy();
    lock?.release();
    throw error;
  }

  // On PostgreSQL (several nodes) time is the database's (../storage/database-clock.ts); a clock a caller passes (tests
  // that move time) is used as it is.
  let databaseClock: DatabaseClock | undefined;
  if (!options.clock && configuration.databaseUrl) {
    let warned = false;
    databaseClock = new DatabaseClock(database, nodeClock, (offset) => {
      if (Math.abs(offset) < 1000 || warned) return;
      warned = true;
      logger.warn({ offsetMs: offset }, "this node's clock differs from the database's by more than a second: the gateway uses the database's time, but keep every node's clock synchronised (NTP)");
    });
    await databaseClock.start();
  }
  const clock = options.clock ?? databaseClock?.now ?? nodeClock;
  const environment = options.env ?? process.env;
  const plugins = new PluginRegistrations(
    Object.freeze(Object.fromEntries(Object.entries(environment).filter(([name]) => name.startsWith('TOLLGATE_') && !name.startsWith('TOLLGATE_MASTER_KEY')))),
    configuration.production,
    logger,
  );
  const loadedPlugins = [
    ...discoverPluginFolders(BUILT_IN_PLUGINS_DIRECTORY),
    ...configuration.plugins.map((name) => loadPluginPackage(name, options.workingDirectory)),
  ];
  for (const plugin of loadedPlugins) {
    for (const manifest of plugin.providers ?? []) plugins.registerProvider(manifest);
    await plugin.register?.(plugins);
  }

  const container = rootContainer.createChildContainer();
  container.register(CONFIGURATION, { useValue: configuration });
  container.register(CLOCK, { useValue: clock });
  container.register(LOGGER, { useValue: logger });
  container.register(DATABASE, { useValue: database });
  container.register(SECRET_CIPHER, { useValue: cipher });
  const manifests = [
    ...(options.providerDirectories ?? [BUILT_IN_PROVIDERS_DIRECTORY]).flatMap(discoverProviderFolders),
    ...plugins.providers,
    ...(options.extraProviders ?? []),
  ];
  for (const manifest of manifests) container.register(PROVIDER_MANIFEST, { useValue: manifest });
  container.registerSingleton(ProviderRegistry);
  const registry = container.resolve(ProviderRegistry);

  const directory = new CachedDirectory(database, cipher, {
    pollIntervalMs: configuration.changePollMs,
    // One log line per change of the database's state, not one per failed poll.
    onError: (error) => plugins.reportDependencyState('database', false, causeOf(error)),
  });
  // Alerts (core/webhooks): queued in the database by any process, sent by a serving gateway's dispatcher.
  const webhooks = new Webhooks(database, cipher, {
    retryBaseMs: configuration.webhookRetryMs,
    pollIntervalMs: configuration.changePollMs,
    clock,
    onError: (error, what) => logger.warn({ cause: causeOf(error) }, what),
  });
  const management = new ManagementService(database, cipher, registry, {
    onChange: (sequence) => directory.invalidate(sequence),
    onDeviceRevoked: (appId, deviceId) => webhooks.emit(appId, 'device.revoked', { device: deviceId === '*' ? null : deviceId, allDevices: deviceId === '*' }),
    // Monitor mode and opened routes never change silently: every change of a security setting is a warn line with its
    // old and new value (the audit log has them too).
    onSecuritySettingsChange: (appId, changes) => {
      const mode = changes.attestationMode;
      const message =
        mode?.to === 'monitor'
          ? 'app switched to attestation monitor mode: requests without a valid device token are forwarded unverified'
          : mode?.from === 'monitor'
            ? 'app left attestation monitor mode: every request needs a valid device token again'
            : 'security settings of an app changed';
      logger.warn({ appId, changes, monitorModeOff: configuration.monitorMode === 'off' || undefined }, message);
    },
    allowPrivateUpstreams: options.allowPrivateUpstreams ?? false,
    production: configuration.production,
    defaultPrices: configuration.defaultPrices,
    clock,
  });
  return {
    configuration,
    database,
    masterKey,
    cipher,
    registry,
    management,
    logger,
    container,
    plugins,
    directory,
    webhooks,
    async close() {
      directory.stop();
      databaseClock?.stop();
      await webhooks.stop();
      // Stores a plugin opened (e.g. Redis connections) belong to this core: a CLI command must be able to exit.
      await plugins.rateLimitStore?.close?.();
      await plugins.challengeStore?.close?.();
      await database.destroy();
      lock?.release();
      logger.flush();
    },
  };
}

/** The one-line cause of a failure, for `warn` logs (no stack): the innermost message. */
export function causeOf(error: unknown): string {
  let current = error;
  for (let depth = 0; depth < 5 && current instanceof Error && current.cause !== undefined; depth += 1) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

/** What the MCP server needs, for the HTTP route and for `tollgate mcp` over stdio. */
export function mcpDependencies(core: GatewayCore, actor: string, gatewayUrl: string, grant?: AdminGrant, rateLimits?: RateLimitStore): McpDependencies {
  return {
    ...(grant ? { grant } : {}),
    ...(rateLimits ? { rateLimits } : {}),
    management: core.management,
    registry: core.registry,
    actor,
    gatewayUrl,
    version: TOLLGATE_VERSION,
    appTokenHash: async (appId) => (await new AppRepository(core.database).findById(appId))?.tokenHash ?? null,
    endUsers: new EndUserService(core.database, Date.now),
  };
}

/** The apps whose monitor mode is in effect on this gateway (their mode, TOLLGATE_MONITOR_MODE and the production opt-in). */
async function appsInMonitorMode(database: Knex, configuration: Configuration): Promise<Array<{ id: string; name: string; monitorProviders: readonly string[] | null }>> {
  return (await new AppRepository(database).list())
    .filter((app) => app.status === 'active' && app.settings.attestationMode === 'monitor' && monitorModeEffective(app.settings, configuration))
    .map((app) => ({ id: app.id, name: app.name, monitorProviders: app.settings.monitorProviders ?? null }));
}

/** Starts a gateway: storage, container, routes, HTTP server. */
export async function startGateway(options: GatewayOptions = {}): Promise<RunningGateway> {
  const core = await createGatewayCore({ ...options, lockDataDirectory: true });
  const { configuration, container, logger, database, cipher, plugins, directory, registry, management } = core;
  const clock = container.resolve<() => number>(CLOCK);

  await directory.start();
  container.register(GATEWAY_DIRECTORY, { useValue: directory });
  // Monitor mode is a rollout aid that forwards unattested requests: never on without a line in the log.
  for (const app of await appsInMonitorMode(database, configuration)) {
    logger.warn({ appId: app.id, app: app.name, monitorProviders: app.monitorProviders, production: configuration.production }, 'app in attestation monitor mode: requests without a valid device token are forwarded unverified');
  }
  if (configuration.monitorMode === 'off') logger.info('TOLLGATE_MONITOR_MODE=off: every app enforces attestation, whatever its attestationMode');
  // End users (core/users): the blocked set the verifyUser stage reads, and the management of users.
  const endUsers = new EndUserDirectory(database, { pollIntervalMs: configuration.changePollMs, clock, onError: (error) => logger.warn({ cause: causeOf(error) }, 'end users could not be read or written; retried') });
  await endUsers.start();
  container.register(END_USER_DIRECTORY, { useValue: endUsers });
  const endUserService = new EndUserService(database, clock, endUsers);
  const deviceTokens = new DeviceTokenService(database, cipher, clock);
  await deviceTokens.initialize();
  container.register(DEVICE_TOKENS, { useValue: deviceTokens });
  // TOLLGATE_SHARED_STORE_FAILURE=local: a shared store that cannot answer is replaced by in-process limits at this
  // node's share until it answers again (core/stores/local-fallback-store.ts).
  const fallback = plugins.rateLimitStore && configuration.sharedStoreFailure === 'local' ? new LocalFallbackRateLimitStore(plugins.rateLimitStore, logger, clock) : undefined;
  const rateLimits = fallback ?? plugins.rateLimitStore ?? new MemoryRateLimitStore();
  container.register(RATE_LIMIT_STORE, { useValue: rateLimits });
  const challenges = plugins.challengeStore ?? new MemoryChallengeStore();
  container.register(CHALLENGE_STORE, { useValue: challenges });
  plugins.reportDependencyState('database', true);
  // Alerts on a quantity (core/webhooks/alerts.ts): the day's estimated spend, judged as usage batches are written; the
  // share of refused attestations, counted in the rate-limit store by the attestation routes.
  const spendAlerts = new SpendAlerts({
    directory,
    webhooks: core.webhooks,
    spendOf: (appId, fromMs, toMs) => management.estimatedSpend(appId, fromMs, toMs),
    prices: () => management.priceLookup(),
    clock,
    onError: (error, what) => logger.warn({ cause: causeOf(error) }, what),
  });
  const attestationAlerts = new AttestationFailureAlerts({ store: rateLimits, webhooks: core.webhooks, clock, onError: (error, what) => logger.warn({ cause: causeOf(error) }, what) });
  const usage = new UsageRecorder(database, {
    // Written 100 ms after a batch's first event. Every 20 ms, SQLite wrote its pages once per 20-30 rows, almost one
    // pwrite per request; held much longer, events outlive young-generation collections at load (docs/benchmarks.md).
    // "Last used" on the keys is written at most once a second.
    flushIntervalMs: 100,
    batchSize: 500,
    maxBuffered: 50_000,
    // Failed batches stay buffered and are retried with back-off; this is told once per outage.
    onError: (error) => {
      logger.warn({ cause: causeOf(error), buffered: usage.buffered }, 'usage events could not be written; kept buffered and retried');
      plugins.reportDependencyState('database', false, causeOf(error), 'write');
    },
    onRecovered: () => plugins.reportDependencyState('database', true, undefined, 'write'),
    onWritten: (batch) => spendAlerts.written(batch),
    // Every loss is said when it happens, with its reason and count (the metric keeps the totals).
    onDropped: (reason, count) =>
      logger.error({ reason, lost: count, lostSinceStart: usage.droppedByReason[reason] }, reason === 'shutdown' ? 'usage events lost: still unwritten when the process stopped (the database did not accept them)' : 'usage events lost: the buffer is full (the database has not accepted writes for too long); the oldest were dropped'),
  });
  usage.start();
  container.register(USAGE_RECORDER, { useValue: usage });
  // Request-log retention (TOLLGATE_REQUEST_LOG_RETENTION_DAYS): hourly, off the request path; a failure is logged only.
  const pruneRequestLog = () =>
    void new UsageRepository(database)
      .prune(clock() - configuration.requestLogRetentionDays * 86_400_000)
      .catch((error: unknown) => logger.warn({ err: error }, 'request log retention: old rows could not be deleted'));
  const retention = setInterval(pruneRequestLog, 3_600_000);
  retention.unref();

  const defaultStages: Record<StageName, new (...args: never[]) => PipelineStage> = {
    verifyToken: VerifyTokenStage,
    verifyDevice: VerifyDeviceStage,
    verifyUser: VerifyUserStage,
    limitRate: LimitRateStage,
    resolveSecret: ResolveSecretStage,
    injectKey: InjectKeyStage,
    forward: ForwardStage,
  };
  for (const stage of STAGE_NAMES) {
    const replacement = plugins.stages.get(stage);
    if (replacement) container.register(STAGE_TOKENS[stage], { useValue: replacement });
    else container.registerSingleton(STAGE_TOKENS[stage], defaultStages[stage] as never);
  }
  const forward = container.resolve<PipelineStage>(STAGE_TOKENS.forward);

  const deviceKeys = new DatabaseDeviceKeys(database);
  container.register(DEVICE_KEYS, { useValue: deviceKeys });
  const verifiers: AttestationVerifier[] = [
    new DevelopmentAttestationVerifier((token) => management.findDevelopmentTokenOwner(token)),
    ...plugins.verifiers,
  ];
  for (const verifier of verifiers) container.register(ATTESTATION_VERIFIER, { useValue: verifier });
  // Resolved after the verifiers are registered: verifyDevice checks per-request assertions with them.
  const pipeline = container.resolve(Pipeline);

  const webhooks = core.webhooks;
  endUserService.onBlocked((appId, user) => webhooks.emit(appId, 'user.blocked', { user: user.id, issuer: user.issuer }));
  const keyRejectedAt = new Map<string, number>();
  const keyRejected = (appId: string, provider: string, status: number) => {
    const key = `${appId}\u0000${provider}`;
    const last = keyRejectedAt.get(key);
    if (last !== undefined && clock() - last < 600_000) return;
    if (keyRejectedAt.size > 10_000) keyRejectedAt.clear();
    keyRejectedAt.set(key, clock());
    webhooks.emit(appId, 'provider.key_rejected', { provider, status });
  };
  webhooks.start();
  const usageObserver: PipelineObserver = {
    onResponse(context) {
      const app = context.peek('app');
      if (!app) return;
      const device = context.peek('device');
      usage.record({
        appId: app.id,
        // An unverified (monitor-mode) request has no device: its per-address bucket is for the limits only.
        deviceId: device && device.verified !== false ? device.deviceId : null,
        verified: device ? device.verified !== false : null,
        provider: context.provider.slug,
        status: context.outcome.status,
        errorType: context.outcome.errorType ?? null,
        latencyMs: clock() - context.startedAt,
        bytesIn: context.outcome.bytesIn,
        bytesOut: context.outcome.bytesOut,
        truncated: context.outcome.truncated,
        createdAt: context.startedAt,
        method: context.request.method ?? null,
        route: `${context.route.version}/${context.route.providerPath}`,
        reason: context.outcome.reason ?? null,
        requestId: context.requestId,
        inputTokens: context.outcome.usage?.inputTokens ?? null,
        outputTokens: context.outcome.usage?.outputTokens ?? null,
        cachedTokens: context.outcome.usage?.cachedTokens ?? null,
        reasoningTokens: context.outcome.usage?.reasoningTokens ?? null,
        model: context.outcome.usage?.model ?? null,
        // The signed-in user, already verified on the context: written with the row, in its batch.
        userId: context.peek('user')?.subject ?? null,
      });
      // Token budgets: the reservation is settled to what the provider reported (token-reservation.ts); a request
      // admitted before any budget applied is charged after the fact. A failure is logged, never fails the request.
      // A provider refusing the operator's key: told to the app's webhooks (at most once per app and provider per 10 min).
      if ((context.outcome.status === 401 || context.outcome.status === 403) && context.outcome.errorType === undefined) keyRejected(app.id, context.provider.slug, context.outcome.status);
      const onThreshold = (budget: Budget, percent: 80 | 100, total: number) =>
        webhooks.emit(app.id, 'budget.threshold', { budget: budget.policy, limit: budget.limit, spent: total, percent, windowSeconds: budget.windowMs / 1000, provider: context.provider.slug, device: device?.deviceId ?? null, user: context.peek('user')?.subject ?? null });
      const charged = reservationOf(context)
        ? settleTokenBudgets(rateLimits, context, clock(), onThreshold)
        : context.outcome.usage
          ? chargeTokenBudgets(rateLimits, context, clock(), onThreshold)
          : undefined;
      if (charged) {
        charged.catch((error: unknown) => {
          logger.warn({ requestId: context.requestId, cause: causeOf(error) }, 'tokens could not be added to the token budgets');
        });
      }
    },
  };
  const metrics = new GatewayMetrics();
  // Request bodies held whole to be signed (AWS SigV4): capped each, and together per process (request-body.ts).
  const signedBodies = new SignedBodyBudget(configuration.signedBodyMaxBytes, configuration.signedBodyBudgetBytes);
  /** A request refused because a dependency could not answer: `warn` with the cause (no stack), counted by cause. */
  const refused = (error: GatewayError, requestId?: string) => {
    logger.warn({ requestId, reason: error.reason, cause: causeOf(error.cause ?? error) }, 'request refused: a dependency of the gateway cannot answer');
    metrics.countRefusal(error.reason);
    if (error.reason === 'database_unavailable') plugins.reportDependencyState('database', false, causeOf(error.cause ?? error));
  };
  const logObserver: PipelineObserver = {
    onError(context, error) {
      const gatewayError = toGatewayError(error);
      if (gatewayError.type === 'internalError') logger.error({ requestId: context.requestId, err: error }, 'proxy request failed');
      else if (gatewayError.type === 'serviceUnavailable') refused(gatewayError, context.requestId);
      // The access line's reason comes from sendGatewayError (errorReasonOf), as on every other route.
    },
  };
  const observers: PipelineObserver[] = [usageObserver, logObserver, metrics, ...plugins.observers];
  for (const observer of observers) container.register(PIPELINE_OBSERVER, { useValue: observer });

  // Realtime sessions: WebSocket upgrades on the proxy route run the pipeline's checking stages (core/realtime).
  const sessions = new SessionRegistry({ store: rateLimits, directory, clock, logger, record: (event) => usage.record(event), isUserBlocked: (appId, issuer, subject) => endUsers.isBlocked(appId, issuer, subject) });
  const upgrades = new UpgradeHandler({ registry, stages: pipeline.stages, observers, sessions, store: rateLimits, configuration, clock, logger });

  /** The listen URL, known once the server listens (generated code embeds it unless TOLLGATE_PUBLIC_URL is set). */
  let url = '';
  // With TOLLGATE_ADMIN_PORT, the operator surfaces answer only on the admin listener (core/server/admin-listener.ts).
  const adminAddress = adminListenAddress(configuration);
  const noRoute = (_request: IncomingMessage, response: ServerResponse) =>
    sendGatewayError(response, requestIdOf(response), new GatewayError('invalidRequest', 'No such route.', { status: 404, reason: 'no_route' }));
  const adminOnly = servedOn('admin', noRoute);
  const publicOnly = servedOn('public', noRoute);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  const readinessChecks: Record<string, () => Promise<void>> = {
    // A read of a real table (not `select 1`, which needs no table at all).
    database: async () => {
      await database('change_feed').select('sequence').limit(1);
    },
    // Degraded, not unready: app entries are being served from before a change because their reload is slow or fails.
    cache: async () => {
      if (directory.servingStale) throw new Error('app entries are served stale: the database answers slowly or not at all');
    },
    ...plugins.readinessChecks,
  };
  // The database's state is watched even when nothing polls /readyz, so that its changes are logged and exported.
  let probing = false;
  const databaseProbe = setInterval(() => {
    if (probing) return;
    probing = true;
    withDeadline(readinessChecks.database!, configuration.readinessTimeoutMs, 'database')
      .then(
        () => plugins.reportDependencyState('database', true),
        (error: unknown) => plugins.reportDependencyState('database', false, causeOf(error)),
      )
      .finally(() => (probing = false));
  }, 5000);
  databaseProbe.unref();
  app.use(
    createHealthRouter({
      registry,
      version: TOLLGATE_VERSION,
      readinessChecks,
      readinessTimeoutMs: configuration.readinessTimeoutMs,
      // With local fallback a node without its shared store still serves: the store's checks say degraded, not unready.
      degradedWhenFailing: new Set(['cache', ...(fallback ? Object.keys(plugins.readinessChecks) : [])]),
      onCheck: (name, ok, error) => {
        if (name === 'database') plugins.reportDependencyState('database', ok, ok ? undefined : causeOf(error));
      },
    }),
  );
  app.get('/metrics', adminOnly, (_request: Request, response: Response, next: NextFunction) => {
    // Read at scrape time (not on the proxy path); a database that cannot answer leaves the gauge out.
    void appsInMonitorMode(database, configuration)
      .catch(() => null)
      .then((monitored) => {
        response
          .status(200)
          .type('text/plain; version=0.0.4')
          .send(
            metrics.render({
              upstreamQueued: () => (forward as ForwardStage).queuedRequests?.() ?? 0,
              upstreamSockets: () => (forward as ForwardStage).openSockets?.() ?? 0,
              usageDropped: () => usage.droppedByReason,
              usageWritten: () => usage.written,
              usageBuffered: () => usage.buffered,
              more: () => [
                ...logMetricLines(),
                ...signedBodyMetricLines(signedBodies),
                ...(fallback?.metricLines() ?? []),
                ...(monitored === null
                  ? []
                  : [
                      '# HELP tollgate_apps_in_monitor_mode Apps whose attestation monitor mode is in effect: requests without a valid device token are forwarded unverified.',
                      '# TYPE tollgate_apps_in_monitor_mode gauge',
                      `tollgate_apps_in_monitor_mode ${monitored.length}`,
                    ]),
              ],
              dependencies: () => plugins.dependencyStates,
            }) + sessions.renderMetrics(),
          );
      })
      .catch(next);
  });
  // The assistant-facing server over streamable HTTP, stateless: one MCP server and transport per request. Admin key
  // only, checked before a byte of the body is read; the body is then capped at MCP_MAX_BODY_BYTES.
  app.all('/mcp', adminOnly, async (request: Request, response: Response, next: NextFunction) => {
    try {
      const admin = await authenticateAdminKey(database, request.headers.authorization, Date.now());
      if (!admin) {
        sendGatewayError(response, requestIdOf(response), new GatewayError('unauthorized', 'The MCP endpoint requires Authorization: Bearer ak_… (an admin key).', { reason: 'admin_key_invalid' }), request);
        return;
      }
      if (request.method !== 'POST') {
        response.setHeader('Allow', 'POST');
        sendGatewayError(response, requestIdOf(response), new GatewayError('invalidRequest', 'This MCP endpoint is stateless: use POST.', { status: 405, reason: 'mcp_method' }), request);
        return;
      }
      // Parsed whatever its Content-Type: the transport checks that itself, and must never read the body on its own.
      request.body = await readJsonBody(request, MCP_MAX_BODY_BYTES, { anyType: true });
      const mcp = createMcpServer(mcpDependencies(core, admin.name, configuration.publicUrl ?? url, admin, rateLimits));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      response.once('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(request, response, request.body);
    } catch (error) {
      next(error);
    }
  });
  /** A route's failure, answered with the protocol's error body; an internal error logged, a refusal counted. */
  const answerFailure = (error: unknown, request: IncomingMessage, response: ServerResponse) => {
    const gatewayError = toGatewayError(error);
    if (gatewayError.type === 'internalError') logger.error({ err: error }, 'request failed');
    else if (gatewayError.type === 'serviceUnavailable') refused(gatewayError, requestIdOf(response));
    sendGatewayError(response, requestIdOf(response), gatewayError, request);
  };
  // One set-up link for the whole fleet (derived from the shared master key), and none in production, where logs would
  // carry it: there `tollgate dashboard-users create` makes the first administrator.
  const dashboardAuth = new DashboardAuth(database, { clock, setupKey: setupKeyOf(core.masterKey.key) });
  const setupToken = configuration.production ? null : await dashboardAuth.issueSetupToken();
  app.use(
    '/v1/admin',
    adminOnly,
    adminSecurityHeaders(),
    createAdminRouter({
      database,
      management,
      registry,
      auth: dashboardAuth,
      rateLimits,
      production: configuration.production,
      version: TOLLGATE_VERSION,
      clock,
      gatewayUrl: () => configuration.publicUrl ?? url,
      // On its own listener the dashboard is reached at the admin address, not at the apps' public URL.
      publicUrl: adminAddress ? configuration.adminPublicUrl : configuration.publicUrl,
      trustProxy: configuration.trustProxy,
      onInternalError: (error) => logger.error({ err: error }, 'admin request failed'),
      onUnavailable: (error) => refused(error),
      extraRoutes: [...endUserRoutes(endUserService, { management, rateLimits }), ...webhookRoutes(webhooks)],
    }),
  );
  app.use('/dashboard', adminOnly, createDashboardRouter());
  // A person who opens the gateway's address in a browser wants the dashboard, not a JSON 404.
  app.get('/', adminOnly, (_request, response) => response.redirect(302, '/dashboard/'));
  app.use(
    '/v1/attest',
    publicOnly,
    createAttestRouter({
      onFailure: answerFailure,
      directory,
      verifiers,
      challenges,
      rateLimits,
      deviceTokens,
      production: configuration.production,
      trustProxy: configuration.trustProxy,
      clock,
      devices: deviceKeys,
      onExchange: (app, refused) => attestationAlerts.record(app, refused),
      recordDevice: async (input) => {
        const device = await new DeviceRepository(database).recordAttestation({ ...input, now: clock() });
        return { revoked: device.revokedAt !== null };
      },
    }),
  );
  // What the calling device and user may still spend (core/routes/me.ts): the checks of a proxied request, no charge.
  app.get('/v1/me', (request: Request, response: Response, next: NextFunction) => {
    checkCaller(pipeline.stages, request, response, requestIdOf(response), clock())
      .then((context) => describeLimits(context, rateLimits, clock()))
      .then((answer) => response.setHeader('Cache-Control', 'no-store').status(200).json(answer), next);
  });
  app.use((_request: Request, response: Response) => {
    sendGatewayError(response, requestIdOf(response), new GatewayError('invalidRequest', 'No such route.', { status: 404, reason: 'no_route' }));
  });
  app.use((error: unknown, request: Request, response: Response, _next: NextFunction) => answerFailure(error, request, response));

  const accessLine = infoLineWriter(logger, 'request');
  /**
   * One access line: the request's facts (`context`: those of a proxied request's pipeline); never a credential. Built
   * as JSON text, member by member (undefined ones left out); values the gateway did not produce itself are escaped.
   */
  const writeAccessLine = (requestId: string, requestUrl: string, started: number, request: IncomingMessage, response: ServerResponse, context?: ProxyContext) => {
    // The method needs no escaping: Node's parser accepts only its known method tokens (letters and '-').
    let members = `"requestId":"${requestId}","method":"${request.method ?? ''}","path":${JSON.stringify(redactUrl(requestUrl))},"status":${response.statusCode}`;
    const errorType = response.getHeader('Tollgate-Error');
    if (errorType !== undefined) members += `,"errorType":${JSON.stringify(String(errorType))}`;
    members += `,"ms":${Math.round((performance.now() - started) * 10) / 10}`;
    if (!response.writableFinished) members += ',"aborted":true';
    // A client that went away mid-body shows here as reason client_aborted, at info, without a stack.
    const reason = errorReasonOf(response);
    if (reason !== undefined) members += `,"reason":${JSON.stringify(reason)}`;
    if (context) {
      const app = context.peek('app');
      if (app) members += `,"app":${JSON.stringify(app.id)}`;
      const device = context.peek('device');
      if (device) members += `,"device":${JSON.stringify(device.deviceId)}`;
      const outcome = context.outcome;
      // A provider slug matches SLUG_PATTERN (lower-case letters, digits, '-'): nothing to escape.
      members += `,"provider":"${context.provider.slug}","bytesIn":${outcome.bytesIn},"bytesOut":${outcome.bytesOut}`;
      if (outcome.truncated) members += ',"truncated":true';
    }
    accessLine(members);
  };

  const bodies = new BodyWatch(Math.min(configuration.bodyIdleTimeoutMs, configuration.requestTimeoutMs));
  const bodyDeadlines = { totalMs: configuration.requestTimeoutMs, idleMs: configuration.bodyIdleTimeoutMs, answer: true };
  const proxyBodyDeadlines = { totalMs: 0, idleMs: configuration.bodyIdleTimeoutMs, answer: false };
  // A proxied request's close is heard once, by its exchange (routes/proxy.ts): after the observers, its access line.
  // A failing observer (a plugin's, or a bug in one of the gateway's own) is skipped for that request; the request, the
  // other observers and the access line go on, and so does the gateway. Logged with its stack the first time, then at
  // most one line a minute saying how many failed meanwhile; every failure counts in tollgate_observer_failures_total.
  let observerFailureLoggedAt = Number.NEGATIVE_INFINITY;
  let observerFailuresUnlogged = 0;
  const onObserverError = (error: unknown, hook: ObserverHook): void => {
    metrics.countObserverFailure(hook);
    const now = Date.now();
    if (now - observerFailureLoggedAt < 60_000) {
      observerFailuresUnlogged += 1;
      return;
    }
    logger.error({ err: error, hook, failuresSinceLastLine: observerFailuresUnlogged }, 'a pipeline observer failed; the request it observed was not affected');
    observerFailureLoggedAt = now;
    observerFailuresUnlogged = 0;
  };
  const proxyHandler = createProxyHandler({
    registry,
    pipeline,
    observers,
    clock,
    onObserverError,
    signedBodies,
    onClosed: (exchange) => {
      bodies.forget(exchange.watchedBody);
      if (logger.isLevelEnabled('info')) writeAccessLine(exchange.requestId, exchange.request.url ?? '', exchange.started, exchange.request, exchange.response, exchange.context);
    },
  });
  const proxyUrlPrefix = `${PROXY_PREFIX}/`;
  /**
   * Every request gets a `Tollgate-Request-Id` and one access-log line (URL redacted, no headers). Proxy routes go
   * straight to the pipeline: the hot path does not pass through Express's router (measured in docs/benchmarks.md);
   * everything else is an Express route.
   */
  const handleRequest = (request: IncomingMessage, response: ServerResponse, surface?: Surface) => {
    const requestId = randomUUID();
    const started = performance.now();
    // The admin listener has no proxy: there a proxy path falls through to Express's 404.
    if (request.url !== undefined && surface !== 'admin' && request.url.startsWith(proxyUrlPrefix)) {
      // Proxy bodies may be long uploads: only the idle deadline applies. The response gets its id with the rest of
      // its head (forward.ts, sendGatewayError): one write of the head.
      proxyHandler(request, response, requestId, started, bodies.watch(request, response, proxyBodyDeadlines));
      return;
    }
    response.setHeader('Tollgate-Request-Id', requestId);
    if (surface !== undefined) markSurface(request, surface);
    // Read now: Express rewrites request.url inside mounted routers.
    const requestUrl = request.url ?? '';
    // Every other route has a whole-request deadline.
    const watched = bodies.watch(request, response, bodyDeadlines);
    response.once('close', () => {
      bodies.forget(watched);
      if (!logger.isLevelEnabled('info')) return;
      // After the handlers that run on the same close (a body read cut short ends as client_aborted) had their turn.
      setImmediate(() => writeAccessLine(requestId, requestUrl, started, request, response));
    });
    app(request, response);
  };

  const serverOptions: http.ServerOptions = {
    // Slow-loris bound: the whole request head within TOLLGATE_HEADERS_TIMEOUT_MS. Heads over 32 KiB get 431.
    headersTimeout: configuration.headersTimeoutMs,
    // Node enforces headersTimeout only when it sweeps connections (default every 30 s).
    connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(configuration.headersTimeoutMs / 4))),
    // No server-wide whole-request timeout: proxy uploads may legitimately run long. the body watch gives every other
    // route TOLLGATE_REQUEST_TIMEOUT_MS and every route TOLLGATE_BODY_IDLE_TIMEOUT_MS instead.
    requestTimeout: 0,
    keepAliveTimeout: configuration.keepAliveTimeoutMs,
    maxHeaderSize: 32 * 1024,
  };
  const createServer = (surface: Surface | undefined): Server => {
    const handler = surface === undefined ? handleRequest : (request: IncomingMessage, response: ServerResponse) => handleRequest(request, response, surface);
    const created = http.createServer(serverOptions, handler);
    // Parser refusals get the protocol's error body; `100 Continue` waits until a route reads the body (after its checks).
    created.on('clientError', answerClientError);
    // WebSocket upgrades (realtime sessions) are proxy traffic: the public listener's, never the admin one's.
    if (surface !== 'admin') created.on('upgrade', upgrades.handle);
    created.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
      continueWhenRead(request, response);
      handler(request, response);
    });
    return created;
  };
  const listen = (target: Server, port: number, listenHost: string) =>
    new Promise<string>((resolve, reject) => {
      target.once('error', reject);
      target.listen(port, listenHost, () => {
        target.off('error', reject);
        const address = target.address() as AddressInfo;
        resolve(`http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`);
      });
    });
  const server = createServer(adminAddress ? 'public' : undefined);
  url = await listen(server, configuration.port, configuration.host);
  let adminServer: Server | null = null;
  let adminUrl: string | null = null;
  if (adminAddress) {
    adminServer = createServer('admin');
    try {
      adminUrl = await listen(adminServer, adminAddress.port, adminAddress.host);
    } catch (error) {
      server.close();
      throw error;
    }
  }

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      clearInterval(databaseProbe);
      // Realtime sessions run on for the grace period, then close with 4503 `draining`; no new upgrade is accepted.
      upgrades.stopAccepting();
      const drained = sessions.drain(configuration.shutdownGraceMs);
      let cut = false;
      await new Promise<void>((resolve) => {
        const deadline = setTimeout(() => {
          cut = true;
          server.closeAllConnections();
          resolve();
        }, configuration.shutdownGraceMs);
        deadline.unref();
        server.close(() => {
          clearTimeout(deadline);
          resolve();
        });
        server.closeIdleConnections();
        // The admin listener holds no streams worth waiting for: its connections end now.
        adminServer?.close();
        adminServer?.closeAllConnections();
      });
      await drained;
      // Streams cut at the deadline report (and record their usage event) on their sockets' 'close' events, which run
      // in a later turn of the event loop: let them run before the last usage flush.
      if (cut) await new Promise((resolve) => setTimeout(resolve, 100));
      // Exchanges that finished in the last turn are reported now, before the last usage flush.
      proxyHandler.reportFinished();
      metrics.stop();
      bodies.stop();
      clearInterval(retention);
      await usage.stop();
      await spendAlerts.settled();
      await attestationAlerts.settled();
      await endUsers.stop();
      (forward as ForwardStage).close?.();
      if (!plugins.rateLimitStore) await rateLimits.close?.();
      if (!plugins.challengeStore) await challenges.close?.();
      await core.close();
    })();
    return closing;
  };

  return { ...core, server, url, adminServer, adminUrl, directory, deviceTokens, usage, forward: forward as ForwardStage, setupToken, close };
}

/** The signed-body budget's gauge and refusals, for /metrics. */
function signedBodyMetricLines(budget: SignedBodyBudget): string[] {
  return [
    '# HELP tollgate_signed_body_buffered_bytes Request bytes held in memory to be signed over the whole body (AWS SigV4), out of TOLLGATE_SIGNED_BODY_BUDGET_BYTES.',
    '# TYPE tollgate_signed_body_buffered_bytes gauge',
    `tollgate_signed_body_buffered_bytes ${budget.used}`,
    '# HELP tollgate_signed_body_refusals_total Requests refused 503 signed_body_budget_exhausted (the budget of held signed bodies was spent).',
    '# TYPE tollgate_signed_body_refusals_total counter',
    `tollgate_signed_body_refusals_total ${budget.refused}`,
  ];
}
