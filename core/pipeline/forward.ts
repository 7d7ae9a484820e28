/**
 * Stage 6, `forward`: sends the upstream request built by `injectKey` and streams the answer back untouched.
 *
 * - Never buffers: the request body is streamed up and the response body down as bytes arrive, with the provider's
 *   `Content-Type` and `X-Accel-Buffering: no` (so an nginx in front does not buffer SSE either). Nothing is compressed
 *   or decompressed; `Content-Encoding` passes through as the provider chose it.
 * - A client that goes away aborts the upstream request.
 * - Connect timeout → `upstreamUnavailable` (502); no response head within the first-byte timeout → `upstreamTimeout`
 *   (504); refused or reset before the head → `upstreamUnavailable`. After the head is sent a failure can only cut the
 *   stream: the client sees it end early, and the usage event records the truncation.
 * - The request body limit is enforced while streaming: a declared `Content-Length` over the limit is refused before a
 *   byte is read; a chunked body is counted and cut at the limit.
 * - The answer is scrubbed (header-hygiene.ts, response-scrub.ts): no upstream `Tollgate-*` or rate-limit headers, no
 *   header or small error body carrying the injected credential. Redirects are never followed.
 * - Upstream TLS certificates are verified (Node's default `rejectUnauthorized: true` and CA store; never turned off).
 *
 * - Token usage is read by a tap (usage-tap.ts) that sees each chunk after it was written to the client: it never
 *   holds a byte back, keeps bounded memory, and puts what it read on `context.outcome.usage` when the answer ends.
 *
 * Written on node:http rather than http-proxy-middleware: see docs/decisions/2026-11-22-forward-on-node-http.md.
 */
import http, { type ClientRequest, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { inject, injectable } from 'tsyringe';
import { CONFIGURATION, GatewayError, type PipelineStage, type ProxyContext } from '../contract';
import type { Configuration } from '../configuration/configuration';
import { scrubResponseHeaders } from './header-hygiene';
import { ERROR_BODY_INSPECT_BYTES, credentialForms, inspectsBody, redactErrorBody } from './response-scrub';
import { rewriteResponseUrls } from './response-urls';
import { UsageTap } from './usage-tap';

type FailureKind = 'connect-timeout' | 'first-byte-timeout' | 'body-too-large' | 'queue-timeout';

class UpstreamFailure extends Error {
  constructor(readonly kind: FailureKind) {
    super(kind);
  }
}

/** Maps a failure before the response head to the protocol's error type. */
export function classifyUpstreamError(error: unknown, limitBytes: number): GatewayError {
  if (error instanceof UpstreamFailure) {
    if (error.kind === 'first-byte-timeout') return new GatewayError('upstreamTimeout', 'The provider did not answer in time.', { reason: 'first_byte_timeout' });
    if (error.kind === 'body-too-large') {
      return new GatewayError('invalidRequest', `The request body is larger than ${limitBytes} bytes.`, { status: 413, reason: 'body_too_large' });
    }
    if (error.kind === 'queue-timeout') {
      // The gateway's own pool cap, not the provider's fault.
      return new GatewayError('serviceUnavailable', 'The gateway has no free connection to this provider right now. Retry shortly.', { retryAfterSeconds: 1, reason: 'upstream_pool_exhausted' });
    }
    return new GatewayError('upstreamUnavailable', 'The provider could not be reached (connect timeout).', { reason: 'connect_timeout' });
  }
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'unknown';
  if (code === 'EMFILE' || code === 'ENFILE') {
    // Out of file descriptors is the gateway's own limit, not the provider's fault.
    return new GatewayError('serviceUnavailable', 'The gateway cannot open more connections right now. Retry shortly.', { retryAfterSeconds: 1, reason: 'descriptors_exhausted' });
  }
  return new GatewayError('upstreamUnavailable', 'The provider could not be reached.', { reason: `upstream_${code.toLowerCase()}` });
}

/** Host and port of an origin, parsed once per distinct origin. */
const origins = new Map<string, { protocol: 'http:' | 'https:'; hostname: string; port: number }>();
function parseOrigin(origin: string) {
  let parsed = origins.get(origin);
  if (!parsed) {
    const url = new URL(origin);
    parsed = { protocol: url.protocol as 'http:' | 'https:', hostname: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) || (url.protocol === 'https:' ? 443 : 80) };
    if (origins.size < 10_000) origins.set(origin, parsed);
  }
  return parsed;
}

@injectable()
export class ForwardStage implements PipelineStage {
  readonly name = 'forward' as const;
  readonly agents: { http: http.Agent; https: https.Agent };

