/**
 * Stage 6, `forward`: sends the upstream request built by `injectKey` and streams the answer back untouched.
 *
 * - Never buffers: the request body is streamed up and the response body down as bytes arrive, with the provider's
 *   `Content-Type` and `X-Accel-Buffering: no` (so an nginx in front does not buffer SSE either). A 2xx answer is
 *   never compressed or decompressed; `Content-Encoding` passes through as the provider chose it. GET and HEAD send no
 *   body upstream.
 * - A client that goes away aborts the upstream request.
 * - Connect timeout → `upstreamUnavailable` (502); no response head within the first-byte timeout → `upstreamTimeout`
 *   (504); refused or reset before the head → `upstreamUnavailable`. After the head is sent a failure can only cut the
 *   stream: the client sees it end early, and the usage event records the truncation.
 * - The request body limit is enforced while streaming: a declared `Content-Length` over the limit is refused before a
 *   byte is read; a chunked body is counted and cut at the limit.
 * - The answer is scrubbed (header-hygiene.ts, response-scrub.ts): no upstream `Tollgate-*` or rate-limit headers, no
 *   header or error body carrying the injected credential (a short error body is read whole and decoded, a long
 *   uncompressed one masked as it streams, one that cannot be read withheld). Informational (1xx) answers are not
 *   relayed. Redirects are never followed.
 * - Upstream TLS certificates are verified (Node's default `rejectUnauthorized: true` and CA store; never turned off).
 *
 * - Token usage is read by a tap (usage-tap.ts) that sees each chunk after it was written to the client: it never
 *   holds a byte back, keeps bounded memory, and what it read is put on `context.outcome.usage` when the request is
 *   reported, before the observers hear (ProxyContext.settleUsage).
 *
 * Sent on undici's connection pools (Agent → one Pool per provider origin) rather than node:http's `http.request`: one
 * write per request head, no ClientRequest/IncomingMessage stream objects per request, keep-alive by default; the CPU it
 * saves per request is measured in docs/benchmarks.md (docs/decisions/2026-11-24-forward-on-undici.md). It replaced
 * node:http, which had replaced http-proxy-middleware (docs/decisions/2026-11-22-forward-on-node-http.md).
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { inject, injectable } from 'tsyringe';
import type { Agent as UndiciAgent, Dispatcher } from 'undici';
import { CONFIGURATION, GatewayError, type PipelineStage, type ProxyContext, type UpstreamRequest } from '../contract';
import type { Configuration } from '../configuration/configuration';
import { isDroppedResponseHeader, scrubResponseHeaders } from './header-hygiene';
import { rateLimitHeaderValues } from './limit-rate';
import { ERROR_BODY_INSPECT_BYTES, StreamRedactor, credentialForms, inspectionMode, inspectsBody, isIdentity, redactErrorBody, withheldBody, type CredentialForms } from './response-scrub';
import { closeIfBodyUnread, declaresBody, readRequestBodyThen } from './request-body';
import { rewriteResponseUrls } from './response-urls';
import { RequestPrefix, UsageTap } from './usage-tap';
import { UsageEventFilter, usageEventFilterFor } from './usage-event-filter';
import { reservationOf } from './token-reservation';
import { pathModelOf } from './path-model';

/**
 * undici's Agent class, loaded without undici's entry point: that entry point installs an undici Agent as the process's
 * global `fetch` dispatcher (lib/global.js), which would change every `fetch()` in the process (Node's bundled fetch
 * driving a newer undici's Agent; an official provider SDK's raw-body upload failed that way in the tests).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Agent = require('undici/lib/dispatcher/agent') as typeof UndiciAgent;

type FailureKind = 'connect-timeout' | 'first-byte-timeout' | 'body-too-large' | 'queue-timeout';

class UpstreamFailure extends Error {
  constructor(readonly kind: FailureKind) {
    super(kind);
  }
}

/** undici's error codes for what the gateway names itself (https://undici.nodejs.org/#/docs/api/Errors). */
const UNDICI_FAILURES: Readonly<Record<string, FailureKind>> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect-timeout',
  UND_ERR_HEADERS_TIMEOUT: 'first-byte-timeout',
};

