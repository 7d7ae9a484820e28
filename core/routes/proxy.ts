/**
 * `/v1/proxy/{slug}/{version}/{provider_path}`: parses the route, picks the provider from the registry, and runs the
 * pipeline. Observers (usage, access log) hear about every outcome once.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError, ProxyContext, type PipelineObserver } from '../contract';
import { setGatewayHeaders, type Pipeline } from '../pipeline/pipeline';
import { parseProxyRoute } from '../pipeline/proxy-path';
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
    private readonly observers: readonly PipelineObserver[],
    private readonly onClosed: ((exchange: ProxyExchange) => void) | undefined,
    /** Takes the finished exchange and calls its {@link reportNow} at the end of this turn (createProxyHandler). */
    private readonly scheduleReport: (exchange: ProxyExchange) => void,
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
      for (const observer of this.observers) observer.onError?.(context, error);
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
    this.scheduleReport(this);
  }

  /** Tells the observers, then `onClosed`; called once per exchange, by the report schedule. */
  reportNow(): void {
    const context = this.context;
    if (context) {
      if (context.outcome.status === 0) context.outcome.status = context.response.statusCode;
      context.settleUsage();
      for (const observer of this.observers) observer.onResponse?.(context);
    }
    this.onClosed?.(this);
  }
}

/** The proxy route's handler, and what it still has to report (called once the server is closed, before the last usage flush). */
export interface ProxyHandler {
  (request: IncomingMessage, response: ServerResponse, requestId?: string, started?: number, watchedBody?: WatchedBody): void;
  reportFinished(): void;
}

export function createProxyHandler(dependencies: ProxyRouteDependencies): ProxyHandler {
  const { registry, pipeline, observers, clock, onClosed } = dependencies;

  // Finished exchanges are reported together once the current turn of the event loop has run (setImmediate): under
  // load several requests finish in each turn, and their observers (the usage event) and access lines cost less run
  // back to back than each in its own turn between two requests' network work (docs/benchmarks.md, tenth session). The
  // turn ends before a client can read anything more, so a report comes as soon as it did.
  let finished: ProxyExchange[] = [];
  const reportFinished = (): void => {
    const batch = finished;
    finished = [];
    // One exchange's failing observer does not keep the others unreported; the first failure is then thrown, as it
    // was from the response's close event.
    let failure: { error: unknown } | undefined;
    for (const exchange of batch) {
      try {
        exchange.reportNow();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  };
  const scheduleReport = (exchange: ProxyExchange): void => {
    finished.push(exchange);
    if (finished.length === 1) setImmediate(reportFinished);
  };

  const handler = (request: IncomingMessage, response: ServerResponse, requestId: string = requestIdOf(response), started: number = performance.now(), watchedBody?: WatchedBody): void => {
    const exchange = new ProxyExchange(request, response, requestId, started, observers, onClosed, scheduleReport);
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
