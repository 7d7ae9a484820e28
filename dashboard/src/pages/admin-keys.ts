/** Admin keys for the management API and the assistant server. */
import { api } from '../api.js';
import { field, h, table } from '../dom.js';
import { refresh } from '../state.js';
import { badge, button, onSubmit, once, show } from '../ui.js';

export async function adminKeysPage(): Promise<void> {
  const keys = await api<Array<{ id: string; name: string; keyHint: string; createdAt: string; revokedAt: string | null }>>('GET', '/admin-keys');
  const form = h('form', { class: 'inline', 'aria-label': 'Create an admin key' }, field('Name', h('input', { name: 'name', required: true })), h('button', { type: 'submit', class: 'primary' }, 'Create admin key'));
  show(
    'Admin keys',
    h('p', { class: 'muted' }, 'For the management API and the assistant server (Authorization: Bearer ak_…).'),
    table(
      ['Name', 'Key', 'Created', 'State'],
      keys.map((key) => [
        key.name,
        h('code', {}, key.keyHint),
        new Date(key.createdAt).toLocaleString(),
        key.revokedAt ? badge('revoked', 'bad') : button(`Revoke ${key.name}`, async () => { await api('DELETE', `/admin-keys/${key.id}`); await refresh(); }, 'danger', `Revoke the key ${key.name}?`),
      ]),
    ),
    onSubmit(form, async (values) => {
      const key = await api<{ adminKey: string; name: string }>('POST', '/admin-keys', { name: values.name });
      once(`Admin key ${key.name}`, key.adminKey);
      await adminKeysPage();
    }),
  );
}
