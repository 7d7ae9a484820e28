/**
 * The Tollgate dashboard: a single page over the management API (`/v1/admin/*`) with hash routes. Each page is a
 * module under pages/; this file routes addresses to them and runs the top bar (a menu on a phone). Every control is a
 * native, labelled form element, so the whole dashboard works from the keyboard.
 */
import { api, ApiError, setCsrfToken, type Session } from './api.js';
import { h } from './dom.js';
import { adminKeysPage } from './pages/admin-keys.js';
import { administratorsPage } from './pages/administrators.js';
import { appPage } from './pages/app.js';
import { appsPage } from './pages/apps.js';
import { auditPage } from './pages/audit.js';
import { devicePage } from './pages/devices.js';
import { endUserPage } from './pages/end-user.js';
import { pricesPage } from './pages/prices.js';
import { setupPage, signInPage } from './pages/sign-in.js';
import { usageContent } from './pages/usage.js';
import { currentSession, navigation, setSession } from './state.js';
import { errorBox, headingFocus, say, show } from './ui.js';

const main = document.getElementById('main') as HTMLElement;
const top = document.getElementById('top') as HTMLElement;
const menu = document.getElementById('menu') as HTMLButtonElement;
const sections = document.getElementById('sections') as HTMLElement;

function signedOut(): void {
  setSession(null);
  headingFocus(true);
  signInPage();
}

document.getElementById('sign-out')!.addEventListener('click', () => {
  if (!currentSession()) return signedOut();
  void api('DELETE', '/session').catch(() => undefined).finally(signedOut);
});

/** On a phone the sections sit behind a menu button; it closes again once a section is chosen. */
function setMenu(open: boolean): void {
  menu.setAttribute('aria-expanded', String(open));
  top.classList.toggle('menu-open', open);
}
menu.addEventListener('click', () => setMenu(menu.getAttribute('aria-expanded') !== 'true'));
sections.addEventListener('click', (event) => {
  if ((event.target as HTMLElement).closest('a')) setMenu(false);
});

/** Marks the section of the current address in the top bar. */
function markSection(first: string): void {
  for (const link of Array.from(sections.querySelectorAll('a'))) {
    const section = link.getAttribute('href')!.replace('#/', '');
    if (section === (first || 'apps')) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

/** Routes `location.hash`; the set-up link is `/dashboard/setup#token=su_…`. */
async function route(): Promise<void> {
  if (location.pathname.endsWith('/setup')) {
    const token = new URLSearchParams(location.hash.slice(1)).get('token');
    if (token) return setupPage(token);
  }
  if (!currentSession()) {
    try {
      const session = await api<Session>('GET', '/session');
      setSession(session);
      setCsrfToken(session.csrfToken);
    } catch {
      return signInPage();
    }
  }
  top.hidden = false;
  document.getElementById('who')!.textContent = currentSession()!.user.username;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  markSection(parts[0] ?? '');
  // A page that takes a while must not leave the previous one up looking current.
  main.setAttribute('aria-busy', 'true');
  try {
    if (parts[0] === 'apps' && parts[1] && parts[2] === 'devices' && parts[3]) return await devicePage(parts[1], parts.slice(3).join('/'));
    if (parts[0] === 'apps' && parts[1] && parts[2] === 'users' && parts[3]) return await endUserPage(parts[1], parts.slice(3).join('/'));
    if (parts[0] === 'apps' && parts[1]) return await appPage(parts[1], parts[2] ?? '');
    if (parts[0] === 'usage') return show('Usage of every app', ...(await usageContent('/usage')));
    if (parts[0] === 'prices') return await pricesPage();
    if (parts[0] === 'admin-keys') return await adminKeysPage();
    if (parts[0] === 'audit') return await auditPage();
    if (parts[0] === 'users') return await administratorsPage();
    return await appsPage();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signedOut();
    show('Something went wrong', errorBox(error), h('p', {}, h('a', { href: '#/apps' }, 'Back to apps')));
  } finally {
    main.removeAttribute('aria-busy');
  }
}

/** A navigation: the new page's heading takes focus. */
async function navigate(): Promise<void> {
  headingFocus(true);
  main.replaceChildren(h('p', { class: 'muted loading' }, 'Loading…'));
  await route();
}

navigation.route = navigate;
navigation.refresh = async () => {
  headingFocus(false);
  await route();
};
navigation.signedOut = signedOut;

window.addEventListener('hashchange', () => {
  say('');
  void navigate();
});
void navigate();