/** Maps a failure before the response head to the protocol's error type. */
export function classifyUpstreamError(error: unknown, limitBytes: number): GatewayError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code !== undefined && UNDICI_FAILURES[code]) return classifyUpstreamError(new UpstreamFailure(UNDICI_FAILURES[code]!), limitBytes);
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
  // undici wraps a socket failure (UND_ERR_SOCKET, "other side closed") with the system error as its cause, when any.
  const cause = (error as { cause?: NodeJS.ErrnoException } | undefined)?.cause;
  const system = code === 'UND_ERR_SOCKET' ? (cause?.code ?? 'ECONNRESET') : (code ?? 'unknown');
  if (system === 'EMFILE' || system === 'ENFILE') {
    // Out of file descriptors is the gateway's own limit, not the provider's fault.
    return new GatewayError('serviceUnavailable', 'The gateway cannot open more connections right now. Retry shortly.', { retryAfterSeconds: 1, reason: 'descriptors_exhausted' });
  }
  return new GatewayError('upstreamUnavailable', 'The provider could not be reached.', { reason: `upstream_${system.toLowerCase().replace(/^und_err_/, '')}` });
}

/**
 * A response head's raw fields as a header object: lower-case names, values as sent (latin1, byte for byte), repeats as
 * arrays. Fields that never reach the app (isDroppedResponseHeader) are left out here rather than deleted later, which
 * keeps the object in V8's fast mode for the head write; `Connection`'s value is returned apart, for the fields it names.
 */
function headersOf(raw: readonly Buffer[]): { headers: IncomingHttpHeaders; connection: string | undefined } {
  const headers: Record<string, string | string[]> = {};
  let connection: string | undefined;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index]!.toString('latin1').toLowerCase();
    const value = raw[index + 1]!.toString('latin1');
    if (isDroppedResponseHeader(name)) {
      // Repeated Connection fields are one comma-separated list (RFC 9110 §5.3).
      if (name === 'connection') connection = connection === undefined ? value : `${connection}, ${value}`;
      continue;
    }
    const existing = headers[name];
    if (existing === undefined) headers[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else headers[name] = [existing, value];
  }
  return { headers, connection };
}

/** A request body of at most this many declared bytes is read whole and sent as one buffer (readWholeBody). */
const BUFFERED_BODY_BYTES = 64 * 1024;

/** What `forward` does with the client's own body: nothing (none declared, or already read), read it whole, or stream it. */
type ClientBody = 'none' | 'whole' | 'stream';

function clientBody(request: IncomingMessage, upstream: UpstreamRequest, declared: string | undefined): ClientBody {
  // A body someone read before (a payload signature) is the upstream request's own.
  // GET and HEAD send none upstream, whatever the client sent (injectKey dropped its Content-Length).
  if (upstream.body || !declaresBody(request) || request.readableEnded || upstream.method === 'GET' || upstream.method === 'HEAD') return 'none';
  const small = declared !== undefined && request.headers['transfer-encoding'] === undefined && Number(declared) <= BUFFERED_BODY_BYTES;
  return small ? 'whole' : 'stream';
}

/**
 * One forwarded request: a handler of undici's core interface (`onConnect`, `onHeaders`, `onData`, `onComplete`,
 * `onError`: the one undici's own `request()` and `stream()` implement, lib/api/api-request.js), writing the provider's
 * answer to the client as it arrives. undici's types mark these names deprecated in favour of a controller-based API, but
 * that API is an adapter over this one (lib/handler/unwrap-handler.js): per request it allocates a wrapper and a
 * controller and parses the head into an object this class would not use (it reads the raw head, byte for byte). The
 * saving is measured in docs/benchmarks.md; decision 2026-11-24-forward-on-undici.
 *
 * A class rather than closures: per request, this object and its two listeners (client close, request body) are all
 * that is allocated here.
 */
