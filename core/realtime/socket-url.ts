/**
 * Where a realtime session's upstream socket goes and what it carries: the URL (the realtime route's declared socket
 * base, or the version's HTTP base as `wss`, with the operator's override), the headers `injectKey` built minus the
 * handshake's own, and the subprotocols without Tollgate's and without any client credential.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RealtimeRoute, ResolvedSecret, UpstreamRequest } from '../contract';
import { joinUpstreamUrl } from '../pipeline/proxy-path';
import { versionBase } from '../pipeline/inject-key';
import type { RegisteredProvider } from '../registry/provider-registry';

/** `https:` → `wss:`, `http:` → `ws:` (the WebSocket URL of an HTTP base, RFC 6455 §3). */
function toSocketScheme(url: string): string {
  return url.replace(/^http(s?):/, 'ws$1:');
}

/** The upstream socket URL for a session on `route`, from the upstream request `injectKey` built. */
export function upstreamSocketUrl(provider: RegisteredProvider, route: RealtimeRoute, secret: ResolvedSecret, version: string, providerPath: string, upstream: UpstreamRequest): string {
  const questionMark = upstream.path.indexOf('?');
  const query = questionMark === -1 ? '' : upstream.path.slice(questionMark + 1);
  let base: string;
  let prefix: string;
  if (route.url !== undefined) {
    const declared = new URL(route.url);
    prefix = declared.pathname === '/' ? '' : declared.pathname;
    base = provider.realtimeOverride ?? declared.origin;
  } else {
    const http = versionBase(provider, secret, provider.manifest.versions[version]!);
    prefix = http.prefix;
    base = provider.realtimeOverride ?? toSocketScheme(http.base);
  }
  const { origin, path } = joinUpstreamUrl(base, prefix, providerPath, query);
  return `${origin}${path}`;
}

/** Handshake headers `ws` writes itself, and the browser's `Origin` (a provider may answer it with its CORS rules). */
const HANDSHAKE_HEADERS = new Set(['host', 'origin', 'content-length', 'content-type', 'transfer-encoding', 'expect']);

/** The upstream request's headers that go on the upstream handshake (credential included; never log them). */
export function upstreamSocketHeaders(upstream: UpstreamRequest): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upstream.headers)) {
    if (HANDSHAKE_HEADERS.has(name) || name.startsWith('sec-websocket-')) continue;
    headers[name] = value;
  }
  return headers;
}

/** What the client's `Sec-WebSocket-Protocol` offered, sorted out. */
export interface OfferedSubprotocols {
  /** `tollgate-app.<token>` and `tollgate-device.<token>`, when sent. */
  readonly appToken: string | undefined;
  readonly deviceToken: string | undefined;
  /** True when the client offered `tollgate.v1` (it then expects one subprotocol back). */
  readonly tollgate: boolean;
  /** The provider's own subprotocols, in the client's order, without Tollgate's and without credentials. */
  readonly provider: string[];
}

/** Splits the offered subprotocols (RFC 6455 §4.1: a comma-separated list of tokens). */
export function sortSubprotocols(headers: IncomingHttpHeaders, credentialChannels: RealtimeRoute['credentialSubprotocols']): OfferedSubprotocols {
  const header = headers['sec-websocket-protocol'];
  const entries = typeof header === 'string' ? header.split(',').map((entry) => entry.trim()).filter(Boolean) : [];
  let appToken: string | undefined;
  let deviceToken: string | undefined;
  let tollgate = false;
  const provider: string[] = [];
  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index]!;
    const lower = entry.toLowerCase();
    if (lower.startsWith('tollgate')) {
      if (lower.startsWith('tollgate-app.')) appToken ??= entry.slice('tollgate-app.'.length);
      else if (lower.startsWith('tollgate-device.')) deviceToken ??= entry.slice('tollgate-device.'.length);
      else if (lower === 'tollgate.v1') tollgate = true;
      continue;
    }
    if (credentialChannels?.prefixes?.some((prefix) => lower.startsWith(prefix.toLowerCase()))) continue;
    if (credentialChannels?.announcers?.some((announcer) => lower === announcer.toLowerCase())) {
      index += 1;
      continue;
    }
    provider.push(entry);
  }
  return { appToken, deviceToken, tollgate, provider };
}