  constructor(@inject(CONFIGURATION) private readonly configuration: Configuration) {
    // Keep-alive pools without a socket cap by default: a cap smaller than the number of concurrent streams silently
    // queues requests (style.md, "Known traps"). `TOLLGATE_UPSTREAM_MAX_SOCKETS` sets one per upstream host; a request
    // then waits at most `TOLLGATE_UPSTREAM_QUEUE_TIMEOUT_MS` for a socket. `queuedRequests()` and `openSockets()` feed
    // /metrics.
    const maxSockets = configuration.upstreamMaxSockets > 0 ? configuration.upstreamMaxSockets : Infinity;
    const poolOptions = { keepAlive: true, maxSockets, maxFreeSockets: 256, scheduling: 'lifo' as const };
    this.agents = { http: new http.Agent(poolOptions), https: new https.Agent(poolOptions) };
  }

  /** Requests waiting for a socket in the upstream pools (non-zero means the pool is too small). */
  queuedRequests(): number {
    let queued = 0;
    for (const agent of [this.agents.http, this.agents.https]) for (const list of Object.values(agent.requests)) queued += list?.length ?? 0;
    return queued;
  }

  /** Open sockets to providers, in use and idle. */
  openSockets(): number {
    let open = 0;
    for (const agent of [this.agents.http, this.agents.https]) {
      for (const list of Object.values(agent.sockets)) open += list?.length ?? 0;
      for (const list of Object.values(agent.freeSockets)) open += list?.length ?? 0;
    }
    return open;
  }

  run(context: ProxyContext): Promise<void> {
    const upstream = context.get('upstream');
    const { request, response } = context;
    const limit = this.configuration.maxBodyBytes;
    const declared = request.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) throw classifyUpstreamError(new UpstreamFailure('body-too-large'), limit);

