/**
 * Response headers that carry a provider URL the client must call next (Gemini's resumable upload answers
 * `X-Goog-Upload-URL: https://generativelanguage.googleapis.com/upload/v1beta/files?upload_id=…`). The client can only
 * reach the provider through the gateway, so such a URL is rewritten to the gateway's own proxy route for the version
 * whose upstream prefix it falls under (`{gateway}/v1/proxy/{slug}/{version}/{rest}`); a URL on another host, or under
 * no declared version, is removed rather than handed to the client. Which headers are declared by the manifest
 * (`responseUrlHeaders`); core never names a provider.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** What `injectKey` hands `forward` for a provider that declares URL headers. */
export interface ResponseUrlRewrite {
  /** Lower-case header names. */
  readonly headers: readonly string[];
  /** The upstream origin of this request, e.g. `https://generativelanguage.googleapis.com`. */
  readonly upstreamOrigin: string;
  /** Each version's upstream path prefix on that origin (no trailing slash; '' for the host root), longest first. */
  readonly versions: ReadonlyArray<{ readonly name: string; readonly prefix: string }>;
  /** `{gateway public base}/v1/proxy/{slug}`, no trailing slash. */
  readonly proxyBase: string;
}

/** The gateway URL for `value`, or null when it is not a URL under one of the request's upstream versions. */
export function gatewayUrlFor(value: string, rewrite: ResponseUrlRewrite): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.origin !== rewrite.upstreamOrigin || url.username || url.password) return null;
  for (const version of rewrite.versions) {
    if (version.prefix !== '' && url.pathname !== version.prefix && !url.pathname.startsWith(`${version.prefix}/`)) continue;
    const rest = url.pathname.slice(version.prefix.length).replace(/^\//, '');
    return `${rewrite.proxyBase}/${version.name}/${rest}${url.search}`;
  }
  return null;
}

/** Rewrites (or removes) the declared URL headers of an upstream response, in place. */
export function rewriteResponseUrls(headers: IncomingHttpHeaders, rewrite: ResponseUrlRewrite): void {
  for (const name of rewrite.headers) {
    const value = headers[name];
    if (value === undefined) continue;
    const rewritten = typeof value === 'string' ? gatewayUrlFor(value, rewrite) : null;
    if (rewritten === null) delete headers[name];
    else headers[name] = rewritten;
  }
}
