/** The audit log: every change with who made it, filtered, paged, older entries fetched as the pages run out. */
import { api, type App } from '../api.js';
import { field, h, table } from '../dom.js';
import { button, show } from '../ui.js';

type AuditRow = { id: number; actor: string; action: string; target: string | null; details: Record<string, unknown> | null; createdAt: string };
/** Audit entries fetched per request; older ones are fetched when the pages shown run out. */
const AUDIT_BATCH = 500;

export async function auditPage(): Promise<void> {
  const [first, apps] = await Promise.all([api<AuditRow[]>('GET', `/audit?limit=${AUDIT_BATCH}`), api<App[]>('GET', '/apps')]);
  const entries = [...first];
  // Whether the server may hold entries older than those fetched (the last batch was full).
  let more = first.length === AUDIT_BATCH;
  const names = new Map(apps.map((app) => [app.id, app.name]));
  // Targets start with an app id (`app_…` or `app_…/openai`): show the app's name, keep the id in a tooltip.
  const target = (value: string | null) => {
    if (!value) return '';
    const [first, ...rest] = value.split('/');
    const name = names.get(first ?? '');
    return name ? h('span', { title: value }, [name, ...rest].join(' / ')) : h('code', {}, value);
  };
  const details = (value: Record<string, unknown> | null) => (value && Object.keys(value).length ? h('code', { class: 'details' }, Object.entries(value).map(([key, entry]) => `${key}: ${JSON.stringify(entry)}`).join(', ')) : '');
  const filter = h('input', { type: 'search', name: 'audit-filter', placeholder: 'who, what or target' });
  const PAGE = 50;
  let page = 0;
  const listing = h('div', {});
  const render = () => {
    const needle = filter.value.trim().toLowerCase();
    const matching = entries.filter((entry) => !needle || [entry.actor, entry.action, entry.target ?? '', names.get((entry.target ?? '').split('/')[0] ?? '') ?? ''].some((text) => text.toLowerCase().includes(needle)));
    const pages = Math.max(1, Math.ceil(matching.length / PAGE));
    page = Math.min(page, pages - 1);
    listing.replaceChildren(
      table(['When', 'Who', 'What', 'Target', 'Details'], matching.slice(page * PAGE, (page + 1) * PAGE).map((entry) => [new Date(entry.createdAt).toLocaleString(), entry.actor, entry.action, target(entry.target), details(entry.details)]), matching.length ? undefined : 'Nothing matches.'),
      h(
        'p',
        { class: 'pager' },
        button('Newer', async () => { page -= 1; render(); }, page === 0 ? 'hidden' : ''),
        ` Page ${page + 1} of ${pages}${more ? '+' : ''} `,
        button('Older', async () => {
          // Past the entries fetched so far: the next batch from the server, older than the oldest one here.
          if (page >= pages - 1 && more) {
            const older = await api<AuditRow[]>('GET', `/audit?limit=${AUDIT_BATCH}&before=${entries[entries.length - 1]!.id}`);
            entries.push(...older);
            more = older.length === AUDIT_BATCH;
          }
          page += 1;
          render();
        }, page >= pages - 1 && !more ? 'hidden' : ''),
      ),
    );
  };
  filter.addEventListener('input', () => {
    page = 0;
    render();
  });
  render();
  show('Audit log', h('p', { class: 'muted' }, 'Every change made in the dashboard, over the management API, the assistant server or the command line, with who made it.'), field('Filter', filter), listing);
}
