/** Admin keys for the management API and the assistant server, each with its scopes and expiry. */
import { api } from '../api.js';
import { field, h, table } from '../dom.js';
import { refresh } from '../state.js';
import { badge, button, onSubmit, once, show } from '../ui.js';

interface AdminKeyView {
  id: string;
  name: string;
  keyHint: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
}

const SCOPES: Array<[string, string]> = [
  ['read', 'read: reads only'],
  ['apps', 'apps: apps, settings, devices, users'],
  ['secrets', 'secrets: provider keys'],
  ['apps,secrets', 'apps and secrets'],
  ['admin', 'admin: everything, including keys and administrators'],
];
const EXPIRY: Array<[string, string]> = [
  ['90', 'in 90 days'],
  ['30', 'in 30 days'],
  ['365', 'in a year'],
  ['', 'never'],
];

export async function adminKeysPage(): Promise<void> {
  const keys = await api<AdminKeyView[]>('GET', '/admin-keys');
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Create an admin key' },
    field('Name', h('input', { name: 'name', required: true })),
    field('Scope', h('select', { name: 'scopes' }, ...SCOPES.map(([value, label]) => h('option', { value }, label)))),
    field('Expires', h('select', { name: 'expires' }, ...EXPIRY.map(([value, label]) => h('option', { value }, label)))),
    h('button', { type: 'submit', class: 'primary' }, 'Create admin key'),
  );
  const now = Date.now();
  show(
    'Admin keys',
    h('p', { class: 'muted' }, 'For the management API and the assistant server (Authorization: Bearer ak_…). Give each key the narrowest scope and an expiry.'),
    table(
      ['Name', 'Key', 'Scopes', 'Created', 'Expires', 'State'],
      keys.map((key) => [
        key.name,
        h('code', {}, key.keyHint),
        key.scopes.join(', '),
        new Date(key.createdAt).toLocaleString(),
        key.expiresAt ? new Date(key.expiresAt).toLocaleString() : 'never',
        key.revokedAt
          ? badge('revoked', 'bad')
          : key.expiresAt && Date.parse(key.expiresAt) <= now
            ? badge('expired', 'bad')
            : button(`Revoke ${key.name}`, async () => { await api('DELETE', `/admin-keys/${key.id}`); await refresh(); }, 'danger', `Revoke the key ${key.name}?`),
      ]),
    ),
    onSubmit(form, async (values) => {
      const days = Number(values.expires || 0);
      const body = {
        name: values.name,
        scopes: String(values.scopes || 'read').split(','),
        ...(days > 0 ? { expiresAt: new Date(Date.now() + days * 86_400_000).toISOString() } : {}),
      };
      const key = await api<{ adminKey: string; name: string }>('POST', '/admin-keys', body);
      once(`Admin key ${key.name}`, key.adminKey);
      await adminKeysPage();
    }),
  );
}
