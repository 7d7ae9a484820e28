/**
 * `/v1/proxy/{slug}/{version}/{provider_path}`: parses the route, picks the provider from the registry, and runs the
 * pipeline. Observers (usage, access log) hear about every outcome once.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError, ProxyContext, type PipelineObserver } from '../contract';
import { setGatewayHeaders, type Pipeline } from '../pipeline/pipeline';
import { parseProxyRoute } from '../pipeline/proxy-path';
import { bufferUnderBudget, type SignedBodyBudget } from '../pipeline/request-body';
import type { ProviderRegistry } from '../registry/provider-registry';
import { sendGatewayError, toGatewayError } from './errors';
import type { WatchedBody } from './request-guards';

export const PROXY_PREFIX = '/v1/proxy';

export interface ProxyRouteDependencies {
  readonly registry: ProviderRegistry;
  readonly pipeline: Pipeline;
  readonly observers: readonly PipelineObserver[];
  readonly clock: () => number;
  /**
   * Called once per proxied request, after its response closed and every observer heard the outcome (the access line;
   * `context` is absent when the route itself was refused).
   */
  readonly onClosed?: (exchange: ProxyExchange) => void;
  /**
   * An observer (a plugin's, or one of the gateway's own) or `onClosed` threw. It is skipped for that request only: the
   * request, the other observers, the access line and the other requests reported with it are not affected, and nothing
   * is thrown out of the report (which would stop the process). Must not throw itself.
   */
  readonly onObserverError: (error: unknown, hook: ObserverHook) => void;
  /** The process-wide budget of request bodies held whole to be signed (providers with `authorizeNeedsBody`). */
  readonly signedBodies?: SignedBodyBudget;
}

/** Where an observer failure happened. */
export type ObserverHook = 'onResponse' | 'onError' | 'onClosed';

/** What every exchange of one proxy route shares: who hears about it (the route's own), and how its report is scheduled. */
interface ExchangeReporting extends Pick<ProxyRouteDependencies, 'observers' | 'onClosed' | 'onObserverError'> {
  /** Takes the finished exchange and calls its {@link ProxyExchange.reportNow} at the end of this turn (createProxyHandler). */
  readonly schedule: (exchange: ProxyExchange) => void;
}

/**
 * Tells every observer of `hook` (`onError` with `error`), each on its own: one that throws is handed to
 * `onObserverError` and the next one still hears.
 */
function notifyObservers(reporting: ExchangeReporting, hook: 'onResponse' | 'onError', context: ProxyContext, error?: unknown): void {
  for (const observer of reporting.observers) {
    try {
      if (hook === 'onResponse') observer.onResponse?.(context);
      else observer.onError?.(context, error);
    } catch (failure) {
      reporting.onObserverError(failure, hook);
    }
  }
}

/** The request id of a response (set by the request-id middleware). */
export function requestIdOf(response: ServerResponse): string {
  return (response.getHeader('Tollgate-Request-Id') as string | undefined) ?? randomUUID();
}

/**
 * One proxied request from its arrival to its response's `close`, with the one `close` listener it needs. Observers and
 * the access line hear about it once, when the pipeline settled and the response is finished, cut or closed.
 */
export class ProxyExchange {
  context: ProxyContext | undefined;
  /** The body watch's entry for this request (gateway.ts), given back when it closes. */
  watchedBody: WatchedBody | undefined;
  private settled = false;
  private closed = false;
  private reported = false;

  constructor(
    readonly request: IncomingMessage,
    readonly response: ServerResponse,
    readonly requestId: string,
    /** `performance.now()` when the request arrived. */
    readonly started: number,
    private readonly reporting: ExchangeReporting,
  ) {
    response.on('close', this.onClose);
  }

  private readonly onClose = (): void => {
    this.closed = true;
    // A refused route has no pipeline to wait for; otherwise the pipeline reports when it settles.
    if (this.settled || this.context === undefined) this.report();
  };

