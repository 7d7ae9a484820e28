/**
 * Reading a whole request body: for the stages that must see it before forwarding (assertions, payload signatures), and
 * for `forward`, which sends a small body as one buffer.
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError, type ProxyContext } from '../contract';

/** True when the request announces a body (`Content-Length` > 0 or any `Transfer-Encoding`). */
export function declaresBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('invalidRequest', `The request body is larger than ${limit} bytes.`, { status: 413, reason: 'body_too_large' });
}

function signedTooLarge(limit: number): GatewayError {
  return new GatewayError('invalidRequest', `This provider signs each request over its whole body, which the gateway holds in memory to sign: the body may be at most ${limit} bytes (TOLLGATE_SIGNED_BODY_MAX_BYTES).`, {
    status: 413,
    reason: 'signed_body_too_large',
  });
}

function budgetExhausted(): GatewayError {
  return new GatewayError('serviceUnavailable', 'The gateway holds as many signed request bodies in memory as it allows right now. Retry shortly.', {
    retryAfterSeconds: 1,
    reason: 'signed_body_budget_exhausted',
  });
}

/**
 * The bodies of providers that sign over the whole body (`authorizeNeedsBody`: AWS SigV4) are held in memory until the
 * request ends: each is capped at `capBytes` (`TOLLGATE_SIGNED_BODY_MAX_BYTES`), and together at `budgetBytes`
 * (`TOLLGATE_SIGNED_BODY_BUDGET_BYTES`) per process. A body is reserved against the budget as it is read (its declared
 * length up front, else chunk by chunk) and released when its response closes, however the request ended.
 */
export class SignedBodyBudget {
  /** Bytes reserved by bodies being read or held, right now (`tollgate_signed_body_buffered_bytes`). */
  used = 0;
  /** Bodies refused because the budget was spent. */
  refused = 0;

  constructor(
    readonly capBytes: number,
    readonly budgetBytes: number,
  ) {}

  /** Takes `bytes` from the budget; false (nothing taken) when they do not fit. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.budgetBytes) {
      this.refused += 1;
      return false;
    }
    this.used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

/** The signed-body budget of each request of a body-signing provider (set by the proxy route, weakly held). */
const SIGNED_BUDGETS = new WeakMap<ProxyContext, SignedBodyBudget>();

/** Puts a request of a body-signing provider under `budget` (the proxy route, for `authorizeNeedsBody` manifests). */
export function bufferUnderBudget(context: ProxyContext, budget: SignedBodyBudget): void {
  SIGNED_BUDGETS.set(context, budget);
}

/** What a request holds of the budget, given back once when its response closes. */
class Hold {
  bytes = 0;
  constructor(
    private readonly budget: SignedBodyBudget,
    context: ProxyContext,
  ) {
    context.response.once('close', () => {
      budget.give(this.bytes);
      this.bytes = 0;
    });
  }

  take(bytes: number): boolean {
    if (!this.budget.take(bytes)) return false;
    this.bytes += bytes;
    return true;
  }
}

/** Chunks as one buffer: the chunk itself when there is one (no copy). */
export function joinChunks(chunks: readonly Buffer[]): Buffer {
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * Reads the request body of `context` once and calls `done` once: with the body (kept in `context.requestBody`, its
 * length in `outcome.bytesIn`, so that `forward` sends the same bytes), or with the error (a 413 `GatewayError` past
 * `limit` bytes, before reading when `Content-Length` says so; the request's own error when the client went away).
 * The callback form is `forward`'s, on the hot path: no promise, no `once` wrappers and no microtask hops per request
 * (docs/benchmarks.md). The error listener stays after the end, so that a late error finds one.
 */
export function readRequestBodyThen(context: ProxyContext, limit: number, done: (error: Error | undefined, body?: Buffer) => void): void {
  if (context.requestBody) return done(undefined, context.requestBody);
  const request = context.request;
  const declared = request.headers['content-length'];
  // A body-signing provider's body is held whole until the request ends: its own cap and the process budget apply.
  const budget = context.provider.authorizeNeedsBody ? SIGNED_BUDGETS.get(context) : undefined;
  let refuseOver = tooLarge;
  let hold: Hold | undefined;
  if (budget) {
    if (budget.capBytes < limit) {
      limit = budget.capBytes;
      refuseOver = signedTooLarge;
    }
    if (declared !== undefined && Number(declared) > limit) return done(refuseOver(limit));
    hold = new Hold(budget, context);
    // The declared length is reserved before a byte is read; a body without one is reserved as it arrives.
    if (declared !== undefined && !hold.take(Number(declared))) return done(budgetExhausted());
  }
  if (declared !== undefined && Number(declared) > limit) return done(refuseOver(limit));
  const reserveChunks = hold !== undefined && declared === undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const onData = (chunk: Buffer): void => {
    size += chunk.length;
    const refusal = size > limit ? refuseOver(limit) : reserveChunks && !hold!.take(chunk.length) ? budgetExhausted() : undefined;
    if (refusal) {
      // Nothing more is read.
      request.off('data', onData);
      request.pause();
      settled = true;
      done(refusal);
      return;
    }
    chunks.push(chunk);
  };
  request.on('data', onData);
  request.on('end', () => {
    if (settled) return;
    settled = true;
    const body = joinChunks(chunks);
    context.requestBody = body;
    context.outcome.bytesIn = body.length;
    done(undefined, body);
  });
  request.on('error', (error: Error) => {
    if (settled) return;
    settled = true;
    done(error);
  });
}

/** {@link readRequestBodyThen} as a promise, for the stages that await the body (assertions, payload signatures). */
export function readRequestBody(context: ProxyContext, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => readRequestBodyThen(context, limit, (error, body) => (error ? reject(error) : resolve(body!))));
}

/**
 * For a proxied answer's head about to be written (forward.ts): `Connection: close` when the request body has not all
 * arrived, so that the connection ends with the answer instead of draining the rest (routes/unread-bodies.ts).
 */
export function closeIfBodyUnread(request: IncomingMessage, headers: Record<string, unknown>): void {
  if (!request.complete) headers['connection'] = 'close';
}
