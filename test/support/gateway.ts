/**
 * Starts a real gateway in-process for a test: a fresh SQLite file in a temp directory, a random master key, a free
 * port, providers pointed at fake upstreams, and every log line captured for leak checks.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { startGateway, type GatewayOptions, type RunningGateway } from '../../core/server/gateway';
import { providerVariableStem } from '../../core/configuration/configuration';
import type { UsageEvent } from '../../core/storage/repositories';

export interface TestGatewayOptions extends Omit<GatewayOptions, 'env' | 'logDestination'> {
  /** Provider slug → base URL (usually a FakeUpstream's url). */
  readonly upstreams?: Readonly<Record<string, string>>;
  /** Extra TOLLGATE_* variables. */
  readonly env?: Readonly<Record<string, string>>;
}

export interface Provisioned {
  readonly appId: string;
  readonly appToken: string;
  readonly deviceId: string;
  readonly deviceToken: string;
  /** The two Tollgate headers a client sends. */
  readonly headers: Readonly<Record<string, string>>;
}

export class TestGateway {
  /** Every JSON log line the gateway wrote. */
  readonly logs: string[] = [];

  private constructor(
    readonly gateway: RunningGateway,
    readonly dataDirectory: string,
    logs: string[],
    /** The TOLLGATE_* settings it runs with (data directory, master key), for other processes sharing its database. */
    readonly env: Readonly<Record<string, string>>,
  ) {
    this.logs = logs;
  }

  static async start(options: TestGatewayOptions = {}): Promise<TestGateway> {
    const dataDirectory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-test-'));
    const logs: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(line);
        callback();
      },
    });
    const env: Record<string, string> = {
      TOLLGATE_PORT: '0',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_ENV: 'development',
      TOLLGATE_DATA_DIR: dataDirectory,
      TOLLGATE_MASTER_KEY: randomBytes(32).toString('base64'),
      TOLLGATE_LOG_LEVEL: 'debug',
      TOLLGATE_CHANGE_POLL_MS: '50',
      ...(options.env ?? {}),
    };
    for (const [slug, url] of Object.entries(options.upstreams ?? {})) env[`TOLLGATE_PROVIDER_${providerVariableStem(slug)}_BASE_URL`] = url;
    const gateway = await startGateway({ ...options, env, workingDirectory: dataDirectory, logDestination: destination as never });
    return new TestGateway(gateway, dataDirectory, logs, env);
  }

  get url(): string {
    return this.gateway.url;
  }

  /** Creates an app (development attestation allowed unless overridden) and returns its id and token. */
  async createApp(settings: Record<string, unknown> = {}): Promise<{ appId: string; appToken: string }> {
    const app = await this.gateway.management.createApp({ name: 'Test app', allowDevelopmentAttestation: true, ...settings });
    return { appId: app.id, appToken: app.appToken };
  }

  async setSecret(appId: string, provider: string, value: string, baseUrl?: string): Promise<void> {
    await this.gateway.management.setSecret({ appId, provider, value, ...(baseUrl ? { baseUrl } : {}) });
  }

  /** Exchanges a development token for a device token over HTTP, as an SDK on a simulator would. */
  async deviceToken(appId: string, appToken: string, deviceId = `device-${randomBytes(4).toString('hex')}`): Promise<string> {
    const { developmentToken } = await this.gateway.management.createDevelopmentToken(appId);
    const response = await fetch(`${this.url}/v1/attest/development`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'tollgate-app-token': appToken },
      body: JSON.stringify({ developmentToken, deviceId }),
    });
    if (response.status !== 200) throw new Error(`development attestation failed: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { deviceToken: string }).deviceToken;
  }

  /** An app with a secret for each given provider and an attested device. */
  async provision(secrets: Readonly<Record<string, string>>, settings: Record<string, unknown> = {}): Promise<Provisioned> {
    const { appId, appToken } = await this.createApp(settings);
    for (const [provider, value] of Object.entries(secrets)) await this.setSecret(appId, provider, value);
    const deviceId = `device-${randomBytes(4).toString('hex')}`;
    const deviceToken = await this.deviceToken(appId, appToken, deviceId);
    return { appId, appToken, deviceId, deviceToken, headers: { 'Tollgate-App-Token': appToken, 'Tollgate-Device-Token': deviceToken } };
  }

  /**
   * The usage events of an app recorded since `fromMs`, once `done` holds for them. Usage is recorded when the gateway's
   * response closes, which can come after the client has read the last byte, then written in batches: this flushes and
   * reads again until `done` holds (`waitMs` at most, then it throws saying what was recorded).
   */
  async recordedUsage(appId: string, fromMs: number, done: (events: UsageEvent[]) => boolean, waitMs = 5_000): Promise<UsageEvent[]> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      await this.gateway.usage.flush();
      // Every event: a load test records more than the 1,000 a management read returns by default.
      const events = await this.gateway.management.usage(appId, fromMs, Date.now() + 1_000, Number.MAX_SAFE_INTEGER);
      if (done(events)) return events;
      if (Date.now() > deadline) {
        throw new Error(`the usage events expected were not recorded within ${waitMs} ms; ${events.length} recorded: ${JSON.stringify(events.slice(0, 5))}${events.length > 5 ? ' …' : ''}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The first usage event of an app since `fromMs` that matches, waiting for it as `recordedUsage` does. */
  async recordedEvent(appId: string, fromMs: number, match: (event: UsageEvent) => boolean): Promise<UsageEvent> {
    return (await this.recordedUsage(appId, fromMs, (events) => events.some(match))).find(match)!;
  }

  /** All captured log text, for leak checks. */
  logText(): string {
    return this.logs.join('\n');
  }

  async close(): Promise<void> {
    await this.gateway.close();
    rmSync(this.dataDirectory, { recursive: true, force: true });
  }
}