  /** The pipeline settled (answered, or failed with `error`). */
  finish(error?: unknown): void {
    const context = this.context!;
    if (error !== undefined) {
      const gatewayError = toGatewayError(error);
      context.outcome.status = gatewayError.status;
      context.outcome.errorType = gatewayError.type;
      context.outcome.reason = gatewayError.reason;
      notifyObservers(this.reporting, 'onError', context, error);
      // Admitted by the rate limits, refused later (a token budget, the provider unreachable…): the limits still show.
      setGatewayHeaders(context);
      sendGatewayError(context.response, context.requestId, gatewayError, context.request);
    }
    this.settled = true;
    // A response already finished or cut is reported now, without waiting for its `close`.
    const response = this.response;
    if (this.closed || response.writableFinished || response.destroyed) this.report();
  }

  private report(): void {
    if (this.reported) return;
    this.reported = true;
    this.reporting.schedule(this);
  }

  /** Tells the observers, then `onClosed`; called once per exchange, by the report schedule. Never throws. */
  reportNow(): void {
    const context = this.context;
    if (context) {
      if (context.outcome.status === 0) context.outcome.status = context.response.statusCode;
      context.settleUsage();
      notifyObservers(this.reporting, 'onResponse', context);
    }
    try {
      this.reporting.onClosed?.(this);
    } catch (error) {
      this.reporting.onObserverError(error, 'onClosed');
    }
  }
}

/** The proxy route's handler, and what it still has to report (called once the server is closed, before the last usage flush). */
export interface ProxyHandler {
  (request: IncomingMessage, response: ServerResponse, requestId?: string, started?: number, watchedBody?: WatchedBody): void;
  reportFinished(): void;
}

export function createProxyHandler(dependencies: ProxyRouteDependencies): ProxyHandler {
  const { registry, pipeline, observers, clock, onClosed, onObserverError, signedBodies } = dependencies;

  // Finished exchanges are reported together once the current turn of the event loop has run (setImmediate): under
  // load several requests finish in each turn, and their observers (the usage event) and access lines cost less run
  // back to back than each in its own turn between two requests' network work (docs/benchmarks.md). The
  // turn ends before a client can read anything more, so a report comes as soon as it did. A report never throws
  // (observer failures go to onObserverError), so one exchange cannot keep the others of its batch unreported.
  let finished: ProxyExchange[] = [];
  const reportFinished = (): void => {
    const batch = finished;
    finished = [];
    for (const exchange of batch) exchange.reportNow();
  };
  const reporting: ExchangeReporting = {
    observers,
    onClosed,
    onObserverError,
    schedule: (exchange) => {
      finished.push(exchange);
      if (finished.length === 1) setImmediate(reportFinished);
    },
  };

  const handler = (request: IncomingMessage, response: ServerResponse, requestId: string = requestIdOf(response), started: number = performance.now(), watchedBody?: WatchedBody): void => {
    const exchange = new ProxyExchange(request, response, requestId, started, reporting);
    exchange.watchedBody = watchedBody;
    const rest = (request.url ?? '').slice(PROXY_PREFIX.length);
    let context: ProxyContext;
    try {
      const route = parseProxyRoute(rest);
      const provider = registry.find(route.slug);
      if (!provider) throw new GatewayError('providerNotFound', `No provider is registered as "${route.slug}".`, { reason: 'unknown_provider' });
      if (!Object.hasOwn(provider.manifest.versions, route.version)) {
        throw new GatewayError(
          'providerNotFound',
          `Provider "${route.slug}" has no version "${route.version}" (versions: ${Object.keys(provider.manifest.versions).join(', ')}).`,
          { reason: 'unknown_version' },
        );
      }
      context = new ProxyContext(requestId, request, response, route, provider.manifest, clock());
      if (provider.manifest.authorizeNeedsBody && signedBodies) bufferUnderBudget(context, signedBodies);
    } catch (error) {
      sendGatewayError(response, requestId, toGatewayError(error), request);
      return;
    }
    exchange.context = context;
    try {
      const pending = pipeline.run(context);
      if (pending) pending.then(() => exchange.finish(), (error: unknown) => exchange.finish(error));
      else exchange.finish();
    } catch (error) {
      exchange.finish(error);
    }
  };
  return Object.assign(handler, { reportFinished });
}
