/** `GET /healthz` (the process answers), `GET /readyz` (its dependencies answer) and `GET /v1/providers` (the catalog). */
import express, { type Router } from 'express';
import type { ProviderRegistry } from '../registry/provider-registry';

export interface HealthDependencies {
  readonly registry: ProviderRegistry;
  /** Each check resolves when its dependency is reachable, or rejects. */
  readonly readinessChecks: Readonly<Record<string, () => Promise<void>>>;
  readonly version: string;
  /** Each check that has not settled by then counts as failing, so `/readyz` answers within this bound. */
  readonly readinessTimeoutMs?: number;
  /**
   * Checks whose failure makes the node degraded, not unready: `/readyz` names them `degraded` and still answers 200
   * (the Redis check when `TOLLGATE_SHARED_STORE_FAILURE=local`, where the node keeps serving on its own).
   */
  readonly degradedWhenFailing?: ReadonlySet<string>;
  /** Told the outcome of every check (dependency state changes are logged from it). */
  readonly onCheck?: (name: string, ok: boolean, error?: unknown) => void;
}

/** Runs `check` with a deadline: a dependency that hangs (a frozen database) is failing, not waited for. */
export function withDeadline(check: () => Promise<void>, timeoutMs: number, name: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    check().then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

export function createHealthRouter(dependencies: HealthDependencies): Router {
  const router = express.Router();

  router.get('/healthz', (_request, response) => {
    response.status(200).json({ status: 'ok', version: dependencies.version });
  });

  router.get('/readyz', async (_request, response) => {
    const checks: Record<string, 'ok' | 'failing' | 'degraded'> = {};
    await Promise.all(
      Object.entries(dependencies.readinessChecks).map(async ([name, check]) => {
        try {
          await withDeadline(check, dependencies.readinessTimeoutMs ?? 2000, name);
          checks[name] = 'ok';
          dependencies.onCheck?.(name, true);
        } catch (error) {
          checks[name] = dependencies.degradedWhenFailing?.has(name) ? 'degraded' : 'failing';
          dependencies.onCheck?.(name, false, error);
        }
      }),
    );
    const ready = Object.values(checks).every((state) => state !== 'failing');
    const degraded = Object.values(checks).some((state) => state === 'degraded');
    response.status(ready ? 200 : 503).json({ status: ready ? (degraded ? 'degraded' : 'ready') : 'not ready', checks });
  });

  // The public catalog: what an SDK needs to call and parse a provider. Never a secret, never a base URL override.
  const catalog = dependencies.registry.list().map(({ manifest }) => ({
    slug: manifest.slug,
    name: manifest.name,
    versions: Object.keys(manifest.versions),
    capabilities: manifest.capabilities,
    streaming: manifest.streaming,
    methods: manifest.routes?.methods ?? ['GET', 'POST'],
    perTenantHost: Boolean(manifest.tenant),
    ...(manifest.notes ? { notes: manifest.notes } : {}),
  }));
  const catalogBody = JSON.stringify({ providers: catalog });
  router.get('/v1/providers', (_request, response) => {
    response.status(200).type('application/json').send(catalogBody);
  });

  return router;
}
