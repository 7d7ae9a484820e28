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

/** Chunks as one buffer: the chunk itself when there is one (no copy). */
export function joinChunks(chunks: readonly Buffer[]): Buffer {
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * Reads the request body of `context` once and calls `done` once: with the body (kept in `context.requestBody`, its
 * length in `outcome.bytesIn`, so that `forward` sends the same bytes), or with the error (a 413 `GatewayError` past
 * `limit` bytes, before reading when `Content-Length` says so; the request's own error when the client went away).
 * The callback form is `forward`'s, on the hot path: no promise, no `once` wrappers and no microtask hops per request
 * (docs/benchmarks.md, tenth session). The error listener stays after the end, so that a late error finds one.
 */
export function readRequestBodyThen(context: ProxyContext, limit: number, done: (error: Error | undefined, body?: Buffer) => void): void {
  if (context.requestBody) return done(undefined, context.requestBody);
  const request = context.request;
  const declared = request.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return done(tooLarge(limit));
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const onData = (chunk: Buffer): void => {
    size += chunk.length;
    if (size > limit) {
      // Nothing more is read.
      request.off('data', onData);
      request.pause();
      settled = true;
      done(tooLarge(limit));
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
