/**
 * Error types of the Tollgate wire protocol (docs/reference/protocol.md, "Errors") and the coded errors of the
 * server's own internals.
 *
 * Two families, never mixed:
 * - {@link GatewayError}: what a client may see. It has a protocol `type`, an HTTP status and a human sentence that is
 *   safe to send (it never contains a credential).
 * - {@link TollgateError}: a programming, configuration or plugin fault, with a stable `TG_ERR_*` code for operators.
 *   It is logged, and a client only ever sees a generic 500 for it.
 */

/** The error types of protocol.md. */
export type GatewayErrorType =
  | 'unauthorized'
  | 'attestationFailed'
  | 'rateLimited'
  | 'secretNotFound'
  | 'providerNotFound'
  | 'invalidRequest'
  | 'upstreamUnavailable'
  | 'upstreamTimeout'
  /** The gateway's own database or shared store cannot answer right now (`Retry-After` set). */
  | 'serviceUnavailable'
  | 'internalError'
  /** Management API only (`/v1/admin/*`): the named app, secret, device or key does not exist. */
  | 'notFound'
  /** Management API only: the change conflicts with the current state (a taken name). */
  | 'conflict'
  /** Management API only: signed in, but the request lacks its CSRF token or comes from another origin. */
  | 'forbidden';

/** Default HTTP status of each error type (protocol.md). `invalidRequest` may also be 404, 405 or 413. */
export const GATEWAY_ERROR_STATUS: Readonly<Record<GatewayErrorType, number>> = Object.freeze({
  unauthorized: 401,
  attestationFailed: 403,
  rateLimited: 429,
  secretNotFound: 424,
  providerNotFound: 404,
  invalidRequest: 400,
  upstreamUnavailable: 502,
  upstreamTimeout: 504,
  serviceUnavailable: 503,
  internalError: 500,
  notFound: 404,
  conflict: 409,
  forbidden: 403,
});

/** Options of a {@link GatewayError}. */
export interface GatewayErrorOptions {
  /** Overrides the type's default status, e.g. 413 or 405 for `invalidRequest`. */
  status?: number;
  /** Seconds, sent as `Retry-After` (only meaningful with `rateLimited`). */
  retryAfterSeconds?: number;
  /**
   * The stable snake_case reason sent as `error.reason` (protocol.md, "Errors"), e.g. `device_token_expired`. Programs
   * act on it (the SDKs do, see docs/reference/errors.md); it grows only by addition. Required: no error is reasonless.
   */
  reason: string;
  /** The underlying error, logged (redacted), never sent. */
  cause?: unknown;
  /** For validation failures: each failing field and why, sent as `error.fields`. */
  fields?: Readonly<Record<string, readonly string[]>>;
}

/**
 * An error the gateway answers with: `Tollgate-Error: <type>` and
 * `{"error":{"type","reason","message","requestId"}}` (protocol.md).
 *
 * @example
 * throw new GatewayError('secretNotFound', 'This app has no secret for provider "acme".', { reason: 'secret_not_found' });
 */
export class GatewayError extends Error {
  readonly type: GatewayErrorType;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;
  readonly reason: string;
  readonly fields: Readonly<Record<string, readonly string[]>> | undefined;

  constructor(type: GatewayErrorType, message: string, options: GatewayErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.type = type;
    this.status = options.status ?? GATEWAY_ERROR_STATUS[type];
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.reason = options.reason;
    this.fields = options.fields;
  }
}

/** Stable codes of {@link TollgateError}. One prefix for all: `TG_ERR_`. */
export type TollgateErrorCode =
  | 'TG_ERR_STAGE_ORDER'
  | 'TG_ERR_CONFIGURATION'
  | 'TG_ERR_MASTER_KEY'
  | 'TG_ERR_PLUGIN_CONTRACT_VERSION'
  | 'TG_ERR_PLUGIN_INVALID'
  | 'TG_ERR_PLUGIN_LOAD'
  | 'TG_ERR_PROVIDER_MANIFEST'
  | 'TG_ERR_PROVIDER_DUPLICATE'
  | 'TG_ERR_VALIDATION'
  | 'TG_ERR_NOT_FOUND'
  | 'TG_ERR_CONFLICT'
  | 'TG_ERR_DECRYPT'
  | 'TG_ERR_STORAGE';

/**
 * A coded fault of the server, its configuration or a plugin.
 *
 * @example
 * throw new TollgateError('TG_ERR_PLUGIN_CONTRACT_VERSION', 'plugin "x" targets contract 2, this server speaks 1');
 */
export class TollgateError extends Error {
  readonly code: TollgateErrorCode;
  /** For `TG_ERR_VALIDATION`: the failing fields and why, e.g. `{ name: ['name must be longer than 0'] }`. */
  readonly details: Readonly<Record<string, readonly string[]>> | undefined;

  constructor(code: TollgateErrorCode, message: string, details?: Record<string, string[]>) {
    super(message);
    this.name = 'TollgateError';
    this.code = code;
    this.details = details;
  }
}
