/**
 * Header hygiene, in one place for every provider (protocol.md, "Headers the SDK sends"; style.md lesson 11).
 *
 * Removed before forwarding:
 * - every `Tollgate-*` header (the gateway's own credentials and metadata);
 * - the client's credentials: `Authorization`, `Cookie`, `Proxy-*`, every header any registered provider uses for its
 *   key, and every header name or prefix a manifest declares in `clientCredentials` (AWS `x-amz-*`: never signed when a
 *   client sent it), so an app can never bring its own key, nor learn how the gateway's is sent;
 * - hop-by-hop headers: RFC 9110 §7.6.1 names `Connection`, `Proxy-Connection`, `Keep-Alive`, `TE`, `Transfer-Encoding`
 *   and `Upgrade`, plus every field named in `Connection`; `Trailer` goes with them (RFC 9110 §6.6.2);
 * - `Host` (set from the upstream), `Expect` (the gateway answers 100-continue itself), and client-address headers
 *   (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`, `X-Client-IP`, `True-Client-IP`, `CF-Connecting-IP`, `Via`, …): a
 *   device's address is not the provider's business;
 * - override headers that some servers and proxies in front of a provider honour to rewrite the request after the
 *   gateway checked it: `X-Original-URL`, `X-Rewrite-URL`, `X-Original-*`, `X-Override-URL`, `X-Host`,
 *   `X-HTTP-Method-Override`, `X-HTTP-Method`, `X-Method-Override`, and Envoy's `X-Envoy-*` (`X-Envoy-Original-Path`
 *   and the retry, timeout and routing headers an Envoy in front of a provider may honour) (a route or method the
 *   provider's policy refuses must not come back through a header). The `_method` query parameter goes too
 *   ({@link OVERRIDE_QUERY_PARAMETERS}).
 *
 * Response side: hop-by-hop headers and `Set-Cookie` from the provider never reach the app.
 */
import type { IncomingHttpHeaders } from 'node:http';

/**
 * Query parameters that carry a credential at many providers (Google's `key`, `api_key`, OAuth's `access_token`…):
 * stripped from every client request, whatever the provider (docs/security.md, "Client credentials").
 */
export const DEFAULT_CREDENTIAL_QUERY_PARAMETERS: readonly string[] = ['key', 'api_key', 'apikey', 'api-key', 'access_token', 'x-goog-api-key'];

/**
 * Query parameters some frameworks in front of a provider read as the request's method (Rails, Laravel, Express's
 * method-override): stripped from every client request with the credential parameters.
 */
export const OVERRIDE_QUERY_PARAMETERS: readonly string[] = ['_method'];

const ALWAYS_STRIPPED = new Set([
  'authorization',
  'cookie',
  'host',
  'expect',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'forwarded',
  'x-real-ip',
  'x-api-key',
  'api-key',
  'via',
  'x-client-ip',
  'x-cluster-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-originating-ip',
  'x-remote-ip',
  'x-remote-addr',
  'client-ip',
  'x-rewrite-url',
  'x-override-url',
  'x-host',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);

function isStripped(name: string, credentialHeaders: ReadonlySet<string>, credentialPrefixes: readonly string[], connectionTokens: ReadonlySet<string>): boolean {
  return (
    ALWAYS_STRIPPED.has(name) ||
    name.startsWith('tollgate-') ||
    name.startsWith('proxy-') ||
    name.startsWith('x-forwarded-') ||
    name.startsWith('x-original-') ||
    name.startsWith('x-envoy-') ||
    credentialHeaders.has(name) ||
    startsWithAny(name, credentialPrefixes) ||
    connectionTokens.has(name)
  );
}

function startsWithAny(name: string, prefixes: readonly string[]): boolean {
  for (const prefix of prefixes) if (name.startsWith(prefix)) return true;
  return false;
}

function connectionTokensOf(connection: string | string[] | undefined): ReadonlySet<string> {
  if (connection === undefined) return EMPTY;
  // The usual values name no other header ('keep-alive' and 'close' are stripped anyway).
  if (typeof connection === 'string') {
    const lower = connection.length <= 10 ? connection.toLowerCase() : '';
    if (lower === 'keep-alive' || lower === 'close') return EMPTY;
  }
  const list = Array.isArray(connection) ? connection.join(',') : connection;
  return new Set(list.split(',').map((token) => token.trim().toLowerCase()).filter(Boolean));
}

const EMPTY: ReadonlySet<string> = new Set();

/**
 * The client headers that may be forwarded (lower-case names; Node joins duplicates in `headers`, and `rawHeaders` is
 * never forwarded).
 */
export function forwardableRequestHeaders(
  headers: IncomingHttpHeaders,
  credentialHeaders: ReadonlySet<string>,
  credentialPrefixes: readonly string[] = [],
): Record<string, string | string[]> {
  const connectionTokens = connectionTokensOf(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || isStripped(name, credentialHeaders, credentialPrefixes, connectionTokens)) continue;
    out[name] = value;
  }
  return out;
}

const RESPONSE_STRIPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'set-cookie', 'set-cookie2', 'alt-svc']);

/** Headers only the gateway speaks on a proxied response: an upstream's own are dropped so the gateway's win. */
const GATEWAY_OWNED = new Set(['ratelimit', 'ratelimit-policy']);

/**
 * A response header (lower-case name) that never reaches the app whatever its value: hop-by-hop, cookies, `Alt-Svc`,
 * `Proxy-*`, the upstream's `Tollgate-*` and the gateway-owned rate-limit headers. Fields named in `Connection` go too
 * ({@link scrubResponseHeaders}).
 */
export function isDroppedResponseHeader(name: string): boolean {
  return RESPONSE_STRIPPED.has(name) || name.startsWith('proxy-') || name.startsWith('tollgate-') || GATEWAY_OWNED.has(name);
}

