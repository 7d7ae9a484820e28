/**
 * The external plugin contract: an npm package named in `TOLLGATE_PLUGINS` exports `tollgatePlugin`.
 *
 * @example
 * // index.js of package "tollgate-provider-acme"
 * exports.tollgatePlugin = {
 *   name: 'tollgate-provider-acme',
 *   contractVersion: 1,
 *   providers: [{ contractVersion: 1, slug: 'acme', name: 'Acme AI', baseUrl: 'https://api.acme.ai',
 *                 versions: { v1: '/v1' }, auth: { kind: 'header', header: 'Authorization', scheme: 'Bearer' },
 *                 capabilities: ['chat'], streaming: ['sse'] }],
 * };
 */
import type { AttestationVerifier } from './attestation';
import type { ProviderManifest } from './manifest';
import type { PipelineObserver, PipelineStage, StageName } from './pipeline';
import type { ChallengeStore, RateLimitStore } from './stores';

/** What a plugin may register. The server checks every registration at boot. */
export interface PluginHost {
  /** The server's `TOLLGATE_*` settings as configured (read-only), e.g. `TOLLGATE_REDIS_URL`. */
  readonly settings: Readonly<Record<string, string | undefined>>;
  /** True with `TOLLGATE_ENV=production`. */
  readonly production: boolean;
  registerProvider(manifest: ProviderManifest): void;
  registerAttestationVerifier(verifier: AttestationVerifier): void;
  registerObserver(observer: PipelineObserver): void;
  /** Replaces one pipeline stage. The stage's `name` must equal `stage`. */
  replaceStage(stage: StageName, implementation: PipelineStage): void;
  replaceRateLimitStore(store: RateLimitStore): void;
  replaceChallengeStore(store: ChallengeStore): void;
  /** Adds a check to `GET /readyz`: resolves when the dependency is reachable, rejects otherwise. */
  registerReadinessCheck(name: string, check: () => Promise<void>): void;
  /**
   * Reports that a shared dependency (e.g. `redis`) went up or down: call it on each change of state, not per command.
   * The host logs one line per change and exports `tollgate_dependency_up{dependency}`.
   */
  reportDependencyState?(name: string, up: boolean, detail?: string): void;
}

/** The export an external plugin package provides. */
export interface TollgatePlugin {
  /** Usually the npm package name. */
  readonly name: string;
  /** Must equal `PLUGIN_CONTRACT_VERSION`. */
  readonly contractVersion: number;
  /** Providers this plugin adds. */
  readonly providers?: readonly ProviderManifest[];
  /** Anything else to register. */
  register?(host: PluginHost): void | Promise<void>;
}
