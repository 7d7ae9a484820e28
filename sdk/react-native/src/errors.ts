/**
 * Every failure the SDK reports is a {@link TollgateError} with a `kind` (protocol.md, "Errors"):
 *
 * | kind | when |
 * |---|---|
 * | `attestationFailed` | the gateway refused the device token (403), or the device could not attest |
 * | `unauthorized` | the app token is missing, wrong, rotated or revoked, or the app is disabled (401) |
 * | `rateLimited` | a gateway limit was exceeded (429); `retryAfter` in seconds when known |
 * | `secretNotFound` | the gateway has no secret for this provider on this app (424) |
 * | `networkError` | no response (offline, DNS, TLS, reset, aborted), a cut or malformed stream, or the gateway could not reach the provider (502/504) |
 * | `invalidRequest` | refused before sending (unsafe endpoint, bad header, not initialized) or by the gateway (400/404/405/413) |
 * | `providerError` | the provider answered non-2xx: `status` and `body` (as received) |
 */
import { utf8ToString } from './utf8';

export type TollgateErrorKind =
  | 'attestationFailed'
  | 'unauthorized'
  | 'rateLimited'
  | 'secretNotFound'
  | 'networkError'
  | 'invalidRequest'
  | 'providerError';

/** Every kind, in the order of the table above. */
export const TOLLGATE_ERROR_KINDS: readonly TollgateErrorKind[] = [
  'attestationFailed',
  'unauthorized',
  'rateLimited',
  'secretNotFound',
  'networkError',
  'invalidRequest',
  'providerError',
];

export interface TollgateErrorDetails {
  /** `rateLimited`: seconds to wait (from `Retry-After`), when known. */
  readonly retryAfter?: number;
  /** `providerError`: the provider's HTTP status. Gateway-made errors carry their status too. */
  readonly status?: number;
  /** `providerError`: the provider's body as received (UTF-8 text). */
  readonly body?: string;
  /**
   * A stable snake_case reason when known: the gateway's `error.reason` (`device_revoked`, `device_token_expired`,
   * `rate_limited_device`, … see docs/reference/errors.md) or the SDK's own (`aborted`, `unreachable`, `stream_cut`,
   * `malformed_stream`, `not_initialized`, `gateway_url_missing`, `redirect_refused`, `native_module_missing`, …).
   */
  readonly reason?: string;
  /** The raw `Tollgate-Error` type when the gateway made the error (`providerNotFound`, `upstreamTimeout`, …). */
  readonly errorType?: string;
  /** The gateway's request id (body `error.requestId`, else the `Tollgate-Request-Id` header). */
  readonly requestId?: string;
  /** Response headers (lower-case names) when there was a response. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Realtime sessions: the WebSocket close code the session ended with (realtime-close-codes.json). */
  readonly closeCode?: number;
  /** Realtime sessions: true when the app may open a new session at once (4503 `draining`). */
  readonly mayReconnect?: boolean;
  readonly cause?: unknown;
}

export class TollgateError extends Error {
  override readonly name = 'TollgateError';
  readonly kind: TollgateErrorKind;
  readonly retryAfter?: number;
  readonly status?: number;
  readonly body?: string;
  readonly reason?: string;
  readonly errorType?: string;
  readonly requestId?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly closeCode?: number;
  readonly mayReconnect?: boolean;

  constructor(kind: TollgateErrorKind, message: string, details: TollgateErrorDetails = {}) {
    super(message);
    // Keeps `instanceof` working when the class is compiled to ES5 (some React Native Babel set-ups).
    Object.setPrototypeOf(this, new.target.prototype);
    this.kind = kind;
    if (details.retryAfter !== undefined) this.retryAfter = details.retryAfter;
    if (details.status !== undefined) this.status = details.status;
    if (details.body !== undefined) this.body = details.body;
    if (details.reason !== undefined) this.reason = details.reason;
    if (details.errorType !== undefined) this.errorType = details.errorType;
    if (details.requestId !== undefined) this.requestId = details.requestId;
    if (details.headers !== undefined) this.headers = details.headers;
    if (details.closeCode !== undefined) this.closeCode = details.closeCode;
    if (details.mayReconnect !== undefined) this.mayReconnect = details.mayReconnect;
    if (details.cause !== undefined) Object.defineProperty(this, 'cause', { value: details.cause, configurable: true, writable: true });
  }
}

