/**
 * The in-memory read model behind the hot path (`GatewayDirectory`). Apps, secrets and revocations are loaded on first
 * use and kept until something changes. Writes in this process call `invalidate()`; writes by another process (the CLI,
 * another node) bump the change feed, which this class polls every `TOLLGATE_CHANGE_POLL_MS`.
 */
import type { Knex } from 'knex';
import { SecretValue, normalizeDeviceId, type AppEntry, type GatewayDirectory, type MaybePromise, type ResolvedSecret } from '../contract';
import { SecretCipher } from './encryption';
import { AppRepository, DeviceRepository, SecretRepository, readChangeSequence, type AppRow } from './repositories';

/** Above this many cached unknown tokens the negative cache is dropped (bounds memory under token-guessing floods). */
const NEGATIVE_CACHE_LIMIT = 10_000;

type Slot<T> = { value: T } | { pending: Promise<T> };

export interface CachedDirectoryOptions {
  readonly pollIntervalMs: number;
  readonly onError: (error: unknown) => void;
}

export function secretAssociatedData(appId: string, provider: string): string {
  return `secret\u0000${appId}\u0000${provider}`;
}

export class CachedDirectory implements GatewayDirectory {
  private generation = 0;
  private lastSequence = -1;
  private appsByTokenHash = new Map<string, Slot<AppEntry | null>>();
  private appsById = new Map<string, Slot<AppEntry | null>>();
  private secrets = new Map<string, Slot<ResolvedSecret | null>>();
  private secretProviders = new Map<string, Slot<readonly string[]>>();
  private revokedDevices = new Set<string>();
  private negativeEntries = 0;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    private readonly database: Knex,
    private readonly cipher: SecretCipher,
    private readonly options: CachedDirectoryOptions,
  ) {}

  /** Loads revocations and starts watching the change feed. */
  async start(): Promise<void> {
    this.lastSequence = await readChangeSequence(this.database);
    await this.loadRevocations();
    this.timer = setInterval(() => void this.poll(), this.options.pollIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Checks the change feed once; invalidates when another process changed something. */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const sequence = await readChangeSequence(this.database);
      if (sequence !== this.lastSequence) {
        this.lastSequence = sequence;
        this.invalidate();
      }
    } catch (error) {
      this.options.onError(error);
    } finally {
      this.polling = false;
    }
  }

  /**
   * Drops the caches. `sequence`: the change this process just committed (the management service's write); what loads
   * after this call reflects it and every change before it, so the change feed's next poll does not drop the caches a
   * second time for it.
   */
  invalidate(sequence?: number): void {
    if (sequence !== undefined && sequence > this.lastSequence) this.lastSequence = sequence;
    this.generation += 1;
    this.appsByTokenHash = new Map();
    this.appsById = new Map();
    this.secrets = new Map();
    this.secretProviders = new Map();
    this.negativeEntries = 0;
    void this.loadRevocations().catch(this.options.onError);
  }

  findAppByTokenHash(tokenHash: string): MaybePromise<AppEntry | null> {
    return this.cached(this.appsByTokenHash, tokenHash, async () => {
      const row = await new AppRepository(this.database).findByTokenHash(tokenHash);
      return row ? toEntry(row) : null;
    });
  }

  findAppById(appId: string): MaybePromise<AppEntry | null> {
    return this.cached(this.appsById, appId, async () => {
      const row = await new AppRepository(this.database).findById(appId);
      return row ? toEntry(row) : null;
    });
  }

  findSecret(appId: string, provider: string): MaybePromise<ResolvedSecret | null> {
    return this.cached(this.secrets, `${appId}\u0000${provider}`, async () => {
      const row = await new SecretRepository(this.database).find(appId, provider);
      if (!row) return null;
      const value = this.cipher.open(row.sealedValue, secretAssociatedData(appId, provider));
      return { provider, value: new SecretValue(value), baseUrl: row.baseUrl ?? undefined };
    });
  }

  providersWithSecrets(appId: string): MaybePromise<readonly string[]> {
    return this.cached(this.secretProviders, appId, async () =>
      (await new SecretRepository(this.database).listForApp(appId)).map((secret) => secret.provider),
    );
  }

  isDeviceRevoked(appId: string, deviceId: string): boolean {
    return this.revokedDevices.has(`${appId}\u0000${deviceId}`);
  }

  private async loadRevocations(): Promise<void> {
    const generation = this.generation;
    const revoked = await new DeviceRepository(this.database).listRevoked();
    if (generation !== this.generation) return;
    // In normal form (normalizeDeviceId), so that a device revoked under an id stored before ids were normalized is
    // still found by the normal form of that id.
    this.revokedDevices = new Set(revoked.map((device) => `${device.appId}\u0000${normalizeDeviceId(device.method, device.deviceId)}`));
  }

  /**
   * Returns a cached value synchronously, or loads it once (concurrent misses share one query). A load that started
   * before an invalidation is not stored.
   */
  private cached<T>(map: Map<string, Slot<T>>, key: string, load: () => Promise<T>): MaybePromise<T> {
    const slot = map.get(key);
    if (slot) return 'value' in slot ? slot.value : slot.pending;
    const generation = this.generation;
    const pending = load().then(
      (value) => {
        if (generation === this.generation) {
          if (value === null) {
            this.negativeEntries += 1;
            if (this.negativeEntries > NEGATIVE_CACHE_LIMIT) this.invalidate();
          }
          map.set(key, { value });
        }
        return value;
      },
      (error: unknown) => {
        if (generation === this.generation) map.delete(key);
        throw error;
      },
    );
    map.set(key, { pending });
    return pending;
  }
}

function toEntry(row: AppRow): AppEntry {
  return Object.freeze({
    id: row.id,
    name: row.name,
    settings: row.settings,
    devicesRevokedBefore: row.devicesRevokedBefore,
    tokenHash: row.tokenHash,
    previousTokenHash: row.previousTokenHash ?? null,
    previousTokenExpiresAt: row.previousTokenExpiresAt ?? null,
    status: row.status,
  });
}