class Forwarding implements Dispatcher.DispatchHandler {
  /** undici's abort for the current attempt (a new one when undici starts the request again on a fresh connection). */
  private abortUpstream: ((reason: Error) => void) | undefined;
  /** undici's resume, for a paused answer (the client's socket was full). */
  private resumeUpstream: (() => void) | undefined;
  private settled = false;
  /** Abandoned before undici connected it (client gone or queue timeout): abort on arrival. */
  private abandoned: Error | undefined;
  private queueTimer: NodeJS.Timeout | undefined;
  private tap: UsageTap | undefined;
  /** Drops the usage-only event the gateway asked for and the client did not (usage-event-filter.ts). */
  private filter: UsageEventFilter | undefined;
  /** The start of the client's body, for the usage tap (the model name when the answer names none). */
  private requestTap: RequestPrefix | undefined;
  private status = 0;
  /** A small non-2xx answer read whole to redact the credential (response-scrub.ts). */
  private inspected: { headers: IncomingHttpHeaders; chunks: Buffer[]; size: number } | undefined;
  /** A longer or streamed uncompressed non-2xx answer, masked as it passes (response-scrub.ts). */
  private redactor: StreamRedactor | undefined;
  private credentials: CredentialForms = [];
  private readonly request: IncomingMessage;
  private readonly response: ServerResponse;
  private readonly limit: number;
  /** The client's body goes upstream as a stream (counted and cut here), not as a buffer someone read before. */
  private streamsBody = false;

  constructor(
    private readonly stage: ForwardStage,
    private readonly context: ProxyContext,
    private readonly upstream: UpstreamRequest,
    private readonly resolve: () => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.request = context.request;
    this.response = context.response;
    this.limit = stage.configuration.maxBodyBytes;
    if (context.provider.usage) this.requestTap = new RequestPrefix();
  }

  start(body: ClientBody): void {
    const { upstream, response } = this;
    if (this.stage.configuration.upstreamMaxSockets > 0) {
      // A request queued behind the socket cap waits a bounded time, then gets a typed error.
      this.queueTimer = setTimeout(() => this.abandon(new UpstreamFailure('queue-timeout')), this.stage.configuration.upstreamQueueTimeoutMs);
    }
    // The client went away before the answer was complete: abort upstream. (`close` comes once; `settle` removes it.)
    response.on('close', this.onClientClose);
    if (upstream.body) {
      this.requestTap?.keep(upstream.body);
      this.dispatch(upstream.body);
    } else if (body === 'whole') this.readWholeBody();
    else {
      this.streamsBody = body === 'stream';
      this.dispatch(this.streamsBody ? this.request : null);
    }
  }

  private dispatch(body: Buffer | IncomingMessage | null): void {
    const upstream = this.upstream;
    this.stage.dispatcher.dispatch({ origin: upstream.origin, path: upstream.path, method: upstream.method as Dispatcher.HttpMethod, headers: upstream.headers, body }, this);
  }

  /**
   * A small body with a declared length is read whole (as a payload signature reads it, request-body.ts), then sent as
   * one buffer: it arrives with the head or right after it, and a buffer costs undici far less than a stream body.
   * Measured: with the client's request streamed into undici about a fifth of everything allocated per request outlived
   * a scavenge (docs/benchmarks.md, "Garbage collection"); with the body as a buffer the bare undici pipe keeps 1–2%.
   * Read by the callback form of readRequestBody, so that the body goes upstream in the turn it ends.
   */
  private readWholeBody(): void {
    readRequestBodyThen(this.context, this.limit, (error, body) => {
      // Over the limit: answered as such. A client gone mid-body: its response's `close` settles this request.
      if (error) {
        if (error instanceof GatewayError) this.settle(error);
        else this.abandoned ??= error;
        return;
      }
      // The client went away, or the queue deadline answered, while the body was arriving: nothing goes upstream.
      if (this.settled || this.abandoned) return;
      this.requestTap?.keep(body!);
      this.dispatch(body!);
    });
  }

