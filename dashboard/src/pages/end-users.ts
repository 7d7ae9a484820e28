/** The signed-in users of an app (by the sign-in provider's `sub`): search, profile, last seen, block and unblock. */
import { api, type App } from '../api.js';
import { field, formValues, h, table } from '../dom.js';
import { badge, button, emptyState, onSubmit, say, when } from '../ui.js';

interface EndUser {
  id: string;
  issuer: string;
  profile: string | null;
  firstSeenAt: string;
  lastSeenAt: string;
  blocked: boolean;
  blockedAt: string | null;
}

export async function endUsersTab(app: App): Promise<(Node | null)[]> {
  if ((app.settings.userTokenMode ?? 'off') === 'off' || !app.settings.userAuth) {
    return [emptyState('This app does not identify its users: set its sign-in provider and user token mode under Policy (or with the management API, userAuth and userTokenMode).', h('a', { href: `#/apps/${app.id}/policy` }, 'Open the policy'))];
  }
  const output = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'inline', role: 'search', 'aria-label': 'Find users' }, field('User id starts with', h('input', { name: 'search', type: 'search', placeholder: 'sub' })), h('button', { type: 'submit' }, 'Find'));
  const render = async () => {
    const search = String(formValues(form).search ?? '').trim();
    const users = await api<EndUser[]>('GET', `/apps/${app.id}/users?limit=100${search ? `&search=${encodeURIComponent(search)}` : ''}`);
    const toggle = (user: EndUser) =>
      user.blocked
        ? button(`Unblock ${user.id}`, async () => { await api('POST', `/apps/${app.id}/users/${encodeURIComponent(user.id)}/unblock`); say(`${user.id} is unblocked.`); await render(); })
        : button(`Block ${user.id}`, async () => { await api('POST', `/apps/${app.id}/users/${encodeURIComponent(user.id)}/block`); say(`${user.id} is blocked on every device.`); await render(); }, 'danger', `Block ${user.id}? Every device of this user is refused, and open realtime sessions close.`);
    output.replaceChildren(
      users.length
        ? table(
            ['User', 'Profile', 'First seen', 'Last seen', 'State', ''],
            users.map((user) => [h('code', { title: user.issuer }, user.id), user.profile ?? 'default', when(user.firstSeenAt), when(user.lastSeenAt), user.blocked ? badge(`blocked ${when(user.blockedAt)}`, 'bad') : badge('active', 'ok'), toggle(user)]),
            undefined,
            'end-user-list',
          )
        : emptyState(search ? 'No user matches.' : 'No signed-in user has made a request yet.'),
    );
  };
  onSubmit(form, render);
  await render();
  return [h('p', { class: 'muted' }, 'Users are identified by the ID token their app sends (Tollgate-User-Token), verified against the sign-in provider’s keys. Limits per user hold across all of a user’s devices.'), form, output];
}
