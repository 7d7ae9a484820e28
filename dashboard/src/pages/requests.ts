/**
 * The request log of an app: filters (time range, status, error type, provider, device, signed-in user, text), paging
 * by cursor (newest first), model, tokens and estimated spend per row, a detail view per row, and CSV export of what the
 * filters select. A realtime session is one row, marked as such, with its duration, close and who closed it; its
 * details add frames each way and audio seconds.
 */
import { api, type App, type RequestLog } from '../api.js';
import { field, formValues, h, table } from '../dom.js';
import { duration, money, pricesUsed } from '../format.js';
import { loadProviders } from '../state.js';
import { isSession, sessionFacts, sessionRoute, sessionStatus } from '../sessions.js';
import { badge, button, copyBox, onSubmit, when } from '../ui.js';

type Entry = RequestLog['requests'][number];

const RANGES: ReadonlyArray<readonly [string, string]> = [['', 'any time'], ['15', 'last 15 minutes'], ['60', 'last hour'], ['1440', 'last day'], ['10080', 'last 7 days']];
const STATUSES: ReadonlyArray<readonly [string, string]> = [['', 'any'], ['2xx', '2xx'], ['4xx', '4xx'], ['5xx', '5xx'], ['429', '429']];
const ERROR_TYPES = ['unauthorized', 'attestationFailed', 'rateLimited', 'secretNotFound', 'providerNotFound', 'invalidRequest', 'upstreamUnavailable', 'upstreamTimeout', 'serviceUnavailable', 'internalError', 'providerError'];
const FILTERS = ['device', 'user', 'provider', 'minutes', 'status', 'errorType', 'q'] as const;

/** The row's estimated spend (the gateway's, from the operator's price or the dated default table), or ''. */
function spend(entry: Entry): string {
  return entry.estimatedUsd === null || entry.estimatedUsd === undefined ? '' : money(entry.estimatedUsd);
}

/** The spend with the date of the price it used beside it. */
function spendCell(entry: Entry): Node | string {
  const amount = spend(entry);
  if (!amount) return '';
  return h('span', {}, amount, h('br'), h('small', { class: 'muted', 'data-testid': 'price-as-of' }, pricesUsed(entry.priceAsOf)));
}

const errorText = (entry: Entry) => (entry.errorType ? `${entry.errorType}${entry.reason ? ` (${entry.reason})` : ''}` : entry.status >= 400 ? 'providerError' : '');

/** Every recorded field of one request, or of one realtime session. */
function detail(entry: Entry): HTMLElement {
  const head: Array<[string, Node | string]> = [
    [isSession(entry) ? 'Session id' : 'Request id', entry.requestId ? copyBox(entry.requestId, isSession(entry) ? 'Copy session id' : 'Copy request id') : ''],
    [isSession(entry) ? 'Opened' : 'Time', when(entry.createdAt)],
    ['Device', entry.deviceId ?? 'none (refused before attestation)'],
    ['User', entry.userId ?? 'none (no user token)'],
    ['Route', `${entry.method ?? ''} ${entry.provider}/${entry.route ?? ''}`.trim()],
  ];
  const body: Array<[string, Node | string]> = isSession(entry)
    ? [...sessionFacts(entry), ['Error', errorText(entry) || 'none'], ['Model', entry.model ?? 'not reported'], ['Estimated spend', spend(entry) ? `${spend(entry)} (${pricesUsed(entry.priceAsOf)})` : 'no price for this model']]
    : [
        ['Status', String(entry.status)],
        ['Error', errorText(entry) || 'none'],
        ['Model', entry.model ?? 'not reported'],
        ['Tokens in / out', entry.inputTokens === null || entry.inputTokens === undefined ? 'not reported' : `${entry.inputTokens} / ${entry.outputTokens ?? 0}`],
        ['Estimated spend', spend(entry) ? `${spend(entry)} (${pricesUsed(entry.priceAsOf)})` : 'no price for this model'],
        ['Latency', duration(entry.latencyMs)],
      ];
  const facts = [...head, ...body, ['Bytes in / out', `${entry.bytesIn} / ${entry.bytesOut}${entry.truncated ? ' (cut short)' : ''}`] as [string, string]];
  return h('dl', { class: 'facts', 'data-testid': isSession(entry) ? 'session-detail' : 'request-detail' }, ...facts.flatMap(([label, value]) => [h('dt', {}, label), h('dd', {}, value)]));
}

