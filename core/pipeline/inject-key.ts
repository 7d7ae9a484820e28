import { inject, injectable } from 'tsyringe';
import { CONFIGURATION, GatewayError, type PipelineStage, type ProxyContext, type ResolvedSecret, type UpstreamRequest, type UpstreamRequestDraft } from '../contract';
import type { Configuration } from '../configuration/configuration';
import { ProviderRegistry, type RegisteredProvider } from '../registry/provider-registry';
import { forwardableRequestHeaders, withoutCredentialParameters } from './header-hygiene';
import { readRequestBody } from './request-body';
import { joinUpstreamUrl } from './proxy-path';
import { decideRoute, findCredentialRoute, type RouteClass } from './route-class';
import { versionRoots } from './upstream-views';
import { clampBodyLifetime, clampQueryLifetime } from './credential-lifetime';
import { isRealtimeUpgrade } from './realtime-upgrades';
import { inspectableAcceptEncoding } from './response-scrub';
import { ProcessWeakMap } from './process-caches';

/**
 * The base URL for a request with this secret: the operator's override, a tenant URL from the secret, or the manifest's
 * choice (also used by the key check, so that it reaches the same host the proxy would).
 */
export function upstreamBase(provider: RegisteredProvider, secret: ResolvedSecret): string {
  if (provider.overridden) return provider.baseUrl;
  const manifest = provider.manifest;
  if (manifest.tenant) {
    if (secret.baseUrl) return secret.baseUrl;
    if (manifest.tenant.baseUrl === 'required') {
      throw new GatewayError('secretNotFound', `The secret for "${manifest.slug}" has no base URL; set one with --base-url.`, { reason: 'tenant_base_url_missing' });
    }
  }
  if (manifest.selectBaseUrl) {
    const chosen = manifest.selectBaseUrl(secret).replace(/\/$/, '');
    const declared = [manifest.baseUrl, ...(manifest.alternateBaseUrls ?? [])].map((url) => url.replace(/\/$/, ''));
    if (!declared.includes(chosen)) throw new GatewayError('internalError', 'The provider chose an undeclared host.', { reason: 'undeclared_host' });
    return chosen;
  }
  return provider.baseUrl;
}

/** A version mapped to an absolute URL names a second declared host; an operator override replaces its origin too. */
export function versionBase(provider: RegisteredProvider, secret: ResolvedSecret, target: string): { base: string; prefix: string } {
  if (!/^https?:/.test(target)) return { base: upstreamBase(provider, secret), prefix: target };
  const url = new URL(target);
  const prefix = url.pathname === '/' ? '' : url.pathname;
  return { base: provider.overridden ? provider.baseUrl : url.origin, prefix };
}

/**
 * Route classes (route-class.ts `decideRoute`, a pure function of the provider's declarations, the app's settings, the
 * method and the path), remembered per settings object for the routes it admitted: an app's requests hit a handful of
 * routes, and a settings change arrives as a new object. Refusals are never remembered (they are recomputed, and cheap
 * enough for what they are).
 */
const admittedRoutes = new ProcessWeakMap<object, Map<string, RouteClass>>();
const routeTables = new ProcessWeakMap<RegisteredProvider, Parameters<typeof decideRoute>[0]>();
const MAX_ADMITTED_PER_APP = 1000;

function admitRoute(provider: RegisteredProvider, settings: Parameters<typeof decideRoute>[1], method: string, version: string, providerPath: string, upgrade: boolean): RouteClass {
  let admitted = admittedRoutes.get(settings);
  // The version is part of the decision: the same path below another version is another upstream path.
  const key = `${provider.manifest.slug}\u0000${upgrade ? 'UPGRADE' : method}\u0000${version}\u0000${providerPath}`;
  const known = admitted?.get(key);
  if (known) return known;
  let table = routeTables.get(provider);
  if (!table) {
    table = {
      slug: provider.manifest.slug,
      policy: provider.manifest.routes,
      methods: provider.methods,
      accountRoutes: provider.accountRoutes,
      roots: versionRoots(provider.manifest.versions),
      credentialRoutes: provider.credentialRoutes,
      realtimeRoutes: provider.realtimeRoutes,
    };
    routeTables.set(provider, table);
  }
  const routeClass = decideRoute(table, settings, method, providerPath, version, upgrade);
  if (!admitted) {
    admitted = new Map();
    admittedRoutes.set(settings, admitted);
  }
  if (admitted.size < MAX_ADMITTED_PER_APP) admitted.set(key, routeClass);
  return routeClass;
}

/** The draft with a whole body: sent with its length, not chunked. */
function withBody(draft: UpstreamRequestDraft, body: Buffer): UpstreamRequestDraft {
  const headers: Record<string, string | string[]> = { ...draft.headers, 'content-length': String(body.length) };
  delete headers['transfer-encoding'];
  return { ...draft, headers, body };
}

/**
 * Stage 5, `injectKey`: builds the upstream request from the provider's declarations only: base URL, version prefix,
 * the checked client path, the client's forwardable headers, the provider's default headers and its credential, as the
 * manifest's auth style says. Provides `upstream`.
 */
@injectable()
export class InjectKeyStage implements PipelineStage {
  readonly name = 'injectKey' as const;

  constructor(
    @inject(ProviderRegistry) private readonly registry: ProviderRegistry,
    @inject(CONFIGURATION) private readonly configuration: Configuration,
  ) {}

