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

/**
 * Stale-while-revalidate, bounded. After a change drops the caches, an entry that was cached before it is still served
 * when its reload has not answered within {@link STALE_AFTER_MS} or failed, for at most {@link STALE_MAX_MS} after the
 * change; the reload goes on and replaces it when it answers. Without this, one admin write while the `apps` table was
 * locked for 25 s (a migration) took proxying from ~1,000 req/s to 0-4 req/s on every node. The price: for up to
 * STALE_MAX_MS, and only while the database is slow or failing, a change (an app disabled, a token rotated without
 * grace, a secret replaced) may not be seen yet; device revocations are kept apart and never served stale-by-choice.
 */
const STALE_AFTER_MS = 250;
const STALE_MAX_MS = 30_000;

type Resolved<T> = { value: T };

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
  /** The maps the last change dropped, and when: served from while reloads are slow or failing (STALE_MAX_MS). */
  private stale: { readonly maps: ReadonlyMap<Map<string, unknown>, Map<string, unknown>>; readonly until: number } | undefined;
  /** Entries served stale since start (`/readyz` says `degraded` while it happens). */
  staleServed = 0;
  private staleServedAt = 0;

  /** True when a stale entry was served in the last few seconds: the database answers slowly or not at all. */
  get servingStale(): boolean {
    return Date.now() - this.staleServedAt < 5000;
  }

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
    const previous = [this.appsByTokenHash, this.appsById, this.secrets, this.secretProviders] as Array<Map<string, unknown>>;
    this.appsByTokenHash = new Map();
    this.appsById = new Map();
    this.secrets = new Map();
    this.secretProviders = new Map();
    const current = [this.appsByTokenHash, this.appsById, this.secrets, this.secretProviders] as Array<Map<string, unknown>>;
    // What was resolved before the change, by the new map that replaces it; entries still stale from an earlier change
    // are carried on, and the bound keeps counting from that first change.
    const maps = new Map<Map<string, unknown>, Map<string, unknown>>();
    previous.forEach((map, index) => {
      const resolved = new Map<string, unknown>();
      for (const [key, slot] of map) if ('value' in (slot as object)) resolved.set(key, slot);
      const carried = this.stale?.maps.get(map);
      if (carried && this.stale!.until > Date.now()) for (const [key, slot] of carried) if (!resolved.has(key)) resolved.set(key, slot);
      maps.set(current[index]!, resolved);
    });
    this.stale = { maps, until: (this.stale && this.stale.until > Date.now() ? this.stale.until : Date.now() + STALE_MAX_MS) };
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
    if (slot) return 'value' in slot ? slot.value : this.orStale(map, key, slot.pending);
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
    return this.orStale(map, key, pending);
  }

  /** `pending`, or the entry from before the last change when `pending` is slow or fails (see STALE_AFTER_MS). */
  private orStale<T>(map: Map<string, Slot<T>>, key: string, pending: Promise<T>): Promise<T> {
    const stale = this.stale && this.stale.until > Date.now() ? (this.stale.maps.get(map as Map<string, unknown>)?.get(key) as Resolved<T> | undefined) : undefined;
    if (!stale) return pending;
    // A reload that is slow or fails: the entry from before the change, within the bound (see STALE_AFTER_MS).
    return new Promise<T>((resolve) => {
      const serveStale = () => {
        this.staleServed += 1;
        this.staleServedAt = Date.now();
        resolve(stale.value);
      };
      const timer = setTimeout(serveStale, STALE_AFTER_MS);
      pending.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        () => {
          clearTimeout(timer);
          serveStale();
        },
      );
    });
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
