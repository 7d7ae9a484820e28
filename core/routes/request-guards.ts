/**
 * What the HTTP server does before and around a route's own work, so that slow or oversized input costs little
 * (docs/security.md, "Slow and oversized input"):
 *
 * - a body deadline for every route but the proxy (`TOLLGATE_REQUEST_TIMEOUT_MS`) and a body-idle deadline for every
 *   route (`TOLLGATE_BODY_IDLE_TIMEOUT_MS`): a client that trickles its body is answered 408 (or cut) and disconnected;
 * - `100 Continue` only once a route starts reading the body, i.e. after its credential and rate-limit checks passed;
 * - typed answers for what Node's HTTP parser refuses (`clientError`): the protocol's error body and `Tollgate-Error`;
 * - the client address and the origin a browser used, honouring `TOLLGATE_TRUST_PROXY`.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { GatewayError } from '../contract';
import { InFlightList, type InFlightMember } from '../pipeline/in-flight-list';
import { declaresBody } from '../pipeline/request-body';
import { sendGatewayError } from './errors';
import { closeWhenBodyUnread } from './unread-bodies';
export { clientAddress } from '../security/client-address';

/** Largest body of `POST /v1/attest/{method}` (an App Attest object or an Android chain is under 10 KiB). */
export const ATTEST_MAX_BODY_BYTES = 32 * 1024;
/** Largest body of a management API request (`/v1/admin/*`, including the public `session` and `setup` routes). */
export const ADMIN_MAX_BODY_BYTES = 64 * 1024;
/** Largest body of an MCP request (`/mcp`): one JSON-RPC message, after the admin key was checked. */
export const MCP_MAX_BODY_BYTES = 256 * 1024;

export interface BodyDeadlines {
  /** Whole-request deadline from the request's arrival; 0 = none (proxy routes). */
  readonly totalMs: number;
  /** No body progress for this long, while the gateway is not the one holding the body back. */
  readonly idleMs: number;
  /** Whether the gateway may still answer 408 itself (false on proxy routes: the pipeline owns their answer). */
  readonly answer: boolean;
}

/** One body being watched: what `BodyWatch.watch` returns, for `forget`. */
export interface WatchedBody extends InFlightMember {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  readonly socket: Duplex & { bytesRead: number };
  readonly deadlines: BodyDeadlines;
  readonly started: number;
  lastBytes: number;
  lastProgress: number;
}

/**
 * Watches request bodies against their deadlines until they have arrived. Progress is read from the socket's byte
 * counter (never by listening to the body, which would start it flowing before the route's checks ran). While the body
 * waits in the gateway's own buffer (the route has not read it yet, or the upstream applies back-pressure) the client
 * is not idle. On expiry the client gets 408 `body_timeout` when no answer has started, and the connection is closed.
 *
 * One timer sweeps every watched body (as Node's own `connectionsCheckingInterval` does for request heads) instead of
 * one timer and three listeners per request: a request leaves the set when its response closes, or at the next sweep
 * once its body has arrived (an {@link InFlightList}, not a Map keyed by request: see there why). The sweep period is a quarter of the shortest deadline (25 ms to 1 s), so a deadline is
 * enforced within a quarter of itself.
 */
export class BodyWatch {
  private readonly watched = new InFlightList<WatchedBody>();
  private timer: NodeJS.Timeout | undefined;
  private readonly periodMs: number;

  constructor(shortestDeadlineMs: number) {
    this.periodMs = Math.max(25, Math.min(1000, Math.floor(shortestDeadlineMs / 4)));
  }

