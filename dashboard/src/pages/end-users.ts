/**
 * The signed-in users of an app (by the sign-in provider's `sub`): search by id prefix, paging, profile, first and last
 * seen, block and unblock (`/v1/admin/apps/{appId}/users…`, answered as the `EndUser` schema of the OpenAPI document);
 * each user links to the user's own page (end-user.ts).
 */
import { api, type App, type EndUser } from '../api.js';
import { field, formValues, h, table } from '../dom.js';
import { badge, button, emptyState, onSubmit, say, when } from '../ui.js';
import { endUserPath } from './end-user.js';

const PAGE = 50;

/** Whether the app identifies its users at all (a sign-in provider and a user token mode other than off). */
const identifiesUsers = (app: App): boolean => (app.settings.userTokenMode ?? 'off') !== 'off' && Boolean(app.settings.userAuth);

export async function endUsersTab(app: App): Promise<(Node | null)[]> {
  const output = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'inline', role: 'search', 'aria-label': 'Find users' }, field('User id starts with', h('input', { name: 'search', type: 'search', placeholder: 'user id (sub)' })), h('button', { type: 'submit' }, 'Find'));
  let offset = 0;
  const path = (user: EndUser, action: string) => `/apps/${app.id}/users/${encodeURIComponent(user.id)}/${action}`;
  const render = async (): Promise<number> => {
    const search = String(formValues(form).search ?? '').trim();
    const query = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
    if (search) query.set('search', search);
    const users = await api<EndUser[]>('GET', `/apps/${app.id}/users?${query}`);
    const toggle = (user: EndUser) =>
      user.blocked
        ? button(`Unblock ${user.id}`, async () => { await api('POST', path(user, 'unblock')); say(`${user.id} is unblocked.`); await render(); })
        : button(`Block ${user.id}`, async () => { await api('POST', path(user, 'block')); say(`${user.id} is blocked on every device.`); await render(); }, 'danger', `Block ${user.id}? Every request of this user is refused on every device (user_blocked), and open realtime sessions close.`);
    output.replaceChildren(
      users.length
        ? table(
            ['User', 'Profile', 'First seen', 'Last seen', 'State', ''],
            users.map((user) => [h('a', { href: endUserPath(app.id, user.id), title: 'Limits, usage, devices and latest requests of this user' }, h('code', { title: user.issuer }, user.id)), user.profile ?? 'default', when(user.firstSeenAt), when(user.lastSeenAt), user.blocked ? badge(`blocked ${when(user.blockedAt)}`, 'bad') : badge('active', 'ok'), toggle(user)]),
            undefined,
            'end-user-list',
          )
        : emptyState(search || offset ? 'No user matches.' : 'No signed-in user has made a request yet.'),
      h(
        'p',
        { class: 'pager' },
        button('Previous users', async () => { offset = Math.max(0, offset - PAGE); await render(); }, offset > 0 ? '' : 'hidden'),
        ' ',
        button('Next users', async () => { offset += PAGE; await render(); }, users.length === PAGE ? '' : 'hidden'),
      ),
    );
    return users.length;
  };
  onSubmit(form, async () => {
    offset = 0;
    await render();
  });
  const found = await render();
  // An app that does not (or no longer does) identify its users: say how to turn it on; users seen before stay listed.
  if (!identifiesUsers(app) && found === 0) {
    return [emptyState('This app does not identify its users: choose its sign-in provider and the user token mode under Policy (userAuth and userTokenMode in the management API).', h('a', { href: `#/apps/${app.id}/sign-in` }, 'Open the signed-in users policy'))];
  }
  return [
    identifiesUsers(app) ? null : h('p', { class: 'warning', role: 'note' }, 'User tokens are off for this app: the users below were seen before, and no new one is recorded.'),
    h('p', { class: 'muted' }, 'Users are identified by the ID token their app sends (Tollgate-User-Token), checked against the sign-in provider’s keys. Limits per user hold across all of a user’s devices; a blocked user is refused on every device.'),
    form,
    output,
  ];
}
