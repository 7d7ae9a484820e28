import { inject, injectable } from 'tsyringe';
import { GatewayError, type PipelineStage, type ProxyContext, type UpstreamRequestDraft } from '../contract';
import { ProviderRegistry, type RegisteredProvider } from '../registry/provider-registry';
import { forwardableRequestHeaders } from './header-hygiene';
import { joinUpstreamUrl, routeAllowed } from './proxy-path';

/** Removes every `name=` pair from a raw query string (compared after decoding the name). */
function withoutParameter(query: string, name: string): string {
  if (!query) return query;
  return query
    .split('&')
    .filter((pair) => {
      const rawName = pair.split('=', 1)[0]!;
      try {
        return decodeURIComponent(rawName.replace(/\+/g, ' ')) !== name;
      } catch {
        return false;
      }
    })
    .join('&');
}

/** The base URL for this request: the operator's override, a tenant URL from the secret, or the manifest's choice. */
function upstreamBase(provider: RegisteredProvider, context: ProxyContext): string {
  if (provider.overridden) return provider.baseUrl;
  const secret = context.get('secret');
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

/**
 * Stage 5, `injectKey`: builds the upstream request from the provider's declarations only: base URL, version prefix,
 * the checked client path, the client's forwardable headers, the provider's default headers and its credential, as the
 * manifest's auth style says. Provides `upstream`.
 */
@injectable()
export class InjectKeyStage implements PipelineStage {
  readonly name = 'injectKey' as const;

  constructor(@inject(ProviderRegistry) private readonly registry: ProviderRegistry) {}

  run(context: ProxyContext): void | Promise<void> {
    const provider = this.registry.find(context.provider.slug)!;
    const manifest = provider.manifest;
    const { version, providerPath } = context.route;
    const method = context.request.method ?? 'GET';
    if (!routeAllowed(manifest.routes, provider.methods, method, providerPath)) {
      throw new GatewayError('invalidRequest', `${method} ${providerPath || '/'} is not an allowed route of provider "${manifest.slug}".`, {
        status: provider.methods.has(method) ? 400 : 405,
        reason: 'route_not_allowed',
      });
    }
    const secret = context.get('secret');
    const auth = manifest.auth;
    let query = context.route.query;
    if (auth.kind === 'query') {
      query = withoutParameter(query, auth.parameter);
      const pair = `${encodeURIComponent(auth.parameter)}=${encodeURIComponent(secret.value.reveal())}`;
      query = query ? `${query}&${pair}` : pair;
    }
    const { origin, path } = joinUpstreamUrl(upstreamBase(provider, context), manifest.versions[version]!, providerPath, query);
    const headers = forwardableRequestHeaders(context.request.headers, this.registry.credentialHeaders);
    if (manifest.defaultHeaders) {
      for (const [name, value] of Object.entries(manifest.defaultHeaders)) {
        const lower = name.toLowerCase();
        if (headers[lower] === undefined) headers[lower] = value;
      }
    }
    if (auth.kind === 'header') {
      headers[auth.header.toLowerCase()] = auth.scheme ? `${auth.scheme} ${secret.value.reveal()}` : secret.value.reveal();
    }
    const draft: UpstreamRequestDraft = { method, origin, path, headers };
    if (auth.kind === 'computed') {
      const signed = manifest.authorize!(draft, secret);
      if (signed instanceof Promise) return signed.then(() => context.set('upstream', { ...draft }));
    }
    context.set('upstream', { method, origin, path: draft.path, headers });
  }
}