  /** Watches `request`'s body; the entry to hand to `forget`, undefined for a request without a body. */
  watch(request: IncomingMessage, response: ServerResponse, deadlines: BodyDeadlines): WatchedBody | undefined {
    if (!declaresBody(request)) return undefined;
    // An answer that starts before the body arrived closes the connection after it (unread-bodies.ts). Proxy routes
    // write their heads in forward.ts and sendGatewayError, which say so themselves: wrapping every proxied response's
    // writeHead made V8 keep each request's objects past young-generation collections (docs/benchmarks.md).
    if (deadlines.answer) closeWhenBodyUnread(request, response);
    const socket = request.socket as WatchedBody['socket'];
    const now = Date.now();
    const entry: WatchedBody = { request, response, socket, deadlines, started: now, lastBytes: socket.bytesRead, lastProgress: now, inFlightIndex: -1 };
    this.watched.add(entry);
    if (!this.timer) {
      this.timer = setInterval(this.sweep, this.periodMs);
      this.timer.unref();
    }
    return entry;
  }

  /**
   * Stops watching a body (its response closed): called from the close handler the server has anyway, so that a
   * finished request's objects are not held until the next sweep.
   */
  forget(entry: WatchedBody | undefined): void {
    if (entry !== undefined) this.watched.delete(entry);
  }

  /** Bodies still being watched (for tests and metrics). */
  get size(): number {
    return this.watched.size;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }

  private readonly sweep = (): void => {
    const now = Date.now();
    this.watched.forEach((entry) => {
      const { request, socket, deadlines } = entry;
      if (request.complete || socket.destroyed || request.destroyed) {
        this.watched.delete(entry);
        return;
      }
      const bytes = socket.bytesRead;
      if (bytes !== entry.lastBytes || request.readableLength > 0 || request.isPaused()) {
        entry.lastBytes = bytes;
        entry.lastProgress = now;
      }
      if (now - entry.lastProgress >= deadlines.idleMs || (deadlines.totalMs > 0 && now - entry.started >= deadlines.totalMs)) {
        this.watched.delete(entry);
        expireBody(entry);
      }
    });
    if (this.watched.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  };
}

function expireBody({ request, response, socket, deadlines }: WatchedBody): void {
  if (deadlines.answer && !response.headersSent && !response.destroyed) {
    sendGatewayError(response, String(response.getHeader('Tollgate-Request-Id') ?? randomUUID()), new GatewayError('invalidRequest', 'The request body did not arrive in time.', { status: 408, reason: 'body_timeout' }), request);
    // The answer is small and written at once; the connection then goes, whatever the client still sends.
    response.once('finish', () => socket.destroy());
    setTimeout(() => socket.destroy(), 1000).unref();
  } else {
    socket.destroy();
  }
}

/**
 * For a request that sent `Expect: 100-continue` (Node's `checkContinue` event): the interim `100 Continue` goes out
 * only when a route starts reading the body, that is after its credential and limit checks. A route that refuses
 * first never invites the body (its answer closes the connection instead).
 */
export function continueWhenRead(request: IncomingMessage, response: ServerResponse): void {
  request.once('resume', () => {
    if (!response.headersSent && !response.writableEnded) response.writeContinue();
  });
}

/** What Node's HTTP parser refused (`clientError`), as the protocol's status and reason. */
function parserRefusal(error: NodeJS.ErrnoException): { status: number; reason: string; message: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, reason: 'headers_too_large', message: 'The request head is too large.' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_HEADERS_TIMEOUT':
      return { status: 408, reason: 'request_timeout', message: 'The request did not arrive in time.' };
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
      return { status: 400, reason: 'malformed_framing', message: 'The request body framing (Content-Length / Transfer-Encoding) is malformed.' };
    default:
      return { status: 400, reason: 'malformed_request', message: 'The request is not valid HTTP/1.1.' };
  }
}

