/**
 * Which providers and routes an app's devices may reach: allowed providers and routes, account routes grouped by
 * provider (the providers this app has a key for first and open, every other group collapsed with its count), and
 * extra routes. Save stays in view while the list scrolls.
 */
import { api, type App, type Provider, type Secret } from '../api.js';
import { checkbox, field, h } from '../dom.js';
import { loadProviders, refresh } from '../state.js';
import { onSubmit, say } from '../ui.js';

function providerGroup(provider: Provider, opened: boolean, keyed: boolean): HTMLElement {
  const count = provider.accountRoutes.length;
  return h(
    'div',
    { class: 'route-group', 'data-provider': provider.slug, 'data-testid': `routes-${provider.slug}` },
    checkbox(`Open ${provider.name} account routes`, `account:${provider.slug}`, opened),
    h(
      'details',
      { open: keyed },
      h('summary', {}, `${count} account ${count === 1 ? 'route' : 'routes'}${keyed ? ' · this app has a key' : ''}`),
      h('ul', { class: 'muted route-list' }, ...provider.accountRoutes.map((route) => h('li', {}, h('code', {}, `${route.methods.join(', ')} ${route.path}`), `: ${route.why}`))),
    ),
  );
}

export async function routesSection(app: App): Promise<HTMLElement> {
  const [all, secrets] = await Promise.all([loadProviders(), api<Secret[]>('GET', `/apps/${app.id}/secrets`)]);
  const keyed = new Set(secrets.map((secret) => secret.provider));
  // Providers with a key first (in the catalog's order), then the rest.
  const catalog = all.filter((provider) => provider.accountRoutes.length > 0).sort((a, b) => Number(keyed.has(b.slug)) - Number(keyed.has(a.slug)));
  const opened = new Set((app.settings.openAccountRoutes as string[] | undefined) ?? []);
  const extra = ((app.settings.extraRoutes as Array<{ provider: string; methods: string[]; path: string }> | undefined) ?? []).map((route) => `${route.provider}:${route.methods.join(',')}:${route.path}`).join('\n');
  const keyedGroups = catalog.filter((provider) => keyed.has(provider.slug));
  const otherGroups = catalog.filter((provider) => !keyed.has(provider.slug));
  const form = h(
    'form',
    { 'aria-label': 'Providers and routes', class: 'wide' },
    field('Allowed providers (comma-separated slugs; empty allows all)', h('input', { name: 'allowedProviders', value: ((app.settings.allowedProviders as string[] | undefined) ?? []).join(', ') }), 'Devices of this app reach only these providers.'),
    field('Allowed routes (one slug or slug/path-prefix a line; empty allows all)', h('textarea', { name: 'allowedRoutes', rows: 3 }, ((app.settings.allowedRoutes as string[] | undefined) ?? []).join('\n')), 'Narrows the routes further, e.g. openai/chat/completions.'),
    h('h3', {}, 'Account routes'),
    h('p', { class: 'muted' }, 'Account routes list, read or delete data shared by every user of the provider key (files, stored completions, fine-tunes, voice libraries…). They are closed by default; opening them lets every device of this app reach that data.'),
    ...keyedGroups.map((provider) => providerGroup(provider, opened.has(provider.slug), true)),
    otherGroups.length
      ? h('details', { class: 'other-providers', open: keyedGroups.length === 0 }, h('summary', {}, `Other providers (${otherGroups.length})`), ...otherGroups.map((provider) => providerGroup(provider, opened.has(provider.slug), false)))
      : null,
    field(
      'Extra routes (one SLUG:METHOD[,METHOD]:PATTERN a line, e.g. openai:GET:evals/**)',
      h('textarea', { name: 'extraRoutes', rows: 3 }, extra),
      'Routes a provider offers that Tollgate does not list yet, for this app only. Path safety rules and the provider’s refused paths still apply.',
    ),
    h('div', { class: 'sticky-save' }, h('button', { type: 'submit', class: 'primary' }, 'Save routes')),
  );
  return onSubmit(form, async (values) => {
    const open = catalog.filter((provider) => values[`account:${provider.slug}`] === true).map((provider) => provider.slug);
    const routes = String(values.extraRoutes).split('\n').map((line) => line.trim()).filter(Boolean).map((line) => {
      const first = line.indexOf(':');
      const second = first < 0 ? -1 : line.indexOf(':', first + 1);
      if (first <= 0 || second <= first + 1) throw new Error(`"${line}" is not SLUG:METHOD[,METHOD]:PATTERN.`);
      return { provider: line.slice(0, first), methods: line.slice(first + 1, second).split(',').map((method) => method.trim().toUpperCase()).filter(Boolean), path: line.slice(second + 1) };
    });
    const allowedProviders = String(values.allowedProviders).split(',').map((slug) => slug.trim()).filter(Boolean);
    const allowedRoutes = String(values.allowedRoutes).split('\n').map((entry) => entry.trim()).filter(Boolean);
    // Empty means "no narrowing" (null clears the setting); an empty list would allow nothing.
    await api('PATCH', `/apps/${app.id}`, {
      openAccountRoutes: open.length ? open : null,
      extraRoutes: routes.length ? routes : null,
      allowedProviders: allowedProviders.length ? allowedProviders : null,
      allowedRoutes: allowedRoutes.length ? allowedRoutes : null,
    });
    // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
    await refresh();
    say('Routes saved.');
  });
}