  private readonly onClientClose = (): void => {
    if (this.response.writableFinished) return;
    this.context.outcome.truncated = true;
    // Settled first: the client's leaving is not an upstream failure, whatever undici reports for the abort.
    this.settle();
    this.abandon(new Error('the client went away'));
  };

  /** Stops this request whatever its state (queued, connecting, streaming). */
  private abandon(reason: Error): void {
    // Kept in every state: should undici start this request again after the abort (it requeues a request whose
    // connection failed), onConnect aborts that start before anything is sent.
    this.abandoned ??= reason;
    if (this.abortUpstream) this.abortUpstream(reason);
    // Queued (no controller yet): answer now; undici drops the request when it would start it.
    else if (reason instanceof UpstreamFailure) this.settle(classifyUpstreamError(reason, this.limit));
  }

  /** Counts the streamed request body (cut at the limit) and keeps its start; attached when undici starts sending it. */
  private readonly onRequestData = (chunk: Buffer): void => {
    const outcome = this.context.outcome;
    outcome.bytesIn += chunk.length;
    if (outcome.bytesIn > this.limit) {
      this.request.off('data', this.onRequestData);
      this.abandon(new UpstreamFailure('body-too-large'));
      return;
    }
    this.requestTap?.keep(chunk);
  };

  onConnect(abort: (reason?: Error) => void): void {
    clearTimeout(this.queueTimer);
    if (this.abandoned) {
      abort(this.abandoned);
      return;
    }
    // undici starts a request again (a new abort) when a reused keep-alive connection failed before the answer: abort
    // then goes to the latest start; the body listener is attached once (a streamed body is never retried).
    const retried = this.abortUpstream !== undefined;
    this.abortUpstream = abort;
    if (retried) return;
    // Attached in the same turn as undici's own listener (its body writer starts right after this call), so no chunk
    // flows before both listen. A buffered body was counted by whoever read it.
    if (this.streamsBody) this.request.on('data', this.onRequestData);
  }

