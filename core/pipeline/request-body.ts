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

function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        request.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    });
    request.once('end', () => resolve(joinChunks(chunks)));
    request.once('error', reject);
  });
}

/**
 * The request body of `context`, read once (refused past `limit` bytes, before reading when `Content-Length` says so)
 * and kept in `context.requestBody` so that `forward` sends the same bytes.
 */
export function readRequestBody(context: ProxyContext, limit: number): Promise<Buffer> {
  if (context.requestBody) return Promise.resolve(context.requestBody);
  const declared = context.request.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(tooLarge(limit));
  return readBody(context.request, limit).then((body) => {
    context.requestBody = body;
    context.outcome.bytesIn = body.length;
    return body;
  });
}
