#!/usr/bin/env node
/**
 * The `tollgate` command line (../shared/design/operations.md, "Command line").
 * Every command that changes state prints one JSON object on stdout and exits 0; on error it prints a one-line message
 * on stderr and exits non-zero (1 for a refused operation, 2 for a usage error).
 */
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import pino from 'pino';
import { TollgateError } from '../core/contract';
import { readFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { KeyAttestationError, verifyAndroidKeyAttestation } from '../plugins/attestation-android-key-attestation/verify';
import { AppAttestError, verifyAppAttestAssertion, verifyAppAttestAttestation } from '../plugins/attestation-apple-app-attest/verify';
import { authenticateAdminKey } from '../core/management/admin-auth';
import { createMcpServer } from '../core/mcp/server';
import { createGatewayCore, mcpDependencies, startGateway, TOLLGATE_VERSION, type GatewayCore, type RunningGateway } from '../core/server/gateway';
import { describeDatabase } from '../core/storage/database';
import { DashboardAuth } from '../core/admin/dashboard-auth';
import { SignInInput, validateInput } from '../core/management/inputs';
import { DeviceTokenService } from '../core/attestation/device-tokens';

class UsageError extends Error {}

const USAGE = `tollgate ${TOLLGATE_VERSION}: a gateway between mobile apps and AI providers

Usage:
  tollgate serve
  tollgate migrate
  tollgate apps create --name NAME [--apple-app-id TEAMID.BUNDLE] [--android-package PKG --android-cert-sha256 HEX] [--allow-development-attestation]
                       [--device-limit N] [--app-limit N] [--provider-limit SLUG=N …] [--device-daily-quota N] [--app-daily-quota N] [--max-streams N]
                       [--assertion-mode exchange|every-request]
  tollgate apps update --app ID [--name NAME] [--device-limit N] [--app-limit N] [--allow-development-attestation true|false] [--device-token-ttl SECONDS] [--allowed-providers a,b] [--allowed-routes openai/chat/completions,…]
                        [--provider-limit SLUG=N …] [--device-daily-quota N] [--app-daily-quota N] [--max-streams N] [--assertion-mode exchange|every-request]
  tollgate apps list | get --app ID | rotate-token --app ID | disable --app ID | enable --app ID | delete --app ID
  tollgate secrets set --app ID --provider SLUG [--base-url URL]     (the value is read from stdin, never from argv)
  tollgate secrets list --app ID | delete --app ID --provider SLUG
  tollgate dev-tokens create --app ID [--label TEXT]
  tollgate devices list --app ID | revoke --app ID --device DEVICE_ID | revoke-all --app ID
  tollgate admin-keys create --name NAME
  tollgate providers list
  tollgate signing-keys rotate
  tollgate mcp                         (the assistant-facing server over stdio; TOLLGATE_ADMIN_KEY names the actor)
  tollgate dashboard-users create --username NAME          (password on stdin; adds a dashboard administrator)
  tollgate dashboard-users set-password --username NAME    (password on stdin; ends that user's sessions)
  tollgate attestation-secrets set --app ID --name play-integrity-decryption-key|play-integrity-verification-key|play-integrity-service-account   (value on stdin)
  tollgate attestation-secrets list --app ID
  tollgate attest verify --method apple-app-attest --app-id TEAMID.BUNDLE --key-id B64 --attestation FILE --client-data-hash HEX [--environment development|production] [--at ISO8601]
  tollgate attest verify-assertion --public-key PEM_FILE --app-id TEAMID.BUNDLE --assertion B64 --client-data-hash HEX --previous-counter N
  tollgate attest verify --method android-key-attestation --chain FILE --challenge HEX [--package PKG] [--at ISO8601]

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
  'assertion-mode': { type: 'string' },
  label: { type: 'string' },
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

function required(values: Values, name: keyof Values): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

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
  process.stdout.write(`${JSON.stringify(object)}\n`);
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
    `  dashboard:  ${gateway.url}/dashboard/`,
    ...(gateway.setupToken
      ? [
          '',
          'First run: create the dashboard administrator with this one-time link (valid 24 hours, works once):',
          `  ${gateway.url}/dashboard/setup#token=${gateway.setupToken}`,
        ]
      : ['  sign in:    with your dashboard administrator name and password (the first was created from the set-up link)']),
    '',
    'Get started (in another terminal, from this directory):',
    `  1. An admin key for the management API:   ${cli} admin-keys create --name admin`,
    `  2. Your first app (prints its app token):  ${cli} apps create --name "My App" --allow-development-attestation`,
    `  3. Its provider key, read from stdin:      ${cli} secrets set --app <app id> --provider openai < key.txt`,
    `  4. A token for simulators and emulators:   ${cli} dev-tokens create --app <app id>`,
    '  Walkthrough: README.md, "Five minutes with curl".',
  ];
  if (configuration.production) lines.push('', 'Production mode: development attestation is refused for every app.');
  return `${lines.join('\n')}\n`;
}