  /** The answer's head (raw fields); `true`: keep reading. */
  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // An informational answer (`103 Early Hints`, RFC 8297) precedes the final one on the same request: it is not
    // relayed (its hints name the provider's resources), and the final answer that follows passes as any other.
    if (statusCode < 200) return true;
    const { context, response, upstream } = this;
    this.resumeUpstream = resume;
    // No redirect is ever followed: a 3xx goes back to the app like any answer, scrubbed of the credential.
    const { headers, connection } = headersOf(rawHeaders);
    this.credentials = credentialForms(context);
    scrubResponseHeaders(headers, { credentials: this.credentials, gatewayRetryAfter: response.hasHeader('retry-after'), connection });
    if (upstream.responseUrls) rewriteResponseUrls(headers, upstream.responseUrls);
    this.status = statusCode;
    context.outcome.status = statusCode;
    headers['x-accel-buffering'] = 'no';
    // The gateway's own headers (the provider's copies were scrubbed): request id and rate limits, in the same head.
    (headers as Record<string, string>)['Tollgate-Request-Id'] = context.requestId;
    const limit = context.peek('limit');
    if (limit) {
      const [policy, current] = rateLimitHeaderValues(limit.outcomes);
      (headers as Record<string, string>)['RateLimit-Policy'] = policy;
      (headers as Record<string, string>)['RateLimit'] = current;
    }
    if (inspectsBody(statusCode, upstream.method, this.credentials)) {
      if (inspectionMode(headers) === 'whole') {
        this.inspected = { headers, chunks: [], size: 0 };
        return true;
      }
      this.redactor = new StreamRedactor(this.credentials);
    }
    this.relayHead(headers);
    return true;
  }

  private relayHead(headers: IncomingHttpHeaders): void {
    const usage = this.context.provider.usage;
    if (usage && this.status >= 200 && this.status < 300 && reservationOf(this.context)?.addedStreamUsage) {
      this.filter = usageEventFilterFor(headers, usage);
      // The client gets fewer bytes than the provider sent.
      if (this.filter) delete headers['content-length'];
    }
    closeIfBodyUnread(this.request, headers);
    this.response.writeHead(this.status, headers as Record<string, string | string[]>);
    if (usage && this.status >= 200 && this.status < 300) {
      const { provider, route } = this.context;
      const pathModel = provider.pathModels ? () => pathModelOf(provider, this.context.request.method ?? 'POST', route.version, route.providerPath) : undefined;
      this.tap = new UsageTap(usage, headers, route.providerPath, this.requestTap, pathModel);
    }
    // What the tap needed from the request was read: a long stream does not hold it.
    this.requestTap = undefined;
  }

  /** A chunk of the answer; `false` pauses undici until `resumeUpstream` (the client's socket drained). */
  onData(chunk: Buffer): boolean {
    if (this.settled) return true;
    const inspected = this.inspected;
    if (inspected) {
      inspected.chunks.push(chunk);
      inspected.size += chunk.length;
      if (inspected.size <= ERROR_BODY_INSPECT_BYTES) return true;
      this.inspected = undefined;
      // Longer than a body read whole: compressed, it is withheld (never sent unread); else masked as it streams.
      if (!isIdentity(inspected.headers)) {
        this.withhold(inspected.headers);
        return true;
      }
      this.redactor = new StreamRedactor(this.credentials);
      this.relayHead(inspected.headers);
      chunk = Buffer.concat(inspected.chunks);
    }
    if (this.redactor) {
      const masked = this.redactor.push(chunk);
      if (masked === null) {
        this.cut();
        return true;
      }
      chunk = masked;
    }
    const relayed = this.filter ? this.filter.push(chunk) : chunk;
    this.context.outcome.bytesOut += relayed.length;
    const flowing = relayed.length === 0 || this.response.write(relayed);
    // After the write: the tap only observes what the client already has (and what the filter held back).
    this.tap?.observe(chunk);
    if (flowing) return true;
    this.response.once('drain', this.resumeUpstream!);
    return false;
  }

  onComplete(): void {
    if (this.settled) return;
    const inspected = this.inspected;
    if (inspected) {
      this.inspected = undefined;
      const original = Buffer.concat(inspected.chunks);
      const decided = redactErrorBody(original, inspected.headers, this.credentials);
      const body = decided.kind === 'redacted' ? decided.body : decided.kind === 'withheld' ? Buffer.alloc(0) : original;
      if (inspected.headers['content-length'] === undefined) inspected.headers['content-length'] = String(body.length);
      closeIfBodyUnread(this.request, inspected.headers);
      this.response.writeHead(this.status, inspected.headers as Record<string, string | string[]>);
      this.context.outcome.bytesOut += body.length;
      this.response.end(body);
    } else if (this.redactor) {
      const rest = this.redactor.flush();
      if (rest === null) return this.cut();
      this.context.outcome.bytesOut += rest.length;
      this.response.end(rest);
    } else {
      // End the client's response first: parsing a buffered JSON body must not hold back its last chunk.
      const rest = this.filter?.flush();
      if (rest && rest.length > 0) {
        this.context.outcome.bytesOut += rest.length;
        this.response.end(rest);
      } else this.response.end();
    }
    this.settle();
  }

  /** An inspected answer too long to decode: the status and headers pass, the body does not; upstream is aborted. */
  private withhold(headers: IncomingHttpHeaders): void {
    withheldBody(headers);
    closeIfBodyUnread(this.request, headers);
    this.response.writeHead(this.status, headers as Record<string, string | string[]>);
    this.response.end();
    this.settle();
    this.abortUpstream?.(new Error('the answer was withheld'));
  }

  /** A streamed answer that holds the credential in a form that cannot be masked in place: it ends here, cut. */
  private cut(): void {
    this.context.outcome.truncated = true;
    this.response.destroy();
    this.settle();
    this.abortUpstream?.(new Error('the answer was cut'));
  }

  onError(error: Error): void {
    this.request.off('data', this.onRequestData);
    if (this.settled) return;
    if (this.response.headersSent) {
      // Cut after the head (reset, idle timeout): the status is gone, so end the client's response early.
      this.context.outcome.truncated = true;
      this.response.destroy();
      this.settle();
      return;
    }
    this.settle(classifyUpstreamError(this.abandoned ?? error, this.limit));
  }

  private settle(error?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.queueTimer);
    this.response.off('close', this.onClientClose);
    if (this.tap) {
      // Read when the request is reported (ProxyContext.settleUsage), with the other requests finished in this turn.
      this.context.deferUsage(this.tap);
      this.tap = undefined;
    }
    if (error === undefined) this.resolve();
    else this.reject(error);
  }
}

