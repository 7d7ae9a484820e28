/**
 * Writing gateway-made errors (protocol.md, "Errors"): `Tollgate-Error: <type>` and
 * `{"error":{"type","message","requestId"}}`. Anything that is not a `GatewayError` becomes a generic `internalError`
 * whose details go to the log only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { declaresBody } from '../pipeline/request-body';
import { GatewayError, TollgateError } from '../contract';
import { databaseUnavailable, isDatabaseUnavailable } from '../storage/database-errors';

/** `app "x" not found` → `App "x" not found.` (coded errors are phrases; clients read sentences). */
const sentence = (phrase: string) => `${phrase.charAt(0).toUpperCase()}${phrase.slice(1)}.`;

/** Converts any thrown value to the error the client is told about. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof TollgateError && error.code === 'TG_ERR_VALIDATION') {
    return new GatewayError('invalidRequest', error.message, { reason: 'validation', ...(error.details ? { fields: error.details } : {}) });
  }
  if (error instanceof TollgateError && error.code === 'TG_ERR_NOT_FOUND') return new GatewayError('notFound', sentence(error.message), { reason: 'not_found' });
  if (error instanceof TollgateError && error.code === 'TG_ERR_CONFLICT') return new GatewayError('conflict', sentence(error.message), { reason: 'conflict' });
  const bodyParser = error as { type?: string; status?: number } | undefined;
  if (isClientAbort(error)) return new GatewayError('invalidRequest', 'The client closed the connection before the request was complete.', { reason: 'client_aborted' });
  if (bodyParser?.type === 'request.size.invalid') return new GatewayError('invalidRequest', 'The request body is shorter or longer than its Content-Length.', { reason: 'malformed_framing' });
  if (bodyParser?.type === 'entity.parse.failed') return new GatewayError('invalidRequest', 'The request body is not valid JSON.', { reason: 'malformed_json' });
  if (bodyParser?.type === 'entity.verify.failed') return new GatewayError('invalidRequest', 'The request body is not valid UTF-8.', { reason: 'malformed_utf8' });
  if (bodyParser?.type === 'entity.too.large') return new GatewayError('invalidRequest', 'The request body is too large.', { status: 413, reason: 'body_too_large' });
  if (bodyParser?.type === 'encoding.unsupported' || bodyParser?.type === 'charset.unsupported') {
    return new GatewayError('invalidRequest', 'The request body encoding is not supported.', { status: 415, reason: 'unsupported_encoding' });
  }
  // The gateway's own database did not answer (unreachable, a bounded wait ran out): 503 with Retry-After, not a 500.
  if (isDatabaseUnavailable(error)) return databaseUnavailable(error);
  return new GatewayError('internalError', 'The gateway failed to handle this request.', { reason: 'internal', cause: error });
}

/**
 * True for a client that went away mid-request: Node's `aborted` error on the request stream, or body-parser's
 * `request.aborted`. Not a fault of the gateway: logged at `info`, without a stack.
 */
export function isClientAbort(error: unknown): boolean {
  const candidate = error as { type?: string; code?: string; message?: string } | undefined;
  return candidate?.type === 'request.aborted' || (error instanceof Error && candidate?.code === 'ECONNRESET' && candidate.message === 'aborted');
}

/** True when the client declared a request body that has not been read to its end. */
export function hasUnreadBody(request: IncomingMessage): boolean {
  return !request.complete && declaresBody(request);
}

/** The reason of the gateway error each response carried, for its access-log line. */
const sentReasons = new WeakMap<ServerResponse, string>();

/** The `reason` of the gateway error sent on (or cutting) `response`, if any. */
export function errorReasonOf(response: ServerResponse): string | undefined {
  return sentReasons.get(response);
}

/** Sends `error` unless a response has already started (then the connection is cut so the client notices). */
export function sendGatewayError(response: ServerResponse, requestId: string, error: GatewayError, request?: IncomingMessage): void {
  sentReasons.set(response, error.reason);
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = JSON.stringify({ error: { type: error.type, reason: error.reason, message: error.message, requestId, ...(error.fields ? { fields: error.fields } : {}) } });
  response.statusCode = error.status;
  // Proxied requests carry their id into the response head only when it is written (one write, no setHeader before).
  if (!response.hasHeader('Tollgate-Request-Id')) response.setHeader('Tollgate-Request-Id', requestId);
  response.setHeader('Tollgate-Error', error.type);
  response.setHeader('Content-Type', 'application/json; charset=utf-8');
  response.setHeader('Content-Length', Buffer.byteLength(body));
  response.setHeader('Cache-Control', 'no-store');
  if (error.retryAfterSeconds !== undefined) response.setHeader('Retry-After', String(error.retryAfterSeconds));
  // An unread request body (e.g. a refused upload) is not drained: close the connection instead of reading it all.
  if (request && hasUnreadBody(request)) response.setHeader('Connection', 'close');
  response.end(body);
}
