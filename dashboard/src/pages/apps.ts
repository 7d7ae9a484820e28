/** The apps list: each app with its status and traffic at a glance, and the form that creates one. */
import { api, type App } from '../api.js';
import { checkbox, field, h, table } from '../dom.js';
import { badge, onSubmit, once, show } from '../ui.js';

export async function appsPage(): Promise<void> {
  const apps = await api<App[]>('GET', '/apps');
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Create an app' },
    field('App name', h('input', { name: 'name', required: true, maxlength: 200 })),
    checkbox('Allow development attestation (simulators, emulators)', 'allowDevelopmentAttestation', true),
    h('button', { type: 'submit', class: 'primary' }, 'Create app'),
  );
  show(
    'Apps',
    table(
      ['Name', 'Status', 'App token', 'Created'],
      apps.map((app) => [h('a', { href: `#/apps/${app.id}` }, app.name), badge(app.status, app.status === 'active' ? 'ok' : 'bad'), h('code', {}, app.tokenHint), new Date(app.createdAt).toLocaleDateString()]),
      apps.length ? undefined : 'No apps yet: create the first one below.',
      'app-list',
    ),
    h('h2', {}, 'Create an app'),
    onSubmit(form, async (values) => {
      const app = await api<App & { appToken: string }>('POST', '/apps', { name: values.name, allowDevelopmentAttestation: values.allowDevelopmentAttestation });
      once(`App token of ${app.name}`, app.appToken);
      location.hash = `#/apps/${app.id}`;
    }),
  );
}