async function serve(): Promise<void> {
  const gateway = await startGateway();
  process.stderr.write(banner(gateway));
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

/** `tollgate attest verify`: offline verification of an attestation artifact at a given instant (operations.md). */
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
  if (process.env.TOLLGATE_ADMIN_KEY) {
    const admin = await authenticateAdminKey(core.database, process.env.TOLLGATE_ADMIN_KEY);
    if (!admin) {
      await core.close();
      throw new Error('TOLLGATE_ADMIN_KEY is not a valid admin key');
    }
    actor = admin.name;
  }
  const configuration = core.configuration;
  const server = createMcpServer(mcpDependencies(core, actor, configuration.publicUrl ?? `http://${configuration.host}:${configuration.port}`));
  const transport = new StdioServerTransport();
  transport.onclose = () => {
    void core.close();
  };
  await server.connect(transport);
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

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: normalizeFlags(argv), options: OPTIONS, allowPositionals: true, strict: true });
  const options = values as Values;
  if (options.version) return void process.stdout.write(`${TOLLGATE_VERSION}\n`);
  const [command, subcommand] = positionals;
  if (options.help || !command) return void process.stdout.write(`${USAGE}\n`);

  switch (`${command} ${subcommand ?? ''}`.trim()) {
    case 'serve':
      return serve();
    case 'migrate':
      return withCore(async (core) => ({ migrated: true, storage: describeDatabase(core.configuration) }));
    case 'apps create':
      return withCore((core) =>
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
          }),
        ),
      );
    case 'apps update':
      return withCore((core) =>
        core.management.updateApp(
          required(options, 'app'),
          defined({
            name: options.name,
            deviceLimitPerMinute: integerOption(options, 'device-limit'),
            appLimitPerMinute: integerOption(options, 'app-limit'),
            allowDevelopmentAttestation: booleanOption(options, 'allow-development-attestation'),
            deviceTokenTtlSeconds: integerOption(options, 'device-token-ttl'),
            appleAppId: options['apple-app-id'],
            androidPackage: options['android-package'],
            androidCertSha256: options['android-cert-sha256'],
            allowedProviders: options['allowed-providers']?.split(',').map((slug) => slug.trim()).filter(Boolean),
            allowedRoutes: options['allowed-routes']?.split(',').map((route) => route.trim()).filter(Boolean),
            providerLimitsPerMinute: providerLimits(options),
            deviceDailyQuota: integerOption(options, 'device-daily-quota'),
            appDailyQuota: integerOption(options, 'app-daily-quota'),
            maxConcurrentStreamsPerDevice: integerOption(options, 'max-streams'),
            assertionMode: options['assertion-mode'],
          }),
        ),
      );
    case 'apps list':
      return withCore(async (core) => ({ apps: await core.management.listApps() }));
    case 'apps get':
      return withCore((core) => core.management.getApp(required(options, 'app')));
    case 'apps rotate-token':
      return withCore((core) => core.management.rotateAppToken(required(options, 'app')));
    case 'apps disable':
      return withCore((core) => core.management.setAppStatus(required(options, 'app'), 'disabled'));
    case 'apps enable':
      return withCore((core) => core.management.setAppStatus(required(options, 'app'), 'active'));
    case 'apps delete':
      return withCore((core) => core.management.deleteApp(required(options, 'app')));
    case 'secrets set': {
      const appId = required(options, 'app');
      const provider = required(options, 'provider');
      const value = await readSecretFromStdin();
      if (!value) throw new UsageError('no secret value on stdin (e.g. `tollgate secrets set --app ID --provider openai < key.txt`)');
      return withCore((core) => core.management.setSecret(defined({ appId, provider, value, baseUrl: options['base-url'] })));
    }
    case 'secrets list':
      return withCore(async (core) => ({ secrets: await core.management.listSecrets(required(options, 'app')) }));
    case 'secrets delete':
      return withCore((core) => core.management.deleteSecret(required(options, 'app'), required(options, 'provider')));
    case 'attestation-secrets set': {
      const appId = required(options, 'app');
      const name = required(options, 'name');
      const value = await readSecretFromStdin();
      if (!value) throw new UsageError('no value on stdin (e.g. `tollgate attestation-secrets set --app ID --name play-integrity-service-account < key.json`)');
      return withCore((core) => core.management.setAttestationSecret(appId, name, { value }));
    }
    case 'attestation-secrets list':
      return withCore(async (core) => ({ attestationSecrets: await core.management.listAttestationSecrets(required(options, 'app')) }));
    case 'dev-tokens create':
      return withCore((core) => core.management.createDevelopmentToken(required(options, 'app'), options.label));
    case 'devices list':
      return withCore(async (core) => ({ devices: await core.management.listDevices(required(options, 'app')) }));
    case 'devices revoke':
      return withCore((core) => core.management.revokeDevice(required(options, 'app'), required(options, 'device')));
    case 'devices revoke-all':
      return withCore((core) => core.management.revokeAllDevices(required(options, 'app')));
    case 'dashboard-users create':
    case 'dashboard-users set-password': {
      const username = required(options, 'username');
      const input = validateInput(SignInInput, { username, password: await readSecretFromStdin() });
      if (input.password.length < 12) throw new UsageError('the password (on stdin) must be at least 12 characters');
      return withCore(async (core) => {
        const auth = new DashboardAuth(core.database);
        const user = subcommand === 'create' ? await auth.createUser(input.username, input.password) : await auth.setPassword(input.username, input.password);
        return { ...user, ...(subcommand === 'set-password' ? { sessionsEnded: true } : {}) };
      });
    }
    case 'admin-keys create':
      return withCore((core) => core.management.createAdminKey({ name: required(options, 'name') }));
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
    case 'attest verify':
      return attestVerify(options);
    case 'attest verify-assertion':
      return attestVerifyAssertion(options);
    case 'signing-keys rotate':
      return withCore(async (core) => {
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