/** The longest `Retry-After` (seconds) an upstream may pass to the app; a longer or malformed one is dropped. */
export const MAX_UPSTREAM_RETRY_AFTER_SECONDS = 3600;

/** What the value of this response header redacts to, when it held the injected credential. */
export const REDACTED = 'REDACTED';

export interface ResponseScrubOptions {
  /**
   * The injected credential in every form it could be echoed in (see `credentialForms`). Never logged.
   */
  readonly credentials?: readonly string[] & {
    /** The forms lower-cased, and the shortest's length: a header name at least that long is checked against them. */
    readonly lower?: readonly string[];
    readonly shortest?: number;
    /** The base64 forms, and the shortest's length: a header value at least that long is checked against them. */
    readonly encoded?: readonly string[];
    readonly shortestEncoded?: number;
  };
  /** The gateway already set its own `Retry-After` on this response: the upstream's is dropped. */
  readonly gatewayRetryAfter?: boolean;
  /** The upstream's `Connection` value, when the headers were read without it (the fields it names are dropped). */
  readonly connection?: string | string[] | undefined;
}

/** Replaces every occurrence of a credential form in `text` with {@link REDACTED}; returns the text unchanged when none. */
export function redactCredentials(text: string, credentials: readonly string[]): string {
  let out = text;
  for (const form of credentials) if (out.includes(form)) out = out.split(form).join(REDACTED);
  return out;
}

/** Whether a header value still carries a credential once percent-decoded (e.g. double-encoded in a `Location`). */
function carriesEncodedCredential(value: string, credentials: readonly string[]): boolean {
  // Nothing percent-encoded: decoding changes nothing a key could hide in ('+' only becomes a space, which no key holds).
  if (!value.includes('%')) return false;
  let current = value;
  for (let round = 0; round < 3; round += 1) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(current.replace(/\+/g, ' '));
    } catch {
      return false;
    }
    if (decoded === current) return false;
    if (credentials.some((form) => decoded.includes(form))) return true;
    current = decoded;
  }
  return false;
}

/** Whether a header value long enough to hold one holds a base64 form of the credential. */
function carriesBase64Credential(value: string, credentials: NonNullable<ResponseScrubOptions['credentials']>): boolean {
  if (value.length < (credentials.shortestEncoded ?? Infinity)) return false;
  for (const form of credentials.encoded!) if (value.includes(form)) return true;
  return false;
}

/**
 * Scrubs a provider response's headers, in place, before they reach the app (protocol.md, "Errors": a provider
 * response never carries a `Tollgate-*` header of its own, nor the injected credential):
 * - hop-by-hop headers, cookies and `Alt-Svc` go;
 * - every upstream `Tollgate-*` header goes, and so do `RateLimit` and `RateLimit-Policy`: the gateway's own win;
 * - `Retry-After` passes only when the gateway set none and it is delta-seconds up to
 *   {@link MAX_UPSTREAM_RETRY_AFTER_SECONDS} (an upstream cannot park the app for a day);
 * - any header holding the credential (raw, percent-encoded, JSON-escaped; e.g. `Location: …?key=…`,
 *   `WWW-Authenticate` echoing it) has it replaced by {@link REDACTED}, or is removed when it holds it in a form that
 *   cannot be replaced in place (percent-encoded more than once, base64) or in its name.
 */
export function scrubResponseHeaders(headers: IncomingHttpHeaders, options: ResponseScrubOptions = {}): void {
  const connectionTokens = connectionTokensOf(options.connection ?? headers.connection);
  const credentials = options.credentials ?? [];
  for (const name of Object.keys(headers)) {
    if (isDroppedResponseHeader(name) || connectionTokens.has(name)) {
      delete headers[name];
      continue;
    }
    if (name === 'retry-after') {
      const value = String(headers[name] ?? '').trim();
      if (options.gatewayRetryAfter || !/^\d{1,9}$/.test(value) || Number(value) > MAX_UPSTREAM_RETRY_AFTER_SECONDS) delete headers[name];
      continue;
    }
    if (credentials.length === 0) continue;
    // A header named after the key (`sk-…: 1`) goes whole: a name cannot be redacted in place.
    if (name.length >= (credentials.shortest ?? Infinity) && credentials.lower!.some((form) => name.includes(form))) {
      delete headers[name];
      continue;
    }
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === 'string') {
      const redacted = redactCredentials(value, credentials);
      if (carriesEncodedCredential(redacted, credentials) || carriesBase64Credential(redacted, credentials)) delete headers[name];
      else if (redacted !== value) (headers as Record<string, string>)[name] = redacted;
      continue;
    }
    const values = value;
    const redacted = values.map((item) => redactCredentials(item, credentials));
    if (redacted.some((item) => carriesEncodedCredential(item, credentials) || carriesBase64Credential(item, credentials))) {
      delete headers[name];
      continue;
    }
    if (redacted.some((item, index) => item !== values[index])) (headers as Record<string, string | string[]>)[name] = Array.isArray(value) ? redacted : redacted[0]!;
  }
}

/**
 * Removes from a raw query string every pair whose decoded name (compared case-insensitively) is one of `names` or
 * starts with one of `prefixes`: the client's own credential parameters. A pair whose name does not decode is dropped.
 */
export function withoutCredentialParameters(query: string, names: ReadonlySet<string>, prefixes: readonly string[]): string {
  if (!query) return query;
  return query
    .split('&')
    .filter((pair) => {
      const rawName = pair.split('=', 1)[0]!;
      let name: string;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' ')).trim().toLowerCase();
      } catch {
        return false;
      }
      return !names.has(name) && !prefixes.some((prefix) => name.startsWith(prefix));
    })
    .join('&');
}