  run(context: ProxyContext): void | Promise<void> {
    const provider = this.registry.find(context.provider.slug)!;
    const manifest = provider.manifest;
    const { providerPath } = context.route;
    let version = context.route.version;
    // A declared root path (`upload/`) below any version is the root version's: sent and judged from the host root.
    if (provider.rootVersion !== undefined && version !== provider.rootVersion && manifest.rootPaths!.some((prefix) => providerPath.startsWith(prefix))) version = provider.rootVersion;
    const method = context.request.method ?? 'GET';
    // Route classes: deny, the app's extra routes, closed account routes, then the allow-list (route-class.ts).
    const settings = context.get('app').settings;
    const routeClass = admitRoute(provider, settings, method, version, providerPath, isRealtimeUpgrade(context.request));
    const secret = context.get('secret');
    const auth = manifest.auth;
    // The client's own credential parameters never go upstream (the auth parameter, `key`, `api_key`, declared ones).
    let query = withoutCredentialParameters(context.route.query, provider.credentialQueryParameters, provider.credentialQueryParameterPrefixes);
    // A minted credential lives at most the app's credentialTtlSeconds where the provider takes a lifetime.
    const lifetime = routeClass === 'credential' ? findCredentialRoute(provider.credentialRoutes, method, providerPath)?.route.lifetime : undefined;
    if (lifetime?.kind === 'query') query = clampQueryLifetime(query, lifetime.parameter, settings.credentialTtlSeconds);
    if (auth.kind === 'query') {
      const pair = `${encodeURIComponent(auth.parameter)}=${encodeURIComponent(secret.value.reveal())}`;
      query = query ? `${query}&${pair}` : pair;
    }
    const { base, prefix } = versionBase(provider, secret, manifest.versions[version]!);
    const { origin, path } = joinUpstreamUrl(base, prefix, providerPath, query);
    const headers = forwardableRequestHeaders(context.request.headers, this.registry.credentialHeaders, this.registry.credentialHeaderPrefixes);
    if (manifest.defaultHeaders) {
      for (const [name, value] of Object.entries(manifest.defaultHeaders)) {
        const lower = name.toLowerCase();
        if (headers[lower] === undefined) headers[lower] = value;
      }
    }
    // The usage tap reads answers as sent: ask for them uncompressed (RFC 9110 §12.5.3), so that a client's default
    // `Accept-Encoding: gzip` cannot hide the usage. One that is compressed anyway is charged its reservation.
    if (manifest.usage) headers['accept-encoding'] = 'identity';
    // Otherwise only codings the gateway can decode when it inspects an error answer for the key (response-scrub.ts).
    else if (headers['accept-encoding'] !== undefined) headers['accept-encoding'] = inspectableAcceptEncoding(headers['accept-encoding']);
    if (auth.kind === 'header') {
      headers[auth.header.toLowerCase()] = auth.scheme ? `${auth.scheme} ${secret.value.reveal()}` : secret.value.reveal();
    }
    // GET and HEAD carry no body upstream (RFC 9110 §9.3.1: a body there has no defined meaning, and a server may read
    // it as the next request): neither its bytes nor its length go.
    const bodyless = method === 'GET' || method === 'HEAD';
    if (bodyless && headers['content-length'] !== undefined) delete headers['content-length'];
    if (lifetime !== undefined && lifetime.kind !== 'query') {
      return clampBodyLifetime(context, lifetime, settings.credentialTtlSeconds, this.configuration.maxBodyBytes).then(() =>
        auth.kind === 'computed' ? this.authorize(context, { method, origin, path, headers }) : context.set('upstream', withBody({ method, origin, path, headers }, context.requestBody!)),
      );
    }
    if (auth.kind === 'computed') return this.authorize(context, { method, origin, path, headers }, bodyless);
    // A body already read (a per-request assertion covered it) is sent as is.
    const request = context.requestBody && !bodyless ? withBody({ method, origin, path, headers }, context.requestBody) : { method, origin, path, headers };
    context.set('upstream', manifest.responseUrlHeaders?.length ? { ...request, responseUrls: this.responseUrls(provider, context, origin) } : request);
  }

  /** How `forward` maps provider URLs in the declared response headers back to this gateway (response-urls.ts). */
  private responseUrls(provider: RegisteredProvider, context: ProxyContext, origin: string): NonNullable<UpstreamRequest['responseUrls']> {
    const manifest = provider.manifest;
    const versions: Array<{ name: string; prefix: string }> = [];
    for (const [name, target] of Object.entries(manifest.versions)) {
      const { base, prefix } = versionBase(provider, context.get('secret'), target);
      const url = new URL(base);
      if (url.origin !== origin) continue;
      versions.push({ name, prefix: `${url.pathname.replace(/\/$/, '')}${prefix}` });
    }
    versions.sort((a, b) => b.prefix.length - a.prefix.length);
    const host = context.request.headers.host;
    const publicBase = (this.configuration.publicUrl ?? `http://${typeof host === 'string' && /^[A-Za-z0-9.:[\]-]{1,300}$/.test(host) ? host : 'localhost'}`).replace(/\/$/, '');
    return { headers: manifest.responseUrlHeaders!.map((name) => name.toLowerCase()), upstreamOrigin: origin, versions, proxyBase: `${publicBase}/v1/proxy/${manifest.slug}` };
  }

  /** Computed credentials: the manifest's hook signs the draft (with the whole body when it asks for it). */
  private async authorize(context: ProxyContext, base: UpstreamRequestDraft, bodyless = false): Promise<void> {
    const manifest = context.provider;
    let draft: UpstreamRequestDraft = base;
    if (!bodyless && (manifest.authorizeNeedsBody || context.requestBody)) {
      draft = withBody(base, await readRequestBody(context, this.configuration.maxBodyBytes));
    }
    await manifest.authorize!(draft, context.get('secret'));
    context.set('upstream', { method: draft.method, origin: draft.origin, path: draft.path, headers: draft.headers, ...(draft.body ? { body: draft.body } : {}) });
  }
}