export async function requestsTab(app: App): Promise<(Node | null)[]> {
  const initial = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const catalog = await loadProviders();
  const options = (entries: ReadonlyArray<readonly [string, string]>, name: string) => entries.map(([value, label]) => h('option', { value, selected: (initial.get(name) ?? '') === value }, label));
  const form = h(
    'form',
    { class: 'inline filters', 'aria-label': 'Filter requests' },
    field('Time', h('select', { name: 'minutes' }, ...options(RANGES, 'minutes'))),
    field('Status', h('select', { name: 'status' }, ...options(STATUSES, 'status'))),
    field('Error type', h('select', { name: 'errorType' }, ...options([['', 'any'], ...ERROR_TYPES.map((type) => [type, type] as const)], 'errorType'))),
    field('Provider', h('select', { name: 'provider' }, h('option', { value: '' }, 'any'), ...catalog.map((provider) => h('option', { value: provider.slug, selected: initial.get('provider') === provider.slug }, provider.name)))),
    field('Device', h('input', { name: 'device', value: initial.get('device') ?? '', placeholder: 'device id' })),
    field('User', h('input', { name: 'user', value: initial.get('user') ?? '', placeholder: 'signed-in user id (sub)' })),
    field('Search', h('input', { name: 'q', type: 'search', value: initial.get('q') ?? '', placeholder: 'route, request id or reason' })),
    h('button', { type: 'submit', class: 'primary' }, 'Show'),
  );
  const output = h('div', { 'aria-live': 'polite' });
  const cursors: Array<number | null> = [null];
  const filters = () => {
    const values = formValues(form);
    const query = new URLSearchParams();
    for (const key of FILTERS) if (values[key]) query.set(key, String(values[key]));
    return query;
  };
  const render = async () => {
    const query = filters();
    const before = cursors[cursors.length - 1];
    if (before) query.set('before', String(before));
    query.set('limit', '50');
    const log = await api<RequestLog>('GET', `/apps/${app.id}/requests?${query}`);
    const rows = table(
      ['Time', 'Device', 'Route', 'Model', 'Status', 'Tokens in / out', 'Spend', 'Latency', ''],
      log.requests.map((entry) => [
        new Date(entry.createdAt).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' }),
        entry.deviceId ? h('code', {}, entry.deviceId) : '',
        isSession(entry) ? sessionRoute(entry) : h('span', {}, h('span', { class: 'muted' }, entry.provider), ' ', h('code', { title: entry.requestId ?? '' }, `${entry.method ?? ''} ${entry.route ?? ''}`.trim())),
        entry.model ? h('code', {}, entry.model) : '',
        isSession(entry)
          ? sessionStatus(entry.session)
          : h('span', {}, badge(String(entry.status), entry.status < 400 && !entry.errorType ? 'ok' : 'bad'), errorText(entry) ? h('span', { class: 'error-type' }, ' ', errorText(entry)) : null),
        entry.inputTokens === null || entry.inputTokens === undefined ? '' : `${entry.inputTokens} / ${entry.outputTokens ?? 0}`,
        spendCell(entry),
        duration(entry.latencyMs),
        h('button', { type: 'button', class: 'link', 'aria-expanded': 'false', 'data-request': String(entry.id), 'data-kind': isSession(entry) ? 'session' : 'request' }, 'Details'),
      ]),
      log.requests.length ? undefined : 'No request matches these filters.',
      'request-log',
    );
    // Details open under their row (a row of their own, spanning the table).
    rows.addEventListener('click', (event) => {
      const toggle = (event.target as HTMLElement).closest('button[data-request]');
      if (!toggle) return;
      const row = toggle.closest('tr')!;
      const open = row.nextElementSibling?.classList.contains('detail-row') ? row.nextElementSibling : null;
      if (open) {
        open.remove();
        toggle.setAttribute('aria-expanded', 'false');
        return;
      }
      const entry = log.requests.find((candidate) => String(candidate.id) === toggle.getAttribute('data-request'))!;
      row.after(h('tr', { class: 'detail-row' }, h('td', { colspan: 9 }, detail(entry))));
      toggle.setAttribute('aria-expanded', 'true');
    });
    const exportQuery = filters();
    output.replaceChildren(
      rows,
      h(
        'p',
        { class: 'pager' },
        button('Newer', async () => { cursors.pop(); await render(); }, cursors.length > 1 ? '' : 'hidden'),
        ' ',
        button('Older', async () => { cursors.push(log.nextBefore); await render(); }, log.nextBefore ? '' : 'hidden'),
        ' ',
        h('a', { href: `/v1/admin/apps/${encodeURIComponent(app.id)}/requests.csv?${exportQuery}`, download: 'tollgate-requests.csv' }, 'Export CSV'),
      ),
    );
  };
  onSubmit(form, async () => {
    cursors.splice(1);
    await render();
  });
  await render();
  return [h('p', { class: 'muted' }, 'One row per request through the gateway, and one per realtime session (marked realtime, with its duration and close), newest first. Kept for TOLLGATE_REQUEST_LOG_RETENTION_DAYS (default 30).'), form, output];
}
