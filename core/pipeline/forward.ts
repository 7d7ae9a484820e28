/**
 * Stage 6, `forward`: sends the upstream request built by `injectKey` and streams the answer back untouched.
 *
 * - Never buffers: the request body is piped up and the response body piped down as bytes arrive, with the provider's
 *   `Content-Type` and `X-Accel-Buffering: no` (so nginx in front does not buffer SSE either). Nothing is compressed.
 * - A client that goes away aborts the upstream request.
 * - Connect timeout → `upstreamUnavailable` (502); no response head within the first-byte timeout → `upstreamTimeout`
 *   (504); refused or reset before the head → `upstreamUnavailable`. After the head is sent, a failure can only cut the
 *   stream: the client sees it end early, and the usage event records the truncation.
 * - The request body limit is enforced while streaming: a declared `Content-Length` over the limit is refused before
 *   anything is read, a chunked body is counted and cut at the limit.
 * - Upstream TLS certificates are verified (`secure: true`; Node's default CA store).
 *
 * Built on http-proxy-middleware with its default plugins ejected: the error, logging and header behaviour are this
 * file's, not the library's defaults.
 */
import http, { type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { createProxyMiddleware, type RequestHandler } from 'http-proxy-middleware';
import { inject, injectable } from 'tsyringe';
import { CONFIGURATION, GatewayError, type PipelineStage, type ProxyContext } from '../contract';
import type { Configuration } from '../configuration/configuration';
import { scrubResponseHeaders } from './header-hygiene';

/** Where the pipeline's context for a request is found by the proxy's event handlers. */
const contexts = new WeakMap<IncomingMessage, { context: ProxyContext; settle: (error?: unknown) => void }>();

class UpstreamFailure extends Error {
  constructor(
    readonly kind: 'connect-timeout' | 'first-byte-timeout' | 'body-too-large',
    message: string,
  ) {
    super(message);
  }
}

/** Maps a proxy error to the protocol's error type. */
export function classifyUpstreamError(error: unknown, limitBytes: number): GatewayError {
  if (error instanceof UpstreamFailure) {
    if (error.kind === 'first-byte-timeout') return new GatewayError('upstreamTimeout', 'The provider did not answer in time.', { reason: 'first_byte_timeout' });
    if (error.kind === 'body-too-large') {
      return new GatewayError('invalidRequest', `The request body is larger than ${limitBytes} bytes.`, { status: 413, reason: 'body_too_large' });
    }
    return new GatewayError('upstreamUnavailable', 'The provider could not be reached (connect timeout).', { reason: 'connect_timeout' });
  }
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'unknown';
  return new GatewayError('upstreamUnavailable', 'The provider could not be reached.', { reason: `upstream_${code.toLowerCase()}` });
}

@injectable()
export class ForwardStage implements PipelineStage {
  readonly name = 'forward' as const;
  private readonly proxies: Record<'http:' | 'https:', RequestHandler>;
  readonly agents: { http: http.Agent; https: https.Agent };

  constructor(@inject(CONFIGURATION) private readonly configuration: Configuration) {
    // Keep-alive pools sized on purpose: a pool smaller than the number of concurrent streams silently queues requests
    // (style.md, "Known traps"). `TOLLGATE_UPSTREAM_MAX_SOCKETS` per upstream host.
    const poolOptions = { keepAlive: true, maxSockets: configuration.upstreamMaxSockets, maxFreeSockets: 256, scheduling: 'lifo' as const };
    this.agents = { http: new http.Agent(poolOptions), https: new https.Agent(poolOptions) };
    this.proxies = {
      'http:': this.createProxy(this.agents.http),
      'https:': this.createProxy(this.agents.https),
    };
  }

  /** Requests waiting for a socket in the upstream pools (a metric: non-zero means the pool is too small). */
  queuedRequests(): number {
    let queued = 0;
    for (const agent of [this.agents.http, this.agents.https]) {
      for (const list of Object.values(agent.requests)) queued += list?.length ?? 0;
    }
    return queued;
  }

  run(context: ProxyContext): Promise<void> {
    const upstream = context.get('upstream');
    const request = context.request;
    const declared = request.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.configuration.maxBodyBytes) {
      throw classifyUpstreamError(new UpstreamFailure('body-too-large', 'declared body too large'), this.configuration.maxBodyBytes);
    }
    // http-proxy copies `req.headers` into the outgoing request: give it exactly the headers injectKey built.
    request.headers = upstream.headers as IncomingMessage['headers'];
    request.url = upstream.path;
    context.response.setHeader('X-Accel-Buffering', 'no');
    const protocol = upstream.origin.startsWith('https:') ? 'https:' : 'http:';
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        if (error === undefined) resolve();
        else reject(error);
      };
      contexts.set(request, { context, settle });
      void this.proxies[protocol](request, context.response, (error?: unknown) => settle(error ?? new Error('proxy declined the request')));
    });
  }

  private createProxy(agent: http.Agent): RequestHandler {
    const configuration = this.configuration;
    return createProxyMiddleware<IncomingMessage, ServerResponse>({
      router: (request) => contexts.get(request)!.context.get('upstream').origin,
      changeOrigin: true,
      xfwd: false,
      secure: true,
      agent,
      ejectPlugins: true,
      plugins: [
        (proxyServer) => {
          proxyServer.on('proxyReq', (proxyRequest: ClientRequest, request: IncomingMessage, response: ServerResponse) => {
            const entry = contexts.get(request);
            if (!entry) return;
            const { context, settle } = entry;
            const fail = (error: Error) => {
              proxyRequest.destroy(error);
            };
            // Connect timeout (only for a fresh socket; a pooled one is already connected).
            let connectTimer: NodeJS.Timeout | undefined;
            proxyRequest.once('socket', (socket: Socket) => {
              if (socket.connecting) {
                connectTimer = setTimeout(() => fail(new UpstreamFailure('connect-timeout', 'connect timeout')), configuration.upstreamConnectTimeoutMs);
                socket.once('connect', () => clearTimeout(connectTimer));
              }
            });
            const firstByteTimer = setTimeout(
              () => fail(new UpstreamFailure('first-byte-timeout', 'first-byte timeout')),
              configuration.upstreamFirstByteTimeoutMs,
            );
            proxyRequest.once('response', () => {
              clearTimeout(firstByteTimer);
              clearTimeout(connectTimer);
            });
            proxyRequest.once('close', () => {
              clearTimeout(firstByteTimer);
              clearTimeout(connectTimer);
            });
            // Request body: count while streaming; cut at the limit.
            request.on('data', (chunk: Buffer) => {
              context.outcome.bytesIn += chunk.length;
              if (context.outcome.bytesIn > configuration.maxBodyBytes) {
                request.unpipe(proxyRequest);
                fail(new UpstreamFailure('body-too-large', 'body too large'));
              }
            });
            // The client went away before the answer was complete: abort upstream.
            response.once('close', () => {
              if (!response.writableFinished) {
                context.outcome.truncated = true;
                proxyRequest.destroy();
                settle();
              }
            });
          });
          proxyServer.on('proxyRes', (proxyResponse: IncomingMessage, request: IncomingMessage, response: ServerResponse) => {
            const entry = contexts.get(request);
            if (!entry) return;
            const { context, settle } = entry;
            scrubResponseHeaders(proxyResponse.headers);
            context.outcome.status = proxyResponse.statusCode ?? 0;
            proxyResponse.on('data', (chunk: Buffer) => {
              context.outcome.bytesOut += chunk.length;
            });
            proxyResponse.once('close', () => {
              if (!proxyResponse.complete) {
                // Reset mid-stream: end the client's response so that it sees the stream stop (it cannot get a status).
                context.outcome.truncated = true;
                response.destroy();
              }
            });
            response.once('finish', () => settle());
            response.once('close', () => settle());
          });
          proxyServer.on('error', (error: Error, request: IncomingMessage, response: ServerResponse | Socket) => {
            const entry = contexts.get(request);
            if (!entry) return;
            const serverResponse = response as ServerResponse;
            if (serverResponse.headersSent || serverResponse.destroyed) {
              entry.context.outcome.truncated = true;
              serverResponse.destroy();
              entry.settle();
              return;
            }
            entry.settle(classifyUpstreamError(error, configuration.maxBodyBytes));
          });
          proxyServer.on('econnreset', (_error: Error, request: IncomingMessage) => {
            contexts.get(request)?.settle();
          });
        },
      ],
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
