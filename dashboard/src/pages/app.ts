/** One app: its tabs, the monitor-mode warning every tab shows, and the page of the chosen tab. */
import { api, type App } from '../api.js';
import { h } from '../dom.js';
import { show } from '../ui.js';
import { alertsTab } from './alerts.js';
import { devicesTab } from './devices.js';
import { endUsersTab } from './end-users.js';
import { integrateTab } from './integrate.js';
import { overviewTab } from './overview.js';
import { policyTab } from './policy.js';
import { requestsTab } from './requests.js';
import { secretsTab } from './secrets.js';
import { usageContent } from './usage.js';

type Tab = (app: App, section: string) => Promise<(Node | null)[]>;

const TABS: ReadonlyArray<readonly [string, string, Tab]> = [
  ['', 'Overview', overviewTab],
  ['policy', 'Policy', policyTab],
  ['secrets', 'Secrets', secretsTab],
  ['devices', 'Devices', devicesTab],
  ['users', 'Users', endUsersTab],
  ['requests', 'Requests', requestsTab],
  ['usage', 'Usage', async (app) => usageContent(`/apps/${app.id}/usage`)],
  ['alerts', 'Alerts', alertsTab],
  ['integrate', 'Integrate', integrateTab],
];

/** Older addresses of the policy's sections, still linked from elsewhere. */
const ALIASES: Record<string, readonly [string, string]> = { limits: ['policy', 'limits'], routes: ['policy', 'routes'], settings: ['policy', 'attestation'], sessions: ['policy', 'sessions'], 'sign-in': ['policy', 'users'] };

export function tabs(app: App, current: string): HTMLElement {
  return h('nav', { class: 'tabs', 'aria-label': `${app.name} sections` }, ...TABS.map(([tab, label]) => h('a', { href: `#/apps/${app.id}${tab ? `/${tab}` : ''}`, 'aria-current': tab === current ? 'page' : null }, label)));
}

/** The warning every page of an app in monitor mode shows: unattested requests reach the providers. */
export function monitorBanner(app: App): HTMLElement | null {
  if (app.settings.attestationMode !== 'monitor') return null;
  const providers = (app.settings.monitorProviders as string[] | undefined) ?? [];
  return h(
    'div',
    { class: 'warning', role: 'note', 'data-testid': 'monitor-banner' },
    h('strong', {}, 'Monitor mode: '),
    `requests without a valid device token are forwarded${providers.length ? ` (for ${providers.join(', ')})` : ''} and counted as unverified. Watch Usage, then switch to Enforce under Policy.`,
  );
}

export async function appPage(appId: string, address: string): Promise<void> {
  const app = await api<App>('GET', `/apps/${encodeURIComponent(appId)}`);
  const requested = address.split('?')[0]!;
  const [tab, section] = ALIASES[requested] ?? [requested, ''];
  const entry = TABS.find(([key]) => key === tab);
  if (!entry) throw new Error('No such page.');
  const title = `${app.name}${tab ? ` · ${entry[1]}` : ''}`;
  show(title, tabs(app, tab), monitorBanner(app), ...(await entry[2](app, section)));
  if (section) document.getElementById(`section-${section}`)?.scrollIntoView({ block: 'start' });
}
