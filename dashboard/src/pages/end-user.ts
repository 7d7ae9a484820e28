/**
 * The page of one signed-in user of an app (`#/apps/{appId}/users/{userId}`): who the user is and whether blocked, the
 * limits and budgets that hold for the user with what is used and what remains (the counters `GET /v1/me` reads), the
 * user's usage over time (requests, tokens, estimated spend), the devices the user's requests came from, and the
 * user's latest requests. The user id, profile, device ids and model names come from the app's users and devices:
 * they are put in as text, never as markup.
 */
import { api, type App, type EndUser, type EndUserDevice, type EndUserLimits, type Limit, type RequestLog, type Usage } from '../api.js';
import { bucketLabel, timeBuckets, timeChart } from '../charts.js';
import { field, formValues, h, stackTable } from '../dom.js';
import { compact, duration, money, pricesUsed } from '../format.js';
import { refresh } from '../state.js';
import { frames, isSession, sessionRoute, sessionStatus } from '../sessions.js';
import { badge, button, emptyState, onSubmit, say, show, when } from '../ui.js';
import { monitorBanner, tabs } from './app.js';

const WINDOWS: ReadonlyArray<readonly [string, string]> = [['1440', 'Last day'], ['10080', 'Last 7 days'], ['360', 'Last 6 hours'], ['60', 'Last hour']];
const PLATFORMS: Record<string, string> = { ios: 'iOS', android: 'Android', development: 'Development', other: 'other' };
const UNITS: Record<Limit['unit'], string> = { requests: 'Requests', tokens: 'Tokens', seconds: 'Realtime seconds' };

/** The address of a user's page (the list links to it). */
export const endUserPath = (appId: string, userId: string): string => `#/apps/${encodeURIComponent(appId)}/users/${encodeURIComponent(userId)}`;

/** Block or Unblock, as in the list; the page is drawn again after. */
function blockButton(app: App, user: EndUser): HTMLButtonElement {
  const path = (action: string) => `/apps/${app.id}/users/${encodeURIComponent(user.id)}/${action}`;
  return user.blocked
    ? button(`Unblock ${user.id}`, async () => { await api('POST', path('unblock')); say(`${user.id} is unblocked.`); await refresh(); })
    : button(`Block ${user.id}`, async () => { await api('POST', path('block')); say(`${user.id} is blocked on every device.`); await refresh(); }, 'danger', `Block ${user.id}? Every request of this user is refused on every device (user_blocked), and open realtime sessions close.`);
}

function limitsTable(app: App, limits: EndUserLimits): HTMLElement {
  if (limits.limits.length === 0) {
    return emptyState('No limit holds for this user: set per-user limits and budgets under Policy (signed-in users).', h('a', { href: `#/apps/${app.id}/sign-in` }, 'Open the signed-in users policy'));
  }
  return stackTable(
    ['Limit', 'Applies to', 'Used', 'Remaining', 'Resets'],
    limits.limits.map((limit) => [
      `${UNITS[limit.unit]} per ${limit.window}`,
      limit.scope === 'user' ? 'this user, all devices' : 'the whole app, every user',
      `${compact(limit.limit - limit.remaining)} of ${compact(limit.limit)}`,
      limit.remaining > 0 ? compact(limit.remaining) : badge('used up', 'bad'),
      when(limit.resetsAt),
    ]),
    undefined,
    'user-limits',
  );
}

