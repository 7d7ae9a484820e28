import { inject, injectable } from 'tsyringe';
import { matchesPrefix } from './proxy-path';
import { GATEWAY_DIRECTORY, GatewayError, type GatewayDirectory, type PipelineStage, type ProxyContext, type ResolvedSecret } from '../contract';

/** Whether `slug/providerPath` is covered by one of the app's `allowedRoutes` entries. */
function routeListed(routes: readonly string[], slug: string, providerPath: string): boolean {
  let path = providerPath;
  try {
    path = decodeURIComponent(providerPath);
  } catch {
    return false;
  }
  return routes.some((entry) => {
    const slash = entry.indexOf('/');
    if (slash < 0) return entry === slug;
    return entry.slice(0, slash) === slug && matchesPrefix(path, entry.slice(slash + 1));
  });
}

/**
 * Stage 4, `resolveSecret`: the app's secret for the requested provider, decrypted (cached in memory after the first
 * use). An app may call only providers it has a secret for, narrowed further by its `allowedProviders` setting.
 * Provides `secret`.
 */
@injectable()
export class ResolveSecretStage implements PipelineStage {
  readonly name = 'resolveSecret' as const;

  constructor(@inject(GATEWAY_DIRECTORY) private readonly directory: GatewayDirectory) {}

  run(context: ProxyContext): void | Promise<void> {
    const app = context.get('app');
    const slug = context.provider.slug;
    const allowed = app.settings.allowedProviders;
    if (allowed && !allowed.includes(slug)) {
      throw new GatewayError('invalidRequest', `This app is not allowed to call provider "${slug}".`, { reason: 'provider_not_allowed' });
    }
    const routes = app.settings.allowedRoutes;
    if (routes && !routeListed(routes, slug, context.route.providerPath)) {
      throw new GatewayError('invalidRequest', `This app is not allowed to call ${slug}/${context.route.providerPath}.`, { reason: 'route_not_allowed_for_app' });
    }
    const found = this.directory.findSecret(app.id, slug);
    if (found instanceof Promise) return found.then((secret) => this.admit(context, secret));
    this.admit(context, found);
  }

  private admit(context: ProxyContext, secret: ResolvedSecret | null): void {
    if (!secret) {
      throw new GatewayError('secretNotFound', `This app has no secret for provider "${context.provider.slug}".`, { reason: 'secret_not_found' });
    }
    context.set('secret', secret);
  }
}
