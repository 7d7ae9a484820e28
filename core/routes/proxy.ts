/**
 * `/v1/proxy/{slug}/{version}/{provider_path}`: parses the route, picks the provider from the registry, and runs the
 * pipeline. Observers (usage, access log) hear about every outcome once.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError, ProxyContext, type PipelineObserver } from '../contract';
import type { Pipeline } from '../pipeline/pipeline';
import { writeRateLimitHeaders } from '../pipeline/limit-rate';
import { parseProxyRoute } from '../pipeline/proxy-path';
import type { ProviderRegistry } from '../registry/provider-registry';
import { sendGatewayError, toGatewayError } from './errors';

export const PROXY_PREFIX = '/v1/proxy';

export interface ProxyRouteDependencies {
  readonly registry: ProviderRegistry;
  readonly pipeline: Pipeline;
  readonly observers: readonly PipelineObserver[];
  readonly clock: () => number;
}

/** The request id of a response (set by the request-id middleware). */
export function requestIdOf(response: ServerResponse): string {
  return (response.getHeader('Tollgate-Request-Id') as string | undefined) ?? randomUUID();
}

export function createProxyHandler(dependencies: ProxyRouteDependencies) {
  const { registry, pipeline, observers, clock } = dependencies;

  const finish = (context: ProxyContext, error?: unknown) => {
    if (error !== undefined) {
      const gatewayError = toGatewayError(error);
      context.outcome.status = gatewayError.status;
      context.outcome.errorType = gatewayError.type;
      context.outcome.reason = gatewayError.reason;
      for (const observer of observers) observer.onError?.(context, error);
      // Admitted by the rate limits, refused later (a token budget, the provider unreachable…): the limits still show.
      const limit = context.peek('limit');
      if (limit && !context.response.headersSent) writeRateLimitHeaders(context.response, limit.outcomes);
      sendGatewayError(context.response, context.requestId, gatewayError, context.request);
    }
    const report = () => {
      if (context.outcome.status === 0) context.outcome.status = context.response.statusCode;
      for (const observer of observers) observer.onResponse?.(context);
    };
    if (context.response.writableFinished || context.response.destroyed) report();
    else context.response.once('close', report);
  };

  return (request: IncomingMessage, response: ServerResponse, requestId: string = requestIdOf(response)): void => {
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
    try {
      const pending = pipeline.run(context);
      if (pending) pending.then(() => finish(context), (error: unknown) => finish(context, error));
      else finish(context);
    } catch (error) {
      finish(context, error);
    }
  };
}
