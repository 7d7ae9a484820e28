/** The dashboard's administrators: add, remove, change your own password. */
import { api, type User } from '../api.js';
import { field, h, table } from '../dom.js';
import { currentSession, refresh } from '../state.js';
import { badge, button, onSubmit, say, show } from '../ui.js';

export async function administratorsPage(): Promise<void> {
  const users = await api<User[]>('GET', '/users');
  const add = h(
    'form',
    { 'aria-label': 'Add an administrator' },
    field('User name', h('input', { name: 'username', autocomplete: 'off', required: true })),
    field('Password', h('input', { name: 'password', type: 'password', autocomplete: 'new-password', required: true, minlength: 12 }), 'At least 12 characters. Share it with the person safely; they can change it.'),
    h('button', { type: 'submit', class: 'primary' }, 'Add administrator'),
  );
  const change = h(
    'form',
    { 'aria-label': 'Change your password' },
    field('Current password', h('input', { name: 'currentPassword', type: 'password', autocomplete: 'current-password', required: true })),
    field('New password', h('input', { name: 'newPassword', type: 'password', autocomplete: 'new-password', required: true, minlength: 12 }), 'At least 12 characters. Your other sessions end.'),
    h('button', { type: 'submit' }, 'Change password'),
  );
  show(
    'Administrators',
    table(
      ['User', 'Added', 'State', ''],
      users.map((user) => [
        user.id === currentSession()?.user.id ? h('span', {}, user.username, ' ', badge('you', 'muted')) : user.username,
        new Date(user.createdAt).toLocaleString(),
        user.lockedUntil ? badge(`locked until ${new Date(user.lockedUntil).toLocaleTimeString()}`, 'bad') : badge('active', 'ok'),
        user.id === currentSession()?.user.id ? '' : button(`Remove ${user.username}`, async () => { await api('DELETE', `/users/${encodeURIComponent(user.id)}`); say(`${user.username} is removed.`); await refresh(); }, 'danger', `Remove ${user.username}? Their sessions end at once.`),
      ]),
    ),
    h('h2', {}, 'Add an administrator'),
    onSubmit(add, async (values) => {
      await api('POST', '/users', { username: values.username, password: values.password });
      // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
      await refresh();
      say(`${String(values.username)} can now sign in.`);
    }),
    h('h2', {}, 'Change your password'),
    onSubmit(change, async (values) => {
      await api('POST', '/session/password', { currentPassword: values.currentPassword, newPassword: values.newPassword });
      change.reset();
      say('Your password is changed; your other sessions have ended.');
    }),
  );
}