/** Requests, tokens and estimated spend of the user over a window, each a time series over the same buckets. */
async function usageContent(app: App, userId: string): Promise<HTMLElement[]> {
  const output = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Usage window' },
    field('Window', h('select', { name: 'minutes' }, ...WINDOWS.map(([value, label]) => h('option', { value }, label)))),
    h('button', { type: 'submit' }, 'Show usage'),
  );
  const stat = (label: string, value: string, testId: string) => h('li', {}, h('strong', { 'data-testid': testId }, value), label);
  const render = async (values: Record<string, string | boolean>) => {
    const minutes = Number(values.minutes);
    const usage = await api<Usage>('GET', `/apps/${app.id}/usage?minutes=${minutes}&user=${encodeURIComponent(userId)}`);
    const buckets = timeBuckets(usage.requestsPerMinute, minutes, Date.now());
    const size = (buckets[1]?.start ?? 60_000) - (buckets[0]?.start ?? 0);
    const sum = (points: ReadonlyArray<{ minute: number }>, value: (point: never) => number) => {
      const totals = buckets.map(() => 0);
      for (const point of points) {
        const index = Math.floor((point.minute - (buckets[0]?.start ?? 0)) / size);
        if (index >= 0 && index < totals.length) totals[index]! += value(point as never);
      }
      return totals;
    };
    const tokens = sum(usage.requestsPerMinute, (point: { tokens?: number }) => point.tokens ?? 0);
    const spend = sum(usage.spend?.perMinute ?? [], (point: { usd: number }) => point.usd);
    const per = size <= 60_000 ? 'minute' : `${size / 60_000} minutes`;
    const label = (start: number) => bucketLabel(start, minutes);
    const errors = usage.requestsPerMinute.reduce((total, entry) => total + entry.errors, 0);
    output.replaceChildren(
      h(
        'ul',
        { class: 'stats' },
        stat('requests', String(usage.totalRequests), 'user-requests'),
        stat('errors', String(errors), 'user-errors'),
        stat('input tokens', compact(usage.tokens?.inputTokens ?? 0), 'user-input-tokens'),
        stat('output tokens', compact(usage.tokens?.outputTokens ?? 0), 'user-output-tokens'),
        stat(usage.spend?.priceAsOf.length ? `estimated (${pricesUsed(usage.spend.priceAsOf)})` : 'estimated spend', usage.spend ? money(usage.spend.totalUsd) : 'no prices', 'user-spend'),
      ),
      h(
        'div',
        { class: 'charts' },
        timeChart('chart-user-requests', `Requests per ${per}`, buckets.map((bucket) => bucket.start), [
          { label: 'requests', values: buckets.map((bucket) => bucket.requests) },
          { label: 'errors', values: buckets.map((bucket) => bucket.errors), className: 'bad' },
        ], 'count', label),
        timeChart('chart-user-tokens', `Tokens per ${per}`, buckets.map((bucket) => bucket.start), [{ label: 'tokens (input + output)', values: tokens, className: 'alt' }], 'count', label),
        timeChart('chart-user-spend', `Estimated spend per ${per}`, buckets.map((bucket) => bucket.start), [{ label: 'USD', values: spend.map((usd) => +usd.toFixed(6)), className: 'budget' }], 'usd', label),
      ),
    );
  };
  onSubmit(form, render);
  await render(formValues(form));
  return [form, output];
}

function devicesTable(app: App, devices: readonly EndUserDevice[]): HTMLElement {
  return stackTable(
    ['Device', 'Platform', 'Requests', 'First used', 'Last used', 'State'],
    devices.map((device) => [
      device.platform === null
        ? h('code', { title: 'no longer stored' }, device.deviceId)
        : h('a', { href: `#/apps/${app.id}/devices/${encodeURIComponent(device.deviceId)}`, title: 'Status, traffic and latest requests of this device' }, h('code', {}, device.deviceId)),
      device.platform === null ? 'unknown' : h('span', { title: device.method ?? '' }, PLATFORMS[device.platform] ?? device.platform),
      String(device.requests),
      when(device.firstSeenAt),
      when(device.lastSeenAt),
      device.revokedAt ? badge(`revoked ${when(device.revokedAt)}`, 'bad') : device.platform === null ? badge('not stored', 'muted') : badge('active', 'ok'),
    ]),
    devices.length ? undefined : 'No request of this user in the request log.',
    'user-devices',
  );
}