    const target = parseOrigin(upstream.origin);
    const transport = target.protocol === 'https:' ? https : http;
    // The request body's start is kept (bounded) for the model name, in case the answer does not carry it.
    const requestTap: Buffer[] = [];
    let requestTapBytes = 0;
    const keepRequest = (chunk: Buffer) => {
      if (context.provider.usage && requestTapBytes < 16_384) {
        // A copy: a view would keep the whole (possibly large) chunk alive until the answer ends.
        requestTap.push(Buffer.from(chunk.subarray(0, 16_384 - requestTapBytes)));
        requestTapBytes += Math.min(chunk.length, 16_384 - requestTapBytes);
      }
    };
    let tap: UsageTap | undefined;
    const finishTap = () => {
      if (!tap) return;
      const usage = tap.finish();
      tap = undefined;
      if (usage) context.outcome.usage = usage;
    };
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        finishTap();
        clearTimeout(firstByteTimer);
        clearTimeout(connectTimer);
        clearTimeout(queueTimer);
        clearTimeout(idleTimer);
        if (error === undefined) resolve();
        else reject(error);
      };
      const proxyRequest: ClientRequest = transport.request({
        protocol: target.protocol,
        hostname: target.hostname,
        port: target.port,
        method: upstream.method,
        path: upstream.path,
        headers: upstream.headers,
        agent: target.protocol === 'https:' ? this.agents.https : this.agents.http,
      });
      const fail = (kind: FailureKind) => proxyRequest.destroy(new UpstreamFailure(kind));

      let connectTimer: NodeJS.Timeout | undefined;
      let idleTimer: NodeJS.Timeout | undefined;
      // A request queued behind a socket cap waits a bounded time, then gets a typed error.
      // A request without a socket is not failed by destroy() until a socket frees up: take it out of the queue here.
      const agent = target.protocol === 'https:' ? this.agents.https : this.agents.http;
      // Without a socket cap (the default) nothing ever queues: no timer per request then.
      const queueTimer = this.configuration.upstreamMaxSockets <= 0 ? undefined : setTimeout(() => {
        for (const [name, list] of Object.entries(agent.requests)) {
          const index = list?.indexOf(proxyRequest as never) ?? -1;
          if (index >= 0) list!.splice(index, 1);
          // Node's agent expects no empty queue lists (it deletes them itself).
          if (list?.length === 0) delete (agent.requests as Record<string, unknown>)[name];
        }
        proxyRequest.destroy();
        settle(classifyUpstreamError(new UpstreamFailure('queue-timeout'), limit));
      }, this.configuration.upstreamQueueTimeoutMs);
      proxyRequest.once('socket', (socket: Socket) => {
        clearTimeout(queueTimer);
        if (socket.connecting) {
          connectTimer = setTimeout(() => fail('connect-timeout'), this.configuration.upstreamConnectTimeoutMs);
          socket.once('connect', () => clearTimeout(connectTimer));
        }
      });
      const firstByteTimer = setTimeout(() => fail('first-byte-timeout'), this.configuration.upstreamFirstByteTimeoutMs);

      proxyRequest.once('response', (proxyResponse: IncomingMessage) => {
        clearTimeout(firstByteTimer);
        clearTimeout(connectTimer);
        // No redirect is ever followed: a 3xx goes back to the app like any answer, scrubbed of the credential.
        const credentials = credentialForms(context);
        scrubResponseHeaders(proxyResponse.headers, { credentials, gatewayRetryAfter: response.hasHeader('retry-after') });
        if (upstream.responseUrls) rewriteResponseUrls(proxyResponse.headers, upstream.responseUrls);
        const status = proxyResponse.statusCode ?? 502;
        context.outcome.status = status;
        response.setHeader('X-Accel-Buffering', 'no');
        const relay = (buffered?: Buffer) => {
          response.writeHead(status, proxyResponse.headers);
          if (context.provider.usage && status >= 200 && status < 300) {
            tap = new UsageTap(context.provider.usage, proxyResponse.headers, context.route.providerPath);
            for (const chunk of requestTap) tap.observeRequest(chunk);
          }
          // Once started, a response that sends nothing for TOLLGATE_UPSTREAM_IDLE_TIMEOUT_MS is cut (truncated).
          const idleMs = this.configuration.upstreamIdleTimeoutMs;
          if (idleMs > 0) {
            idleTimer = setTimeout(() => {
              context.outcome.truncated = true;
              proxyRequest.destroy();
              response.destroy();
            }, idleMs);
          }
          if (buffered?.length) {
            context.outcome.bytesOut += buffered.length;
            response.write(buffered);
            tap?.observe(buffered);
          }
          proxyResponse.on('data', (chunk: Buffer) => {
            idleTimer?.refresh();
            context.outcome.bytesOut += chunk.length;
            const flowing = response.write(chunk);
            // After the write: the tap only observes what the client already has.
            tap?.observe(chunk);
            if (!flowing) {
              proxyResponse.pause();
              response.once('drain', () => proxyResponse.resume());
            }
          });
          proxyResponse.once('end', () => {
            // End the client's response first: parsing a buffered JSON body must not hold back its last chunk.
            response.end();
            finishTap();
          });
        };
        if (!inspectsBody(status, proxyResponse.headers, upstream.method, credentials)) relay();
        else {
          // A small non-2xx, non-streamed answer is read whole (up to the bound) and redacted if it holds the credential.
          const chunks: Buffer[] = [];
          let size = 0;
          const stopBuffering = () => {
            proxyResponse.off('data', onData);
            proxyResponse.off('end', onEnd);
          };
          const onData = (chunk: Buffer) => {
            chunks.push(chunk);
            size += chunk.length;
            if (size > ERROR_BODY_INSPECT_BYTES) {
              stopBuffering();
              relay(Buffer.concat(chunks));
            }
          };
          const onEnd = () => {
            stopBuffering();
            const original = Buffer.concat(chunks);
            const body = redactErrorBody(original, proxyResponse.headers, credentials) ?? original;
            if (proxyResponse.headers['content-length'] === undefined) proxyResponse.headers['content-length'] = String(body.length);
            response.writeHead(status, proxyResponse.headers);
            context.outcome.bytesOut += body.length;
            response.end(body);
          };
          proxyResponse.on('data', onData);
          proxyResponse.once('end', onEnd);
        }
        proxyResponse.once('close', () => {
          if (!proxyResponse.complete) {
            // Reset mid-stream: the status is gone, so end the client's response early; it sees the stream stop.
            context.outcome.truncated = true;
            response.destroy();
          }
        });
        response.once('finish', () => settle());
      });

      proxyRequest.on('error', (error: Error) => {
        if (response.headersSent) {
          context.outcome.truncated = true;
          response.destroy();
          settle();
          return;
        }
        settle(classifyUpstreamError(error, limit));
      });

      // The client went away before the answer was complete: abort upstream.
      response.once('close', () => {
        if (!response.writableFinished) {
          context.outcome.truncated = true;
          proxyRequest.destroy();
          settle();
        }
      });

      // A body already read for a payload signature is sent as is.
      if (upstream.body) {
        keepRequest(upstream.body);
        proxyRequest.end(upstream.body);
        return;
      }
      // Request body: streamed with back-pressure, counted, cut at the limit.
      request.on('data', (chunk: Buffer) => {
        context.outcome.bytesIn += chunk.length;
        if (context.outcome.bytesIn > limit) {
          request.pause();
          fail('body-too-large');
          return;
        }
        keepRequest(chunk);
        if (!proxyRequest.write(chunk)) {
          request.pause();
          proxyRequest.once('drain', () => request.resume());
        }
      });
      if (request.readableEnded) proxyRequest.end();
      else request.once('end', () => proxyRequest.end());
      request.once('error', () => proxyRequest.destroy());
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
