/**
 * "Test this key": one cheap, harmless request to the provider with an app's stored key, as the manifest's `keyCheck`
 * declares it (a GET that needs the key and changes nothing, such as listing models). The request goes where the proxy
 * would send it (the manifest's host, the operator's base-URL override, or the secret's validated tenant URL): the
 * caller never picks the host or the path. Only the outcome, the upstream status and the latency come back: never the
 * key, never the provider's body (read and dropped).
 */
import http from 'node:http';
import https from 'node:https';
import { GatewayError, type ResolvedSecret } from '../contract';
import { joinUpstreamUrl } from '../pipeline/proxy-path';
import { versionBase } from '../pipeline/inject-key';
import type { RegisteredProvider } from '../registry/provider-registry';

/**
 * - `ok`: the provider accepted the key (2xx);
 * - `rejected`: the provider refused it (401 or 403), or the key could not be turned into credentials (a computed
 *   credential such as a malformed service account);
 * - `unexpected`: the provider answered another status (429, 5xx…): the key may work, the check could not tell;
 * - `unreachable`: no answer (connection refused, DNS, TLS, timeout).
 */
export type KeyCheckOutcome = 'ok' | 'rejected' | 'unexpected' | 'unreachable';

export interface KeyCheckResult {
  readonly appId: string;
  readonly provider: string;
  readonly outcome: KeyCheckOutcome;
  /** The provider's HTTP status; null when it did not answer. */
  readonly status: number | null;
  /** From sending the request to the provider's response headers (or to the failure). */
  readonly latencyMs: number;
  /** What was requested, e.g. `GET v1/models` (never the query, which may carry the key). */
  readonly request: string;
  readonly checkedAt: string;
}

/** The default time a key check may take before it counts as unreachable. */
export const KEY_CHECK_TIMEOUT_MS = 10_000;

/** The provider has no key check in its manifest: the typed refusal (docs/reference/errors.md). */
export function keyCheckUnsupported(slug: string): GatewayError {
  return new GatewayError('invalidRequest', `Provider "${slug}" declares no key check (a harmless request that needs the key), so its key cannot be tested.`, { reason: 'key_check_unsupported' });
}

/** Sends the manifest's key check with `secret`; resolves with the outcome (never throws for an upstream failure). */
export async function checkProviderKey(provider: RegisteredProvider, secret: ResolvedSecret, timeoutMs: number = KEY_CHECK_TIMEOUT_MS): Promise<Pick<KeyCheckResult, 'outcome' | 'status' | 'latencyMs' | 'request'>> {
  const manifest = provider.manifest;
  const check = manifest.keyCheck;
  if (!check) throw keyCheckUnsupported(manifest.slug);
  const described = `${check.method} ${check.version}/${check.path}`;
  const auth = manifest.auth;
  const query = auth.kind === 'query' ? `${encodeURIComponent(auth.parameter)}=${encodeURIComponent(secret.value.reveal())}` : '';
  const { base, prefix } = versionBase(provider, secret, manifest.versions[check.version]!);
  const { origin, path } = joinUpstreamUrl(base, prefix, check.path, query);
  const headers: Record<string, string | string[]> = { accept: 'application/json' };
  for (const [name, value] of Object.entries(manifest.defaultHeaders ?? {})) headers[name.toLowerCase()] = value;
  if (auth.kind === 'header') headers[auth.header.toLowerCase()] = auth.scheme ? `${auth.scheme} ${secret.value.reveal()}` : secret.value.reveal();
  const started = performance.now();
  const elapsed = () => Math.max(0, Math.round(performance.now() - started));
  const draft = { method: check.method, origin, path, headers };
  if (auth.kind === 'computed') {
    try {
      await manifest.authorize!(draft, secret);
    } catch {
      // The stored credential could not be turned into a signature or a token: the key is the problem.
      return { outcome: 'rejected', status: null, latencyMs: elapsed(), request: described };
    }
  }
  const status = await send(draft.origin, draft.path, draft.method, draft.headers, timeoutMs);
  const latencyMs = elapsed();
  if (status === null) return { outcome: 'unreachable', status: null, latencyMs, request: described };
  const outcome: KeyCheckOutcome = status >= 200 && status < 300 ? 'ok' : status === 401 || status === 403 ? 'rejected' : 'unexpected';
  return { outcome, status, latencyMs, request: described };
}

/** One request without a connection pool or redirects; resolves with the status at the response headers, or null. */
function send(origin: string, path: string, method: string, headers: Record<string, string | string[]>, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const url = new URL(`${origin}${path}`);
    const transport = url.protocol === 'https:' ? https : http;
    let settled = false;
    const finish = (status: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(status);
    };
    const request = transport.request(url, { method, headers, agent: false }, (response) => {
      // The body is the provider's: read and dropped, never returned or logged.
      response.resume();
      response.on('error', () => undefined);
      finish(response.statusCode ?? null);
      request.destroy();
    });
    const timer = setTimeout(() => {
      finish(null);
      request.destroy();
    }, timeoutMs);
    timer.unref();
    request.on('error', () => finish(null));
    request.end();
  });
}
