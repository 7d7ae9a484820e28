/**
 * The pipeline contract: seven stages with fixed names, in one order (`verifyUser` added for end users,
 * docs/decisions/2026-11-28-verify-user-stage.md).
 *
 *   verifyToken → verifyDevice → verifyUser → limitRate → resolveSecret → injectKey → forward
 *
 * Each stage is a class registered under its DI token in {@link STAGE_TOKENS}; a plugin replaces a stage by registering
 * another class under the same token. A stage either adds its fact to the {@link ProxyContext} or throws a
 * `GatewayError`; `forward` ends the request.
 */
import type { ProxyContext } from './context';

/** Stage names, in execution order. */
export const STAGE_NAMES = ['verifyToken', 'verifyDevice', 'verifyUser', 'limitRate', 'resolveSecret', 'injectKey', 'forward'] as const;
export type StageName = (typeof STAGE_NAMES)[number];

/**
 * One stage. `run` may return a promise or, on its fast path, nothing (the pipeline awaits only a returned promise,
 * so a cache hit costs no microtask).
 */
export interface PipelineStage {
  readonly name: StageName;
  run(context: ProxyContext): void | Promise<void>;
  /**
   * `forward` only: true when the stage puts the gateway's own headers (`Tollgate-Request-Id`, `RateLimit`,
   * `RateLimit-Policy`) into the response head it writes, so the head goes out in one piece. Absent or false (a plugin's
   * forward stage): the pipeline sets them on the response before the stage runs.
   */
  readonly writesGatewayHeaders?: boolean;
}

/**
 * Hooks around the pipeline, for observers (usage, metrics, a plugin's exporter). They must not block (they run on the
 * request path's thread) and should not throw: one that does is skipped for that request only, logged (once, then at
 * most once a minute) and counted in `tollgate_observer_failures_total{hook}`; the request, the other observers and
 * the access line are not affected.
 */
export interface PipelineObserver {
  /**
   * The response finished or the client went away. Called once per request, at the end of the turn of the event loop
   * in which it finished, together with the other requests that finished in that turn (routes/proxy.ts); the usage the
   * tap read is on `context.outcome.usage` by then.
   */
  onResponse?(context: ProxyContext): void;
  /** A stage failed with an error the client was told about. */
  onError?(context: ProxyContext, error: unknown): void;
}
