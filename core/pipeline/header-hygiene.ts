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
 *   (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`): a device's address is not the provider's business.
 *
 * Response side: hop-by-hop headers and `Set-Cookie` from the provider never reach the app.
 */
import type { IncomingHttpHeaders } from 'node:http';

/**
 * Query parameters that carry a credential at many providers (Google's `key`, `api_key`, OAuth's `access_token`…):
 * stripped from every client request, whatever the provider (docs/security.md, "Client credentials").
 */
export const DEFAULT_CREDENTIAL_QUERY_PARAMETERS: readonly string[] = ['key', 'api_key', 'apikey', 'api-key', 'access_token', 'x-goog-api-key'];

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
]);

function isStripped(name: string, credentialHeaders: ReadonlySet<string>, credentialPrefixes: readonly string[], connectionTokens: ReadonlySet<string>): boolean {
  return (
    ALWAYS_STRIPPED.has(name) ||
    name.startsWith('tollgate-') ||
    name.startsWith('proxy-') ||
    name.startsWith('x-forwarded-') ||
    credentialHeaders.has(name) ||
    credentialPrefixes.some((prefix) => name.startsWith(prefix)) ||
    connectionTokens.has(name)
  );
}

function connectionTokensOf(connection: string | string[] | undefined): ReadonlySet<string> {
  if (connection === undefined) return EMPTY;
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

/** Removes hop-by-hop headers and cookies from a provider response's headers, in place. */
export function scrubResponseHeaders(headers: IncomingHttpHeaders): void {
  const connectionTokens = connectionTokensOf(headers.connection);
  for (const name of Object.keys(headers)) {
    if (RESPONSE_STRIPPED.has(name) || connectionTokens.has(name) || name.startsWith('proxy-')) delete headers[name];
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