/**
 * The server's `clientError` handler: a request Node's parser refused gets the protocol's error body with
 * `Tollgate-Error` and a `reason` (instead of Node's bare status line), then the connection closes. A client that
 * already went away, or a connection with an answer in progress, is just closed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const inProgress = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || (inProgress && inProgress.headersSent)) {
    socket.destroy();
    return;
  }
  const refusal = parserRefusal(error);
  const requestId = randomUUID();
  const body = JSON.stringify({ error: { type: 'invalidRequest', reason: refusal.reason, message: refusal.message, requestId } });
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Tollgate-Error: invalidRequest\r\n' +
      `Tollgate-Request-Id: ${requestId}\r\n` +
      'Cache-Control: no-store\r\n' +
      'Connection: close\r\n\r\n' +
      body,
  );
  socket.once('finish', () => socket.destroy());
}

/** The first value of a comma-separated header, trimmed. */
function firstValue(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  const first = text?.split(',')[0]?.trim();
  return first ? first : undefined;
}


/**
 * The origin a browser must send on a state-changing dashboard request: `TOLLGATE_PUBLIC_URL`'s origin when set;
 * otherwise the scheme and host the request reached the gateway at (behind `TOLLGATE_TRUST_PROXY`, the proxy's
 * `X-Forwarded-Proto` and `X-Forwarded-Host`).
 */
export function expectedOrigin(request: IncomingMessage, options: { publicUrl: string | undefined; trustProxy: boolean }): string | undefined {
  if (options.publicUrl) {
    try {
      return new URL(options.publicUrl).origin;
    } catch {
      return undefined;
    }
  }
  const encrypted = Boolean((request.socket as TLSSocket).encrypted);
  const protocol = (options.trustProxy ? firstValue(request.headers['x-forwarded-proto'])?.toLowerCase() : undefined) ?? (encrypted ? 'https' : 'http');
  const host = (options.trustProxy ? firstValue(request.headers['x-forwarded-host']) : undefined) ?? request.headers.host;
  if (!host || (protocol !== 'http' && protocol !== 'https')) return undefined;
  try {
    return new URL(`${protocol}://${host}`).origin;
  } catch {
    return undefined;
  }
}

/** Whether `origin` (the browser's `Origin` header) is the expected one; both compared as parsed origins. */
export function originMatches(origin: string, expected: string | undefined): boolean {
  if (expected === undefined) return false;
  try {
    return new URL(origin).origin === expected;
  } catch {
    return false;
  }
}

function bodyTooLarge(limit: number): GatewayError {
  return new GatewayError('invalidRequest', `The request body is larger than ${limit} bytes.`, { status: 413, reason: 'body_too_large' });
}

/**
 * Reads a small JSON request body, for the routes that must parse one (attestation, management, MCP), once their
 * checks passed. Unlike body-parser, which reads an over-limit body to its end before refusing it, a declared
 * `Content-Length` over `limit` is refused before a byte is read, and a chunked body the moment it passes `limit`; the
 * unread rest is never drained (the refusal closes the connection). The body must be UTF-8 JSON whose top level is an
 * object or an array; an empty body is `{}` and a request without a body `undefined`. With `anyType` false, a body whose
 * `Content-Type` is not JSON is not read (`undefined`).
 */
export async function readJsonBody(request: IncomingMessage, limit: number, options: { anyType?: boolean } = {}): Promise<unknown> {
  const declared = request.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw bodyTooLarge(limit);
  if (!declaresBody(request)) return undefined;
  const type = String(request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (!options.anyType && type !== 'application/json' && !type.endsWith('+json')) return undefined;
  const encoding = String(request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== '') {
    throw new GatewayError('invalidRequest', 'The request body encoding is not supported.', { status: 415, reason: 'unsupported_encoding' });
  }
  const body = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        request.pause();
        reject(bodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onClose = () => {
      if (!request.complete) onError(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    };
    const cleanup = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', onError);
    request.once('close', onClose);
  });
  if (body.length === 0) return {};
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(body);
  } catch {
    throw new GatewayError('invalidRequest', 'The request body is not valid UTF-8.', { reason: 'malformed_utf8' });
  }
  const first = /^[\s\uFEFF]*(.)/.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw new GatewayError('invalidRequest', 'The request body is not valid JSON.', { reason: 'malformed_json' });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new GatewayError('invalidRequest', 'The request body is not valid JSON.', { reason: 'malformed_json' });
  }
}
