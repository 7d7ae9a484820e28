#!/usr/bin/env node
/**
 * The `tollgate` command line (docs/reference/cli.md).
 * Every command that changes state prints one JSON object on stdout and exits 0; on error it prints a one-line message
 * on stderr and exits non-zero (1 for a refused operation, 2 for a usage error).
 */
import 'reflect-metadata';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import pino from 'pino';
import { TollgateError } from '../core/contract';
import { readFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { KeyAttestationError, verifyAndroidKeyAttestation } from '../plugins/attestation-android-key-attestation/verify';
import { AppAttestError, verifyAppAttestAssertion, verifyAppAttestAttestation } from '../plugins/attestation-apple-app-attest/verify';
import { authenticateAdminKey } from '../core/management/admin-auth';
import { ADMIN_SCOPES, type AdminGrant, type AdminScope } from '../core/management/admin-scopes';
import { createMcpServer } from '../core/mcp/server';
import { createGatewayCore, mcpDependencies, startGateway, TOLLGATE_VERSION, type GatewayCore, type RunningGateway } from '../core/server/gateway';
import { describeDatabase } from '../core/storage/database';
import { DashboardAuth } from '../core/admin/dashboard-auth';
import { SignInInput, validateInput } from '../core/management/inputs';
import { DEVICE_PLATFORMS, type DevicePlatform } from '../core/management/management-service';
import { DeviceTokenService } from '../core/attestation/device-tokens';
import { CREATING_COMMANDS, requireExistingDatabase } from './cli-database';
import { commandHelp } from './cli-help';
import { render, setOutputMode } from './cli-output';
import { backup, restore } from './cli-backup';
import { USERS_USAGE, usersCommand } from './commands/users';
import { WEBHOOKS_USAGE, webhooksCommand } from './commands/webhooks';
import type { CommandHelpers } from './commands/types';
import { REALTIME_OPTIONS, REALTIME_USAGE, realtimeSettings } from './commands/realtime';
import { ALERT_OPTIONS, ALERT_USAGE, alertSettings } from './commands/alerts';

class UsageError extends Error {}

const USAGE = `tollgate ${TOLLGATE_VERSION}: a gateway between mobile apps and AI providers

Usage:
  tollgate serve
  tollgate migrate
  tollgate apps create --name NAME [--apple-app-id TEAMID.BUNDLE] [--android-package PKG --android-cert-sha256 HEX] [--allow-development-attestation]
                       [--device-limit N] [--app-limit N] [--provider-limit SLUG=N …] [--device-daily-quota N] [--app-daily-quota N] [--max-streams N]
                       [--assertion-mode exchange|every-request] [the token budget options of apps update]
  tollgate apps update --app ID [--name NAME] [--device-limit N] [--app-limit N] [--allow-development-attestation true|false] [--device-token-ttl SECONDS] [--allowed-providers a,b] [--allowed-routes openai/chat/completions,…]
                        [--provider-limit SLUG=N …] [--device-daily-quota N] [--app-daily-quota N] [--max-streams N] [--assertion-mode exchange|every-request]
                        [--open-account-routes SLUG,…] [--close-account-routes SLUG,…] [--extra-route SLUG:METHOD[,METHOD…]:PATTERN …] [--no-extra-routes]
                        [--attestation-mode enforce|monitor] [--allow-monitor-in-production]      (an empty value, e.g. --device-daily-quota '', clears a setting)
                        [--device-daily-tokens N] [--app-daily-tokens N] [--provider-daily-tokens SLUG=N …] [--provider-device-daily-tokens SLUG=N …]
                        [--device-minute-tokens N] [--app-minute-tokens N] [--provider-minute-tokens SLUG=N …]   (token budgets per UTC day and minute; 0 or '' clears one)
${REALTIME_USAGE}
${ALERT_USAGE}
  tollgate usage --app ID [--since MINUTES] [--by device|provider|model]   (requests, errors, tokens and estimated spend; default the last 1440 minutes)
  tollgate prices list | defaults | set --provider SLUG --model MODEL --input-usd N --output-usd N | delete --provider SLUG --model MODEL
                                                                            (USD per million tokens; yours override the dated defaults)
  tollgate requests --app ID [--device ID] [--limit N]                      (the request log, newest first)
  tollgate apps list | get --app ID | rotate-token --app ID [--grace HOURS] | disable --app ID | enable --app ID | delete --app ID
  tollgate secrets set --app ID --provider SLUG [--base-url URL]     (the value is read from stdin, never from argv)
  tollgate secrets list --app ID | delete --app ID --provider SLUG   (list shows each key masked with its lastUsedAt)
  tollgate secrets test --app ID --provider SLUG                    (one harmless request with the stored key: ok, rejected, unexpected or unreachable)
  tollgate dev-tokens create --app ID [--label TEXT]
  tollgate devices list --app ID [--search ID_PREFIX] [--platform ios|android|development|other] [--limit N] [--offset N]   (with the total)
  tollgate devices get --app ID --device DEVICE_ID | revoke --app ID --device DEVICE_ID | revoke-all --app ID
  tollgate admin-keys create --name NAME [--scope read|apps|secrets|admin[,…]] [--expires-in 90d|12h|30m]   (default scope admin; shown once)
  tollgate admin-keys list | revoke --key ID
  tollgate providers list
  tollgate signing-keys rotate
  tollgate backup --out FILE [--with-history]   (apps, sealed secrets, devices, keys, users, settings, prices; usage history with --with-history)
  tollgate restore --in FILE [--replace]        (into a new database, with the source's master key; tokens and keys keep working)
  tollgate mcp                         (the assistant-facing server over stdio; TOLLGATE_ADMIN_KEY names the actor)
  tollgate dashboard-users create --username NAME          (password on stdin; adds a dashboard administrator)
  tollgate dashboard-users set-password --username NAME    (password on stdin; ends that user's sessions)
  tollgate attestation-secrets set --app ID --name play-integrity-decryption-key|play-integrity-verification-key|play-integrity-service-account   (value on stdin)
  tollgate attestation-secrets list --app ID
  tollgate attest verify --method apple-app-attest --app-id TEAMID.BUNDLE --key-id B64 --attestation FILE --client-data-hash HEX [--environment development|production] [--at ISO8601]
  tollgate attest verify-assertion --public-key PEM_FILE --app-id TEAMID.BUNDLE --assertion B64 --client-data-hash HEX --previous-counter N
  tollgate attest verify --method android-key-attestation --chain FILE --challenge HEX [--package PKG] [--at ISO8601]
${USERS_USAGE}
${WEBHOOKS_USAGE}

Every command takes --help (its own usage) and --output json|table (JSON by default; table for reading).
Commands other than serve, migrate and restore need an existing database: they refuse instead of creating one.
Configuration comes from TOLLGATE_* environment variables (see docs/reference/configuration.md).`;

const OPTIONS = {
  name: { type: 'string' },
  app: { type: 'string' },
  provider: { type: 'string' },
  'base-url': { type: 'string' },
  'apple-app-id': { type: 'string' },
  'android-package': { type: 'string' },
  'android-cert-sha256': { type: 'string' },
  'allow-development-attestation': { type: 'string' },
  'device-limit': { type: 'string' },
  'app-limit': { type: 'string' },
  'device-token-ttl': { type: 'string' },
  'allowed-providers': { type: 'string' },
  'allowed-routes': { type: 'string' },
  'provider-limit': { type: 'string', multiple: true },
  'device-daily-quota': { type: 'string' },
  'app-daily-quota': { type: 'string' },
  'max-streams': { type: 'string' },
  'device-daily-tokens': { type: 'string' },
  'app-daily-tokens': { type: 'string' },
  'provider-daily-tokens': { type: 'string', multiple: true },
  'provider-device-daily-tokens': { type: 'string', multiple: true },
  'device-minute-tokens': { type: 'string' },
  'app-minute-tokens': { type: 'string' },
  'provider-minute-tokens': { type: 'string', multiple: true },
  since: { type: 'string' },
  by: { type: 'string' },
  model: { type: 'string' },
  'input-usd': { type: 'string' },
  'output-usd': { type: 'string' },
  grace: { type: 'string' },
  'attestation-mode': { type: 'string' },
  'allow-monitor-in-production': { type: 'boolean' },
  limit: { type: 'string' },
  offset: { type: 'string' },
  search: { type: 'string' },
  platform: { type: 'string' },
  'assertion-mode': { type: 'string' },
  label: { type: 'string' },
  scope: { type: 'string' },
  'expires-in': { type: 'string' },
  key: { type: 'string' },
  device: { type: 'string' },
  method: { type: 'string' },
  chain: { type: 'string' },
  challenge: { type: 'string' },
  package: { type: 'string' },
  at: { type: 'string' },
  'app-id': { type: 'string' },
  'key-id': { type: 'string' },
  attestation: { type: 'string' },
  'client-data-hash': { type: 'string' },
  environment: { type: 'string' },
  'public-key': { type: 'string' },
  assertion: { type: 'string' },
  'previous-counter': { type: 'string' },
  username: { type: 'string' },
  'open-account-routes': { type: 'string' },
  'close-account-routes': { type: 'string' },
  'extra-route': { type: 'string', multiple: true },
  'no-extra-routes': { type: 'boolean' },
  output: { type: 'string' },
  out: { type: 'string' },
  in: { type: 'string' },
  'with-history': { type: 'boolean' },
  replace: { type: 'boolean' },
  ...REALTIME_OPTIONS,
  ...ALERT_OPTIONS,
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

type Values = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K] extends { multiple: true } ? string[] : (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

/** `--provider-limit openai=300 --provider-limit groq=60` → `{ openai: 300, groq: 60 }`. */
function providerLimits(values: Values): Record<string, number> | undefined {
  const entries = values['provider-limit'];
  if (!entries?.length) return undefined;
  return Object.fromEntries(
    entries.map((entry) => {
      const [slug, limit] = entry.split('=');
      if (!slug || !limit || !Number.isInteger(Number(limit))) throw new UsageError(`--provider-limit takes SLUG=N, got "${entry}"`);
      return [slug, Number(limit)];
    }),
  );
}

/** A comma-separated slug list option, or undefined when absent. */
function slugList(values: Values, name: 'open-account-routes' | 'close-account-routes'): string[] | undefined {
  const raw = values[name];
  return raw === undefined ? undefined : raw.split(',').map((slug) => slug.trim()).filter(Boolean);
}

/** The app's open account routes after `--open-account-routes` and `--close-account-routes` (null: none open). */
function accountRoutes(values: Values, current: readonly string[] | undefined): string[] | null | undefined {
  const opened = slugList(values, 'open-account-routes');
  const closed = slugList(values, 'close-account-routes');
  if (opened === undefined && closed === undefined) return undefined;
  const next = new Set([...(current ?? []), ...(opened ?? [])]);
  for (const slug of closed ?? []) next.delete(slug);
  return next.size ? [...next].sort() : null;
}

/**
 * `--extra-route SLUG:METHOD[,METHOD…]:PATTERN` (repeatable) → the app's extra routes, replacing the previous ones;
 * `--no-extra-routes` clears them. The pattern may contain `:` (`models/ft:*`): only the first two separate.
 */
function extraRoutes(values: Values): Array<{ provider: string; methods: string[]; path: string }> | null | undefined {
  if (values['no-extra-routes']) return null;
  const entries = values['extra-route'];
  if (!entries?.length) return undefined;
  return entries.map((entry) => {
    const first = entry.indexOf(':');
    const second = first < 0 ? -1 : entry.indexOf(':', first + 1);
    if (first <= 0 || second <= first + 1 || second === entry.length - 1) throw new UsageError(`--extra-route takes SLUG:METHOD[,METHOD…]:PATTERN, got "${entry}"`);
    return {
      provider: entry.slice(0, first),
      methods: entry.slice(first + 1, second).split(',').map((method) => method.trim().toUpperCase()).filter(Boolean),
      path: entry.slice(second + 1),
    };
  });
}

function required(values: Values, name: keyof Values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** `apps update`: an empty value (`--device-limit ''`) clears the setting (null), as a JSON null does in the API. */
/** A token budget: `0` or an empty value clears it (null), otherwise a whole number. */
function tokenBudget(values: Values, name: keyof Values): number | null | undefined {
  if (values[name] === '') return null;
  const value = integerOption(values, name);
  return value === 0 ? null : value;
}

type ProviderBudgetOption = 'provider-daily-tokens' | 'provider-device-daily-tokens' | 'provider-minute-tokens';

/**
 * `--provider-daily-tokens SLUG=N …` (and the other per-provider budgets) merged over the app's current budgets:
 * `SLUG=0` (or `SLUG=`) removes one, a lone empty value clears them all (null).
 */
function providerTokenBudgets(values: Values, current: Readonly<Record<string, number>> | undefined, name: ProviderBudgetOption = 'provider-daily-tokens'): Record<string, number> | null | undefined {
  const entries = values[name];
  if (!entries?.length) return undefined;
  if (entries.length === 1 && entries[0] === '') return null;
  const merged: Record<string, number> = { ...(current ?? {}) };
  for (const entry of entries) {
    const [slug, raw] = entry.split('=');
    const budget = raw === '' ? 0 : Number(raw);
    if (!slug || raw === undefined || !Number.isInteger(budget) || budget < 0) throw new UsageError(`--${name} takes SLUG=N, got "${entry}"`);
    if (budget === 0) delete merged[slug];
    else merged[slug] = budget;
  }
  return Object.keys(merged).length ? merged : null;
}

function clearable<T>(values: Values, name: keyof Values, read: (values: Values, name: keyof Values) => T | undefined): T | null | undefined {
  return values[name] === '' ? null : read(values, name);
}

const stringOption = (values: Values, name: keyof Values): string | undefined => values[name] as string | undefined;
const listOption = (values: Values, name: keyof Values): string[] | undefined => (values[name] as string | undefined)?.split(',').map((entry) => entry.trim()).filter(Boolean);

function integerOption(values: Values, name: keyof Values): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new UsageError(`--${name} must be an integer, got "${String(raw)}"`);
  return value;
}

function booleanOption(values: Values, name: keyof Values): boolean | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (raw === 'true' || raw === '') return true;
  if (raw === 'false') return false;
  throw new UsageError(`--${name} takes true or false, got "${String(raw)}"`);
}

/** Drops undefined fields so that validation sees only what was given. */
function defined(object: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

async function readSecretFromStdin(): Promise<string> {
  if (process.stdin.isTTY) {
    process.stderr.write('Secret value (input is not echoed to logs; press Enter when done): ');
    const lines = createInterface({ input: process.stdin, terminal: false });
    for await (const line of lines) {
      lines.close();
      return line.trim();
    }
    return '';
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

function print(object: unknown): void {
  process.stdout.write(render(object));
}

function banner(gateway: RunningGateway): string {
  const { configuration, masterKey, registry } = gateway;
  const cli = 'npx tollgate';
  const lines = [
    `Tollgate ${TOLLGATE_VERSION} (${configuration.environment}) listening on ${gateway.url}`,
    `  storage:    ${describeDatabase(configuration)}`,
    `  master key: ${masterKey.generated ? `generated at ${masterKey.origin} (development only)` : masterKey.origin}`,
    `  providers:  ${registry.list().length} (${registry.list().map((provider) => provider.manifest.slug).join(', ')})`,
    `  health:     ${gateway.url}/healthz`,
    ...(gateway.adminUrl ? [`  admin:      ${gateway.adminUrl} (dashboard, /v1/admin, /mcp, /metrics; the public port answers them 404)`] : []),
    `  dashboard:  ${gateway.adminUrl ?? gateway.url}/dashboard/`,
    ...(gateway.setupToken
      ? [
          '',
          'First run: create the dashboard administrator with this one-time link (valid 24 hours, works once):',
          `  ${gateway.adminUrl ?? gateway.url}/dashboard/setup#token=${gateway.setupToken}`,
        ]
      : configuration.production
        ? ['  sign in:    with a dashboard administrator; production prints no set-up link: the first is made on the host with', `              ${cli} dashboard-users create --username NAME   (password on stdin)`]
        : ['  sign in:    with your dashboard administrator name and password (the first was created from the set-up link)']),
    '',
    'Get started in the dashboard: create an app (its app token is shown once), add a provider key under Secrets,',
    'create a development token under Devices for simulators, then copy the code from Integrate.',
    'Or from the command line (in another terminal, from this directory):',
    `  1. Your first app (prints its app token):  ${cli} apps create --name "My App" --allow-development-attestation`,
    `  2. Its provider key, read from stdin:      ${cli} secrets set --app <app id> --provider openai < key.txt`,
    `  3. A token for simulators and emulators:   ${cli} dev-tokens create --app <app id>`,
    `  4. An admin key for the management API:    ${cli} admin-keys create --name admin`,
    '  Walkthrough: README.md, "Five minutes with curl".',
  ];
  if (configuration.production) lines.push('', 'Production mode: development attestation is refused for every app.');
  return `${lines.join('\n')}\n`;
}

async function serve(): Promise<void> {
  let gateway: RunningGateway;
  try {
    gateway = await startGateway();
  } catch (error) {
    // A port in use must not leave a half-started process behind (open database, timers): say so and exit.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      const port = process.env.TOLLGATE_PORT ?? '8080';
      process.stderr.write(
        code === 'EADDRINUSE'
          ? `tollgate: port ${port} is already in use (another Tollgate, or another server). Stop it, or pick another port: TOLLGATE_PORT=8081 npm start\n`
          : `tollgate: no permission to listen on port ${port}; pick a port above 1023: TOLLGATE_PORT=8080 npm start\n`,
      );
      process.exit(1);
    }
    throw error;
  }
  process.stderr.write(banner(gateway));
  // Request logs scroll the set-up link away: remind the terminal (never the log stream) until an administrator exists.
  if (gateway.setupToken && process.stderr.isTTY) {
    const reminder = setInterval(() => {
      void new DashboardAuth(gateway.database).countUsers().then((users) => {
        if (users > 0) clearInterval(reminder);
        else process.stderr.write(`\nTollgate: no dashboard administrator yet. Set-up link: ${gateway.adminUrl ?? gateway.url}/dashboard/setup#token=${gateway.setupToken}\n\n`);
      });
    }, 5 * 60_000);
    reminder.unref();
  }
  gateway.logger.info({ url: gateway.url, environment: gateway.configuration.environment, version: TOLLGATE_VERSION }, 'listening');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    gateway.logger.info({ signal, graceMs: gateway.configuration.shutdownGraceMs }, 'shutting down');
    gateway.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`shutdown failed: ${(error as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

function hexOption(options: Values, name: 'challenge' | 'client-data-hash'): Buffer {
  const value = required(options, name);
  if (!/^([0-9a-fA-F]{2})+$/.test(value)) throw new UsageError(`--${name} takes hex`);
  return Buffer.from(value, 'hex');
}

function atOption(options: Values): Date {
  const at = options.at ? new Date(options.at) : new Date();
  if (Number.isNaN(at.getTime())) throw new UsageError('--at takes an ISO 8601 instant');
  return at;
}

/** A file holding base64 text or raw bytes (CBOR, DER). */
function artifact(file: string): Buffer {
  const raw = readFileSync(file);
  const text = raw.toString('utf8').trim();
  return /^[A-Za-z0-9+/_=-]+$/.test(text) ? Buffer.from(text, 'base64') : raw;
}

/** `tollgate attest verify`: offline verification of an attestation artifact at a given instant (docs/reference/cli.md). */
async function attestVerify(options: Values): Promise<void> {
  const method = required(options, 'method');
  if (method === 'apple-app-attest') return appleAttestVerify(options);
  if (method !== 'android-key-attestation') throw new UsageError('--method takes apple-app-attest or android-key-attestation');
  const chain = readFileSync(required(options, 'chain'), 'utf8');
  try {
    const result = await verifyAndroidKeyAttestation({ chain, challenge: hexOption(options, 'challenge'), at: atOption(options), ...(options.package ? { packageName: options.package } : {}) });
    print(result);
  } catch (error) {
    if (error instanceof KeyAttestationError) throw new Error(`invalid (${error.reason}): ${error.message}`);
    throw error;
  }
}

/** `tollgate attest verify --method apple-app-attest`: against Apple's pinned root, at `--at`. */
async function appleAttestVerify(options: Values): Promise<void> {
  const environment = options.environment ?? 'production';
  if (environment !== 'production' && environment !== 'development') throw new UsageError('--environment takes development or production');
  try {
    const result = await verifyAppAttestAttestation({
      attestation: artifact(required(options, 'attestation')),
      clientDataHash: hexOption(options, 'client-data-hash'),
      keyId: required(options, 'key-id'),
      appId: required(options, 'app-id'),
      allowDevelopment: environment === 'development',
      allowProduction: environment === 'production',
      at: atOption(options),
    });
    print({ valid: true, publicKey: result.publicKeyPem, environment: result.environment, keyId: result.keyId });
  } catch (error) {
    if (error instanceof AppAttestError) throw new Error(`invalid (${error.reason}): ${error.message}`);
    throw error;
  }
}

/** `tollgate attest verify-assertion`: one App Attest assertion against a stored public key. */
function attestVerifyAssertion(options: Values): void {
  const previous = Number(required(options, 'previous-counter'));
  if (!Number.isInteger(previous) || previous < 0) throw new UsageError('--previous-counter takes a whole number');
  try {
    const result = verifyAppAttestAssertion({
      assertion: Buffer.from(required(options, 'assertion'), 'base64'),
      clientDataHash: hexOption(options, 'client-data-hash'),
      publicKeyPem: readFileSync(required(options, 'public-key'), 'utf8'),
      appId: required(options, 'app-id'),
      previousCounter: previous,
    });
    print({ valid: true, counter: result.counter });
  } catch (error) {
    if (error instanceof AppAttestError) throw new Error(`invalid (${error.reason}): ${error.message}`);
    throw error;
  }
}

/**
 * `tollgate mcp`: the assistant-facing server over stdio. stdout carries the protocol only; logs go to stderr. With
 * `TOLLGATE_ADMIN_KEY` the key must be valid and names the actor in the audit log; without it, whoever can read the local
 * database acts as "local".
 */
async function serveMcpOverStdio(): Promise<void> {
  const core = await createGatewayCore({ logDestination: pino.destination({ dest: 2, sync: true }), env: { TOLLGATE_LOG_LEVEL: 'warn', ...process.env } });
  let actor = 'local';
  let grant: AdminGrant | undefined;
  if (process.env.TOLLGATE_ADMIN_KEY) {
    let admin: Awaited<ReturnType<typeof authenticateAdminKey>>;
    try {
      admin = await authenticateAdminKey(core.database, process.env.TOLLGATE_ADMIN_KEY);
    } catch (error) {
      await core.close();
      throw new Error(`TOLLGATE_ADMIN_KEY is refused: ${(error as Error).message}`);
    }
    if (!admin) {
      await core.close();
      throw new Error('TOLLGATE_ADMIN_KEY is not a valid admin key');
    }
    actor = admin.name;
    // The key's own scopes and expiry bound what the assistant may do.
    grant = admin;
  }
  const configuration = core.configuration;
  const server = createMcpServer(mcpDependencies(core, actor, configuration.publicUrl ?? `http://${configuration.host}:${configuration.port}`, grant));
  const transport = new StdioServerTransport();
  transport.onclose = () => {
    void core.close();
  };
  await server.connect(transport);
}

/** `--scope read,apps`: one or more of read, apps, secrets, admin; absent: undefined (the default, admin). */
function scopeOption(value: string | undefined): AdminScope[] | undefined {
  if (value === undefined) return undefined;
  const scopes = value.split(',').map((scope) => scope.trim()).filter(Boolean);
  const unknown = scopes.filter((scope) => !(ADMIN_SCOPES as readonly string[]).includes(scope));
  if (scopes.length === 0 || unknown.length > 0) throw new UsageError(`--scope takes one or more of ${ADMIN_SCOPES.join(', ')} (comma-separated)`);
  return scopes as AdminScope[];
}

/** `--expires-in 90d` (days), `12h` (hours) or `30m` (minutes): the ISO date-time that far from now; absent: undefined. */
function expiresInOption(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d{1,6})([dhm])$/.exec(value.trim());
  if (!match || Number(match[1]) < 1) throw new UsageError('--expires-in takes a whole number with d (days), h (hours) or m (minutes), e.g. 90d');
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[match[2] as 'd' | 'h' | 'm'];
  return new Date(Date.now() + Number(match[1]) * unit).toISOString();
}

async function withCore(work: (core: GatewayCore) => Promise<unknown>): Promise<void> {
  // CLI logs go to stderr and only when something is wrong: stdout carries the one JSON answer.
  const core = await createGatewayCore({ logDestination: pino.destination({ dest: 2, sync: true }), env: { TOLLGATE_LOG_LEVEL: 'warn', ...process.env } });
  try {
    const result = await work(core);
    if (result !== undefined) print(result);
  } finally {
    await core.close();
  }
}

/** The audit-log actor of a CLI change: `cli:<operating-system user>`. */
function cliActor(): string {
  try {
    return `cli:${os.userInfo().username}`;
  } catch {
    return `cli:uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

/**
 * A changing command: the change and its audit entry (`cli.<action>`, actor `cli:<user>`) are one transaction, as for
 * the admin API (ManagementService.audited).
 */
function change<T>(action: string, target: (result: NoInfer<T>) => string | null, work: (core: GatewayCore) => Promise<T>, details?: (result: NoInfer<T>) => Record<string, unknown>): Promise<void> {
  return withCore((core) =>
    core.management.audited((result: T) => ({ actor: cliActor(), action: `cli.${action}`, target: target(result), details: details?.(result) ?? null }), () => work(core)),
  );
}

/** A missing --out/--in is a usage error (exit 2). */
async function backupOrUsage<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof RangeError) throw new UsageError(error.message);
    throw error;
  }
}

/** `--allow-development-attestation` is a flag on create and takes true|false on update: a bare flag means true. */
function normalizeFlags(argv: string[]): string[] {
  const out: string[] = [];
  argv.forEach((argument, index) => {
    out.push(argument);
    const next = argv[index + 1];
    if (argument === '--allow-development-attestation' && (next === undefined || next.startsWith('--'))) out.push('true');
  });
  return out;
}

/** What a command group in bin/commands/ needs from this file. */
const COMMAND_HELPERS: CommandHelpers = { withCore, change: (action, target, work) => change(action, target, work), usage: (message) => new UsageError(message) };

async function main(argv: string[]): Promise<void> {
  // Command groups with their own options live in their own files.
  if (argv[0] === 'users') return usersCommand(argv.slice(1), COMMAND_HELPERS);
  if (argv[0] === 'webhooks') return webhooksCommand(argv.slice(1), COMMAND_HELPERS);
  const { values, positionals } = parseArgs({ args: normalizeFlags(argv), options: OPTIONS, allowPositionals: true, strict: true });
  const options = values as Values;
  if (options.version) return void process.stdout.write(`${TOLLGATE_VERSION}\n`);
  const [command, subcommand] = positionals;
  try {
    setOutputMode(options.output);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (!command) {
    // `tollgate --help` asked for the usage; a bare `tollgate` is a usage error (stderr, exit 2).
    if (options.help) return void process.stdout.write(`${USAGE}\n`);
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  if (options.help) {
    const help = commandHelp(USAGE, command, subcommand);
    if (!help) throw new UsageError(`unknown command "${command}"; see tollgate --help`);
    return void process.stdout.write(`${help}\n`);
  }
  if (!CREATING_COMMANDS.has(command) && command !== 'attest') requireExistingDatabase();

  switch (`${command} ${subcommand ?? ''}`.trim()) {
    case 'serve':
      return serve();
    case 'migrate':
      return withCore(async (core) => ({ migrated: true, storage: describeDatabase(core.configuration) }));
    case 'apps create':
      return change('app.create', (app) => app.id, (core: GatewayCore) =>
        core.management.createApp(
          defined({
            name: required(options, 'name'),
            appleAppId: options['apple-app-id'],
            androidPackage: options['android-package'],
            androidCertSha256: options['android-cert-sha256'],
            allowDevelopmentAttestation: booleanOption(options, 'allow-development-attestation'),
            deviceLimitPerMinute: integerOption(options, 'device-limit'),
            appLimitPerMinute: integerOption(options, 'app-limit'),
            providerLimitsPerMinute: providerLimits(options),
            deviceDailyQuota: integerOption(options, 'device-daily-quota'),
            appDailyQuota: integerOption(options, 'app-daily-quota'),
            maxConcurrentStreamsPerDevice: integerOption(options, 'max-streams'),
            assertionMode: options['assertion-mode'],
            deviceDailyTokens: tokenBudget(options, 'device-daily-tokens') ?? undefined,
            appDailyTokens: tokenBudget(options, 'app-daily-tokens') ?? undefined,
            providerDailyTokens: providerTokenBudgets(options, undefined) ?? undefined,
            providerDeviceDailyTokens: providerTokenBudgets(options, undefined, 'provider-device-daily-tokens') ?? undefined,
            deviceMinuteTokens: tokenBudget(options, 'device-minute-tokens') ?? undefined,
            appMinuteTokens: tokenBudget(options, 'app-minute-tokens') ?? undefined,
            providerMinuteTokens: providerTokenBudgets(options, undefined, 'provider-minute-tokens') ?? undefined,
          }),
        ),
        (app) => ({ name: app.name }),
      );
    case 'apps update':
      return change('app.update', (app) => app.id, async (core: GatewayCore) =>
        core.management.updateApp(
          required(options, 'app'),
          defined({
            openAccountRoutes: options['open-account-routes'] !== undefined || options['close-account-routes'] !== undefined
              ? accountRoutes(options, (await core.management.getApp(required(options, 'app'))).settings.openAccountRoutes)
              : undefined,
            extraRoutes: extraRoutes(options),
            name: options.name,
            deviceLimitPerMinute: clearable(options, 'device-limit', integerOption),
            appLimitPerMinute: clearable(options, 'app-limit', integerOption),
            allowDevelopmentAttestation: booleanOption(options, 'allow-development-attestation'),
            deviceTokenTtlSeconds: clearable(options, 'device-token-ttl', integerOption),
            appleAppId: clearable(options, 'apple-app-id', stringOption),
            androidPackage: clearable(options, 'android-package', stringOption),
            androidCertSha256: clearable(options, 'android-cert-sha256', stringOption),
            allowedProviders: clearable(options, 'allowed-providers', listOption),
            allowedRoutes: clearable(options, 'allowed-routes', listOption),
            providerLimitsPerMinute: options['provider-limit']?.length === 1 && options['provider-limit'][0] === '' ? null : providerLimits(options),
            deviceDailyQuota: clearable(options, 'device-daily-quota', integerOption),
            appDailyQuota: clearable(options, 'app-daily-quota', integerOption),
            maxConcurrentStreamsPerDevice: clearable(options, 'max-streams', integerOption),
            deviceDailyTokens: tokenBudget(options, 'device-daily-tokens'),
            appDailyTokens: tokenBudget(options, 'app-daily-tokens'),
            providerDailyTokens: options['provider-daily-tokens'] !== undefined
              ? providerTokenBudgets(options, (await core.management.getApp(required(options, 'app'))).settings.providerDailyTokens)
              : undefined,
            providerDeviceDailyTokens: options['provider-device-daily-tokens'] !== undefined
              ? providerTokenBudgets(options, (await core.management.getApp(required(options, 'app'))).settings.providerDeviceDailyTokens, 'provider-device-daily-tokens')
              : undefined,
            deviceMinuteTokens: tokenBudget(options, 'device-minute-tokens'),
            appMinuteTokens: tokenBudget(options, 'app-minute-tokens'),
            providerMinuteTokens: options['provider-minute-tokens'] !== undefined
              ? providerTokenBudgets(options, (await core.management.getApp(required(options, 'app'))).settings.providerMinuteTokens, 'provider-minute-tokens')
              : undefined,
            attestationMode: options['attestation-mode'],
            allowMonitorInProduction: options['allow-monitor-in-production'] ? true : undefined,
            assertionMode: options['assertion-mode'],
            ...(await realtimeSettings(options, async () => (await core.management.getApp(required(options, 'app'))).settings.openCredentialRoutes, (message) => new UsageError(message), (line) => process.stderr.write(`${line}\n`))),
            ...alertSettings(options, (message) => new UsageError(message)),
          }),
        ),
      );
    case 'usage':
      return withCore(async (core) => {
        const appId = required(options, 'app');
        const minutes = integerOption(options, 'since') ?? 1440;
        if (minutes < 1) throw new UsageError('--since must be at least 1 minute');
        const by = options.by ?? 'device';
        if (!['device', 'provider', 'model'].includes(by)) throw new UsageError('--by takes device, provider or model');
        const now = Date.now();
        const summary = await core.management.usageSummary(appId, now - minutes * 60_000, now);
        const groups = { device: summary.tokens.byDevice, provider: summary.tokens.byProvider, model: summary.tokens.byModel }[by as 'device' | 'provider' | 'model'];
        return {
          app: appId,
          sinceMinutes: minutes,
          requests: summary.totalRequests,
          errors: summary.requestsPerMinute.reduce((sum, row) => sum + row.errors, 0),
          inputTokens: summary.tokens.inputTokens,
          outputTokens: summary.tokens.outputTokens,
          cachedTokens: summary.tokens.cachedTokens,
          reasoningTokens: summary.tokens.reasoningTokens,
          spend: summary.spend,
          by,
          groups,
        };
      });
    case 'prices list':
      return withCore(async (core) => ({ prices: await core.management.listPrices() }));
    case 'prices defaults':
      return withCore((core) => core.management.listDefaultPrices());
    case 'prices set': {
      const usd = (name: 'input-usd' | 'output-usd') => {
        const value = Number(required(options, name));
        if (!Number.isFinite(value)) throw new UsageError(`--${name} must be a number of US dollars per million tokens`);
        return value;
      };
      return change('price.set', (price) => `${price.provider}/${price.model}`, (core: GatewayCore) =>
        core.management.setPrice({ provider: required(options, 'provider'), model: required(options, 'model'), inputUsdPerMillion: usd('input-usd'), outputUsdPerMillion: usd('output-usd') }),
      );
    }
    case 'prices delete':
      return change('price.delete', (price) => `${price.provider}/${price.model}`, (core: GatewayCore) =>
        core.management.deletePrice({ provider: required(options, 'provider'), model: required(options, 'model') }),
      );
    case 'requests':
      return withCore(async (core) => core.management.requestLog({ appId: required(options, 'app'), deviceId: options.device, limit: integerOption(options, 'limit') ?? 50 }));
    case 'apps list':
      return withCore(async (core) => ({ apps: await core.management.listApps() }));
    case 'apps get':
      return withCore((core) => core.management.getApp(required(options, 'app')));
    case 'apps rotate-token':
      return change('app.rotate_token', (result) => result.id, (core: GatewayCore) => core.management.rotateAppToken(required(options, 'app'), integerOption(options, 'grace')));
    case 'apps disable':
      return change('app.disable', (app) => app.id, (core: GatewayCore) => core.management.setAppStatus(required(options, 'app'), 'disabled'));
    case 'apps enable':
      return change('app.enable', (app) => app.id, (core: GatewayCore) => core.management.setAppStatus(required(options, 'app'), 'active'));
    case 'apps delete':
      // Audit targets of deletions and revocations come from the inputs: the write returns nothing to build them from.
      return change('app.delete', () => required(options, 'app'), (core: GatewayCore) => core.management.deleteApp(required(options, 'app')));
    case 'secrets set': {
      const appId = required(options, 'app');
      const provider = required(options, 'provider');
      const value = await readSecretFromStdin();
      if (!value) throw new UsageError('no secret value on stdin (e.g. `tollgate secrets set --app ID --provider openai < key.txt`)');
      return change('secret.set', () => `${appId}/${provider}`, (core: GatewayCore) => core.management.setSecret(defined({ appId, provider, value, baseUrl: options['base-url'] })), (secret) => ({ masked: secret.masked }));
    }
    case 'secrets list':
      return withCore(async (core) => ({ secrets: await core.management.listSecrets(required(options, 'app')) }));
    case 'secrets test':
      return change('secret.test', (result) => `${result.appId}/${result.provider}`, (core: GatewayCore) => core.management.testSecret(required(options, 'app'), required(options, 'provider')), (result) => ({ outcome: result.outcome, status: result.status }));
    case 'secrets delete':
      return change('secret.delete', () => `${required(options, 'app')}/${required(options, 'provider')}`, (core: GatewayCore) => core.management.deleteSecret(required(options, 'app'), required(options, 'provider')));
    case 'attestation-secrets set': {
      const appId = required(options, 'app');
      const name = required(options, 'name');
      const value = await readSecretFromStdin();
      if (!value) throw new UsageError('no value on stdin (e.g. `tollgate attestation-secrets set --app ID --name play-integrity-service-account < key.json`)');
      return change('attestation_secret.set', () => `${appId}/${name}`, (core: GatewayCore) => core.management.setAttestationSecret(appId, name, { value }));
    }
    case 'attestation-secrets list':
      return withCore(async (core) => ({ attestationSecrets: await core.management.listAttestationSecrets(required(options, 'app')) }));
    case 'dev-tokens create':
      return change('development_token.create', (token) => `${token.appId}/${token.id}`, (core: GatewayCore) => core.management.createDevelopmentToken(required(options, 'app'), options.label));
    case 'devices list': {
      const platform = options.platform;
      if (platform !== undefined && !(DEVICE_PLATFORMS as readonly string[]).includes(platform)) throw new UsageError(`--platform must be one of ${DEVICE_PLATFORMS.join(', ')}`);
      const limit = integerOption(options, 'limit') ?? 50;
      const offset = integerOption(options, 'offset') ?? 0;
      if (limit < 1 || limit > 500) throw new UsageError('--limit must be from 1 to 500');
      if (offset < 0) throw new UsageError('--offset must be 0 or more');
      return withCore((core) => core.management.searchDevices(required(options, 'app'), { prefix: options.search || undefined, platform: platform as DevicePlatform | undefined, limit, offset }));
    }
    case 'devices get':
      return withCore((core) => core.management.getDevice(required(options, 'app'), required(options, 'device')));
    case 'devices revoke':
      return change('device.revoke', () => `${required(options, 'app')}/${required(options, 'device')}`, (core: GatewayCore) => core.management.revokeDevice(required(options, 'app'), required(options, 'device')));
    case 'devices revoke-all':
      return change('device.revoke_all', () => required(options, 'app'), (core: GatewayCore) => core.management.revokeAllDevices(required(options, 'app')));
    case 'dashboard-users create':
    case 'dashboard-users set-password': {
      const username = required(options, 'username');
      const input = validateInput(SignInInput, { username, password: await readSecretFromStdin() });
      if (input.password.length < 12) throw new UsageError('the password (on stdin) must be at least 12 characters');
      return change(`dashboard_user.${subcommand === 'create' ? 'create' : 'set_password'}`, () => input.username, async (core: GatewayCore) => {
        const auth = new DashboardAuth(core.database);
        const user = subcommand === 'create' ? await auth.createUser(input.username, input.password) : await auth.setPassword(input.username, input.password);
        return { ...user, ...(subcommand === 'set-password' ? { sessionsEnded: true } : {}) };
      });
    }
    case 'admin-keys create': {
      const scopes = scopeOption(options.scope);
      const expiresAt = expiresInOption(options['expires-in']);
      return change('admin_key.create', (key) => key.id, (core: GatewayCore) => core.management.createAdminKey(defined({ name: required(options, 'name'), scopes, expiresAt })), (key) => ({ name: key.name, scopes: key.scopes, expiresAt: key.expiresAt }));
    }
    case 'admin-keys list':
      return withCore(async (core) => ({ adminKeys: await core.management.listAdminKeys() }));
    case 'admin-keys revoke':
      return change('admin_key.revoke', () => required(options, 'key'), (core: GatewayCore) => core.management.revokeAdminKey(required(options, 'key')));
    case 'providers list':
      return withCore(async (core) => ({
        providers: core.registry.list().map(({ manifest, baseUrl }) => ({
          slug: manifest.slug,
          name: manifest.name,
          baseUrl,
          versions: Object.keys(manifest.versions),
          capabilities: manifest.capabilities,
          streaming: manifest.streaming,
        })),
      }));
    case 'mcp':
      return serveMcpOverStdio();
    case 'backup':
      if (!options.out) throw new UsageError('--out FILE is required (a new file: an existing one is never overwritten)');
      return withCore((core) => backupOrUsage(() => backup(core, options, TOLLGATE_VERSION)));
    case 'restore':
      if (!options.in) throw new UsageError('--in FILE is required');
      return change('restore', () => options.in ?? null, (core: GatewayCore) => backupOrUsage(() => restore(core, options)), (summary) => ({ tables: summary.tables }));
    case 'attest verify':
      return attestVerify(options);
    case 'attest verify-assertion':
      return attestVerifyAssertion(options);
    case 'signing-keys rotate':
      return change('signing_key.rotate', (result) => result.kid, async (core: GatewayCore) => {
        const service = new DeviceTokenService(core.database, core.cipher);
        await service.initialize();
        return { kid: await service.rotate() };
      });
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"; see tollgate --help`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof TollgateError ? `${error.code}: ` : '';
  process.stderr.write(`tollgate: ${code}${message.replace(/\s+/g, ' ')}\n`);
  process.exitCode = error instanceof UsageError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 2 : 1;
});