function requestsTable(log: RequestLog): HTMLElement {
  return stackTable(
    ['Time', 'Device', 'Route', 'Model', 'Status', 'Tokens in / out', 'Spend', 'Latency'],
    log.requests.map((entry) => [
      when(entry.createdAt),
      entry.deviceId ? h('code', {}, entry.deviceId) : '',
      isSession(entry) ? sessionRoute(entry) : h('span', {}, h('span', { class: 'muted' }, entry.provider), ' ', h('code', { title: entry.requestId ?? '' }, `${entry.method ?? ''} ${entry.route ?? ''}`.trim())),
      entry.model ? h('code', {}, entry.model) : '',
      isSession(entry)
        ? sessionStatus(entry.session)
        : h('span', {}, badge(String(entry.status), entry.status < 400 && !entry.errorType ? 'ok' : 'bad'), entry.errorType ? ` ${entry.errorType}${entry.reason ? ` (${entry.reason})` : ''}` : entry.status >= 400 ? ' providerError' : ''),
      isSession(entry) ? frames(entry.session) : entry.inputTokens === null || entry.inputTokens === undefined ? '' : `${entry.inputTokens} / ${entry.outputTokens ?? 0}`,
      entry.estimatedUsd === null || entry.estimatedUsd === undefined ? '' : money(entry.estimatedUsd),
      duration(entry.latencyMs),
    ]),
    log.requests.length ? undefined : 'No request of this user in the request log.',
    'user-requests-list',
  );
}

export async function endUserPage(appId: string, userId: string): Promise<void> {
  const app = await api<App>('GET', `/apps/${encodeURIComponent(appId)}`);
  const id = encodeURIComponent(userId);
  const user = await api<EndUser>('GET', `/apps/${app.id}/users/${id}`);
  const [limits, devices, log] = await Promise.all([
    api<EndUserLimits>('GET', `/apps/${app.id}/users/${id}/limits`),
    api<EndUserDevice[]>('GET', `/apps/${app.id}/users/${id}/devices`),
    api<RequestLog>('GET', `/apps/${app.id}/requests?user=${id}&limit=20`),
  ]);
  const usage = await usageContent(app, user.id);
  showUser(app, user, [
    h('h2', {}, 'User'),
    h(
      'dl',
      { class: 'facts', 'data-testid': 'user-identity' },
      h('dt', {}, 'User id (sub)'), h('dd', {}, h('code', {}, user.id)),
      h('dt', {}, 'Issuer'), h('dd', {}, h('code', {}, user.issuer)),
      h('dt', {}, 'Profile'), h('dd', { 'data-testid': 'user-profile' }, user.profile === null ? 'none (the app’s own limits)' : limits.profileApplies ? user.profile : `${user.profile} (no such profile now: the app’s own limits hold)`),
      h('dt', {}, 'First seen'), h('dd', {}, when(user.firstSeenAt)),
      h('dt', {}, 'Last seen'), h('dd', { title: 'recorded at most every 10 minutes' }, when(user.lastSeenAt)),
      h('dt', {}, 'State'), h('dd', { 'data-testid': 'user-state' }, user.blocked ? badge(`blocked ${when(user.blockedAt)}`, 'bad') : badge('active', 'ok')),
    ),
    h('p', {}, blockButton(app, user)),
    h('h2', {}, 'Limits and budgets'),
    h('p', { class: 'muted' }, 'What this user has used and has left now, from the counters the gateway charges (as GET /v1/me answers the app). Per-device limits hold on each device apart and are on each device’s page.'),
    limitsTable(app, limits),
    h('h2', {}, 'Usage'),
    ...usage,
    h('h2', {}, 'Devices'),
    devicesTable(app, devices),
    h('h2', {}, 'Latest requests'),
    requestsTable(log),
    h('p', {}, h('a', { href: `#/apps/${app.id}/requests?user=${id}` }, 'All requests of this user in the request log')),
  ]);
}

function showUser(app: App, user: EndUser, content: Array<Node | null>): void {
  show(`${app.name} · User ${user.id}`, tabs(app, 'users'), monitorBanner(app), h('p', {}, h('a', { href: `#/apps/${app.id}/users` }, '← All users')), ...content);
}
