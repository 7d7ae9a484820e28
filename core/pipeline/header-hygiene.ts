/**
 * Header hygiene, in one place for every provider (protocol.md, "Headers the SDK sends"; style.md lesson 11).
 *
 * Removed before forwarding:
 * - every `Tollgate-*` header (the gateway's own credentials and metadata);
 * - the client's credentials: `Authorization`, `Cookie`, `Proxy-*`, and every header any registered provider uses for its
 *   key (so an app can never bring its own key, nor learn how the gateway's is sent);
 * - hop-by-hop headers: RFC 9110 §7.6.1 names `Connection`, `Proxy-Connection`, `Keep-Alive`, `TE`, `Transfer-Encoding`
 *   and `Upgrade`, plus every field named in `Connection`; `Trailer` goes with them (RFC 9110 §6.6.2);
 * - `Host` (set from the upstream), `Expect` (the gateway answers 100-continue itself), and client-address headers
 *   (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`, `X-Client-IP`, `True-Client-IP`, `CF-Connecting-IP`, `Via`, …): a
 *   device's address is not the provider's business;
 * - override headers that some servers and proxies in front of a provider honour to rewrite the request after the
 *   gateway checked it: `X-Original-URL`, `X-Rewrite-URL`, `X-Original-*`, `X-Override-URL`, `X-Host`,
 *   `X-HTTP-Method-Override`, `X-HTTP-Method`, `X-Method-Override` (a route or method the provider's policy refuses
 *   must not come back through a header).
 *
 * Response side: hop-by-hop headers and `Set-Cookie` from the provider never reach the app.
 */
import type { IncomingHttpHeaders } from 'node:http';

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

function isStripped(name: string, credentialHeaders: ReadonlySet<string>, connectionTokens: ReadonlySet<string>): boolean {
  return (
    ALWAYS_STRIPPED.has(name) ||
    name.startsWith('tollgate-') ||
    name.startsWith('proxy-') ||
    name.startsWith('x-forwarded-') ||
    name.startsWith('x-original-') ||
    credentialHeaders.has(name) ||
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
export function forwardableRequestHeaders(headers: IncomingHttpHeaders, credentialHeaders: ReadonlySet<string>): Record<string, string | string[]> {
  const connectionTokens = connectionTokensOf(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || isStripped(name, credentialHeaders, connectionTokens)) continue;
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