/** Refusal before anything is sent. */
export function invalidRequest(message: string, reason?: string): TollgateError {
  return new TollgateError('invalidRequest', message, reason ? { reason } : {});
}

/** No response, or a broken one. */
export function networkError(message: string, reason: string, cause?: unknown): TollgateError {
  return new TollgateError('networkError', message, { reason, ...(cause !== undefined ? { cause } : {}) });
}

/** The caller aborted (AbortSignal): always this error, whatever stage the call was in. */
export function abortedError(cause?: unknown): TollgateError {
  return networkError('The request was aborted.', 'aborted', cause);
}

/** Response headers in any of the shapes the SDK meets. */
export type HeaderInput =
  | Iterable<readonly [string, string]>
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Header pairs from any {@link HeaderInput}. */
export function headerPairs(headers: HeaderInput): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const [name, value] of headers as Iterable<readonly [string, string]>) pairs.push([name, value]);
    return pairs;
  }
  for (const [name, value] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (value === undefined) continue;
    if (typeof value === 'string') pairs.push([name, value]);
    else for (const item of value) pairs.push([name, item]);
  }
  return pairs;
}

/** First value of header `name` (any case), or undefined. */
export function firstHeader(pairs: ReadonlyArray<readonly [string, string]>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of pairs) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

const DAYS = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const IMF_FIXDATE = new RegExp(`^${DAYS}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC_850 = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME = new RegExp(`^${DAYS} ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

function utcMs(year: number, month: string, day: number, hour: number, minute: number, second: number): number | null {
  const monthIndex = MONTHS.indexOf(month);
  if (monthIndex < 0 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return null;
  const ms = Date.UTC(year, monthIndex, day, hour, minute, Math.min(second, 59));
  // Refuses 31 Feb and the like (Date.UTC would roll it over).
  if (new Date(ms).getUTCDate() !== day) return null;
  return ms;
}

/** An HTTP-date (IMF-fixdate; also RFC 850 and asctime) as unix ms, or null. */
export function parseHttpDate(value: string): number | null {
  let match = IMF_FIXDATE.exec(value);
  if (match) return utcMs(Number(match[3]), match[2]!, Number(match[1]), Number(match[4]), Number(match[5]), Number(match[6]));
  match = RFC_850.exec(value);
  if (match) {
    const twoDigits = Number(match[3]);
    // RFC 9110 §5.6.7: a two-digit year more than 50 years in the future is in the past century.
    const nowYear = new Date().getUTCFullYear();
    let year = Math.floor(nowYear / 100) * 100 + twoDigits;
    if (year > nowYear + 50) year -= 100;
    return utcMs(year, match[2]!, Number(match[1]), Number(match[4]), Number(match[5]), Number(match[6]));
  }
  match = ASCTIME.exec(value);
  if (match) return utcMs(Number(match[6]), match[1]!, Number(match[2]!.trim()), Number(match[3]), Number(match[4]), Number(match[5]));
  return null;
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) in whole seconds: delay-seconds, or an HTTP-date counted from `nowMs`, rounded up
 * and at least 0. Undefined when absent or unparseable.
 */
export function parseRetryAfter(value: string | undefined | null, nowMs: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^[0-9]+$/.test(trimmed)) return Math.min(Number(trimmed), Number.MAX_SAFE_INTEGER);
  const date = parseHttpDate(trimmed);
  if (date === null) return undefined;
  const delta = date - nowMs;
  return delta <= 0 ? 0 : Math.ceil(delta / 1000);
}

function bodyText(body: Uint8Array | string | null | undefined): string {
  if (body === null || body === undefined) return '';
  return typeof body === 'string' ? body : utf8ToString(body);
}

function errorObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    const error = (parsed as Record<string, unknown>).error;
    if (error === null || typeof error !== 'object' || Array.isArray(error)) return undefined;
    return error as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

const stringField = (object: Record<string, unknown> | undefined, name: string): string | undefined =>
  typeof object?.[name] === 'string' ? (object[name] as string) : undefined;

function kindOf(type: string, status: number): TollgateErrorKind {
  switch (type) {
    case 'unauthorized':
    case 'attestationFailed':
    case 'rateLimited':
    case 'secretNotFound':
      return type;
    case 'providerNotFound':
    case 'invalidRequest':
      return 'invalidRequest';
    case 'upstreamUnavailable':
    case 'upstreamTimeout':
      return 'networkError';
    default:
      // A type this SDK does not know (e.g. internalError): decide by status so that nothing is silent.
      if (status === 401) return 'unauthorized';
      if (status === 403) return 'attestationFailed';
      if (status === 424) return 'secretNotFound';
      if (status === 429) return 'rateLimited';
      if (status >= 500 && status <= 599) return 'networkError';
      return 'invalidRequest';
  }
}

const SNAKE_CASE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;

const DEFAULT_MESSAGES: Record<TollgateErrorKind, string> = {
  attestationFailed: 'The gateway refused this device (attestation failed).',
  unauthorized: 'The gateway refused the app token.',
  rateLimited: 'Rate limited by the gateway.',
  secretNotFound: 'The gateway has no secret for this provider.',
  networkError: 'The gateway could not reach the provider.',
  invalidRequest: 'The gateway refused the request as invalid.',
  providerError: 'The provider answered with an error.',
};

/**
 * Turns an HTTP response into a {@link TollgateError} (sdk/conformance/README.md, "error-mapping.json"):
 * `status` null means no response at all (networkError); a 2xx is never an error (null); a non-2xx with a
 * `Tollgate-Error` header is the gateway's error and the header decides the kind; a non-2xx without it is the
 * provider's own answer (providerError with the body as received, also for 401, 429 and 3xx).
 */
export function mapError(
  status: number | null,
  headers: HeaderInput,
  body: Uint8Array | string | null | undefined,
  nowMs: number,
): TollgateError | null {
  if (status === null) return networkError('No response from the gateway.', 'unreachable');
  if (status >= 200 && status <= 299) return null;
  const pairs = headerPairs(headers);
  const lowerHeaders: Record<string, string> = {};
  for (const [name, value] of pairs) {
    const key = name.toLowerCase();
    if (!(key in lowerHeaders)) lowerHeaders[key] = value;
  }
  const text = bodyText(body);
  const headerRequestId = firstHeader(pairs, 'Tollgate-Request-Id')?.trim();
  const type = firstHeader(pairs, 'Tollgate-Error')?.trim();
  if (type === undefined) {
    return new TollgateError('providerError', `The provider answered HTTP ${status}.`, {
      status,
      body: text,
      headers: lowerHeaders,
      ...(headerRequestId ? { requestId: headerRequestId } : {}),
    });
  }
  const error = errorObject(text);
  const kind = kindOf(type, status);
  const requestId = stringField(error, 'requestId') ?? headerRequestId;
  // protocol.md, "Errors": a stable snake_case reason; anything else (a number, free text) is read as none.
  const rawReason = stringField(error, 'reason');
  const reason = rawReason !== undefined && SNAKE_CASE.test(rawReason) ? rawReason : undefined;
  const retryAfter = kind === 'rateLimited' ? parseRetryAfter(firstHeader(pairs, 'Retry-After'), nowMs) : undefined;
  const message =
    stringField(error, 'message') ??
    (kind === 'rateLimited' && retryAfter !== undefined
      ? `Rate limited by the gateway; retry after ${retryAfter} s.`
      : `${DEFAULT_MESSAGES[kind]} (${type}, HTTP ${status})`);
  return new TollgateError(kind, message, {
    status,
    errorType: type,
    headers: lowerHeaders,
    ...(requestId ? { requestId } : {}),
    ...(reason ? { reason } : {}),
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  });
}
