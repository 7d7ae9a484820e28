/** Sign-in and the one-time set-up link that creates the first administrator. */
import { api, setCsrfToken, type Session } from '../api.js';
import { field, h } from '../dom.js';
import { navigation, setSession } from '../state.js';
import { onSubmit, show } from '../ui.js';

function hideTopBar(): void {
  document.getElementById('top')!.hidden = true;
  document.getElementById('who')!.textContent = '';
}

async function signedIn(session: Session): Promise<void> {
  setSession(session);
  setCsrfToken(session.csrfToken);
  await navigation.route();
}

export function signInPage(): void {
  hideTopBar();
  const form = h(
    'form',
    { 'aria-label': 'Sign in' },
    field('User name', h('input', { name: 'username', autocomplete: 'username', required: true })),
    field('Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true })),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  );
  show('Sign in to Tollgate', h('p', { class: 'muted' }, 'First time? Open the set-up link the server printed when it started.'), onSubmit(form, async (values) => {
    await signedIn(await api<Session>('POST', '/session', { username: values.username, password: values.password }));
  }));
}

export function setupPage(token: string): void {
  hideTopBar();
  const form = h(
    'form',
    { 'aria-label': 'Create the first administrator' },
    field('User name', h('input', { name: 'username', autocomplete: 'username', required: true })),
    field('Password', h('input', { name: 'password', type: 'password', autocomplete: 'new-password', required: true, minlength: 12 }), 'At least 12 characters.'),
    field('Repeat the password', h('input', { name: 'repeat', type: 'password', autocomplete: 'new-password', required: true })),
    h('button', { type: 'submit', class: 'primary' }, 'Create administrator'),
  );
  show('Set up Tollgate', h('p', {}, 'Create the first administrator. This link works once.'), onSubmit(form, async (values) => {
    if (values.password !== values.repeat) throw new Error('The passwords differ.');
    const session = await api<Session>('POST', '/setup', { setupToken: token, username: values.username, password: values.password });
    history.replaceState(null, '', '/dashboard/#/apps');
    await signedIn(session);
  }));
}