@injectable()
export class ForwardStage implements PipelineStage {
  readonly name = 'forward' as const;
  /** The request id and rate-limit headers go into the head this stage writes (one write per head). */
  readonly writesGatewayHeaders = true;
  /** undici's Agent: one keep-alive Pool per provider origin. */
  readonly dispatcher: UndiciAgent;

  constructor(@inject(CONFIGURATION) readonly configuration: Configuration) {
    // Keep-alive pools without a socket cap by default: a cap smaller than the number of concurrent streams silently
    // queues requests (style.md, "Known traps"). `TOLLGATE_UPSTREAM_MAX_SOCKETS` sets one per upstream origin; a request
    // then waits at most `TOLLGATE_UPSTREAM_QUEUE_TIMEOUT_MS` for a connection. undici's own deadlines carry the
    // gateway's: connect (TOLLGATE_UPSTREAM_CONNECT_TIMEOUT_MS), the response head (TOLLGATE_UPSTREAM_TIMEOUT_MS) and the
    // silence allowed between two body chunks once the answer started (TOLLGATE_UPSTREAM_IDLE_TIMEOUT_MS, 0: none).
    // TLS certificates are verified (undici's default; never turned off). `queuedRequests()` and `openSockets()` feed
    // /metrics.
    this.dispatcher = new Agent({
      connections: configuration.upstreamMaxSockets > 0 ? configuration.upstreamMaxSockets : null,
      pipelining: 1,
      connect: { timeout: configuration.upstreamConnectTimeoutMs },
      headersTimeout: configuration.upstreamFirstByteTimeoutMs,
      bodyTimeout: configuration.upstreamIdleTimeoutMs,
      // Provider heads can be large (long `Link` or tracing headers); Node's server accepts 32 KiB from clients too.
      maxHeaderSize: 64 * 1024,
    });
  }

  /** undici's per-origin statistics: PoolStats, or ClientStats when the cap is one connection (no `queued` then). */
  private poolStats(): Array<{ connected?: number; queued?: number; pending?: number }> {
    return Object.values((this.dispatcher as unknown as { stats?: Record<string, { connected?: number; queued?: number; pending?: number }> }).stats ?? {});
  }

  /** Requests waiting for a connection in the upstream pools (non-zero means the pool is too small). */
  queuedRequests(): number {
    let queued = 0;
    for (const stats of this.poolStats()) queued += stats.queued ?? stats.pending ?? 0;
    return queued;
  }

  /** Open connections to providers, in use and idle. */
  openSockets(): number {
    let open = 0;
    for (const stats of this.poolStats()) open += stats.connected ?? 0;
    return open;
  }

  run(context: ProxyContext): Promise<void> {
    const upstream = context.get('upstream');
    const request = context.request;
    const limit = this.configuration.maxBodyBytes;
    const declared = request.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) throw classifyUpstreamError(new UpstreamFailure('body-too-large'), limit);
    return new Promise<void>((resolve, reject) => new Forwarding(this, context, upstream, resolve, reject).start(clientBody(request, upstream, declared)));
  }

  close(): void {
    void this.dispatcher.destroy();
  }
}
