/**
 * An app at a glance: the last 24 hours (requests, errors, tokens, spend, active devices, with sparklines), how its
 * devices attest, first steps until they are done, and the app's identity and token with its lifecycle actions.
 */
import { api, type App, type DevicePage, type Secret, type Usage } from '../api.js';
import { timeBuckets, sparkline } from '../charts.js';
import { field, h, table } from '../dom.js';
import { compact, money, pricesUsed } from '../format.js';
import { refresh } from '../state.js';
import { badge, button, copyBox, onSubmit, once } from '../ui.js';

const DAY = 1440;

/** Open seconds as minutes: `0.5`, `12`, `1.2k`. */
const minutes = (seconds: number): string => (seconds < 600 ? String(Math.round(seconds / 6) / 10) : compact(Math.round(seconds / 60)));

function tile(label: string, value: string, testId: string, trend?: readonly number[], tone?: string, note?: string): HTMLElement {
  return h('li', { class: 'tile', 'data-testid': testId }, h('span', { class: 'tile-label' }, label), h('strong', { class: 'tile-value' }, value), note ? h('span', { class: 'tile-note muted' }, note) : null, trend ? sparkline(trend, tone) : null);
}

function checklist(app: App, secrets: readonly Secret[], devices: number, verified: number): HTMLElement | null {
  const steps: Array<[boolean, string, string, string]> = [
    [secrets.length > 0, 'Add a provider key', `#/apps/${app.id}/secrets`, 'Keys'],
    [devices > 0, 'Install the SDK and attest a device', `#/apps/${app.id}/integrate`, 'Integrate'],
    [verified > 0, 'Send a first verified request', `#/apps/${app.id}/requests`, 'Requests'],
  ];
  if (steps.every(([done]) => done)) return null;
  return h(
    'section',
    { class: 'checklist', 'aria-labelledby': 'first-steps', 'data-testid': 'first-steps' },
    h('h2', { id: 'first-steps' }, 'First steps'),
    h('ol', {}, ...steps.map(([done, label, href, page]) => h('li', { class: done ? 'done' : '' }, badge(done ? 'done' : 'to do', done ? 'ok' : 'muted'), ' ', done ? label : h('a', { href }, label), done ? '' : h('span', { class: 'muted' }, ` (${page})`)))),
  );
}

function tokenFacts(app: App): HTMLElement {
  return table(['', ''], [
    ['Id', copyBox(app.id, 'Copy id')],
    ['Status', badge(app.status, app.status === 'active' ? 'ok' : 'bad')],
    ['App token', h('span', { 'data-testid': 'token-current' }, h('code', {}, app.tokenHint), ' ', badge('active', 'ok'))],
    ...(app.previousToken
      ? [['Previous app token', h('span', { 'data-testid': 'token-previous' }, h('code', {}, app.previousToken.tokenHint), ' ', badge(`works until ${new Date(app.previousToken.expiresAt).toLocaleString()}`, 'muted'))]]
      : []),
  ]);
}

function rotateForm(app: App): HTMLFormElement {
  const rotate = h(
    'form',
    { class: 'inline', 'aria-label': 'Rotate the app token' },
    field(
      'Old token keeps working for',
      h('select', { name: 'graceHours' }, ...[['168', '7 days (ship the new token in an app update)'], ['720', '30 days'], ['24', '1 day'], ['1', '1 hour'], ['0', 'No grace: it stops at once']].map(([value, label]) => h('option', { value }, label ?? ''))),
    ),
    h('button', { type: 'submit' }, 'Rotate app token'),
  );
  return onSubmit(rotate, async (values) => {
    const graceHours = Number(values.graceHours);
    if (!window.confirm(graceHours === 0 ? 'The current app token stops working at once. Rotate?' : `The current app token keeps working for ${graceHours} hours. Rotate?`)) return;
    const result = await api<{ appToken: string }>('POST', `/apps/${app.id}/rotate-token`, { graceHours });
    once('New app token', result.appToken);
    await refresh();
  });
}

export async function overviewTab(app: App): Promise<(Node | null)[]> {
  const [usage, secrets, devices] = await Promise.all([
    api<Usage>('GET', `/apps/${app.id}/usage?minutes=${DAY}`),
    api<Secret[]>('GET', `/apps/${app.id}/secrets`),
    api<DevicePage>('GET', `/apps/${app.id}/devices?limit=1`),
  ]);
  const buckets = timeBuckets(usage.requestsPerMinute, DAY, Date.now());
  const errors = buckets.reduce((sum, bucket) => sum + bucket.errors, 0);
  const tokens = (usage.tokens?.inputTokens ?? 0) + (usage.tokens?.outputTokens ?? 0);
  const attestationFailures = usage.errorsByType.find((entry) => entry.type === 'attestationFailed')?.count ?? 0;
  const activeDevices = usage.tokens?.byDevice.length ? Math.max(usage.topDevices.length, usage.tokens.byDevice.length) : usage.topDevices.length;
  return [
    checklist(app, secrets, devices.total, usage.verification.verified),
    h('h2', {}, 'Last 24 hours'),
    h(
      'ul',
      { class: 'tiles' },
      tile('Requests', compact(usage.totalRequests), 'tile-requests', buckets.map((bucket) => bucket.requests)),
      tile('Errors', compact(errors), 'tile-errors', buckets.map((bucket) => bucket.errors), 'bad'),
      tile('Tokens', compact(tokens), 'tile-tokens'),
      tile('Estimated spend', usage.spend ? money(usage.spend.totalUsd) : 'no prices', 'tile-spend', undefined, undefined, usage.spend?.priceAsOf.length ? pricesUsed(usage.spend.priceAsOf) : undefined),
      tile('Active devices', compact(activeDevices), 'tile-devices'),
      // Realtime voice is billed by the minute: shown once the app has had a session.
      usage.realtime?.sessions ? tile(`Realtime minutes (${compact(usage.realtime.sessions)} ${usage.realtime.sessions === 1 ? 'session' : 'sessions'})`, minutes(usage.realtime.seconds), 'tile-realtime') : null,
    ),
    h('h2', {}, 'Attestation'),
    h(
      'ul',
      { class: 'tiles', 'data-testid': 'attestation-mix' },
      tile('Verified requests', compact(usage.verification.verified), 'tile-verified'),
      tile('Unverified (monitor mode)', compact(usage.verification.unverified), 'tile-unverified'),
      tile('Refused: attestation failed', compact(attestationFailures), 'tile-attestation-failed'),
    ),
    h('h2', {}, 'App token'),
    tokenFacts(app),
    rotateForm(app),
    h('h2', {}, 'Lifecycle'),
    h(
      'p',
      { class: 'actions' },
      app.status === 'active'
        ? button('Disable app', async () => { await api('POST', `/apps/${app.id}/disable`); await refresh(); }, 'danger', 'Requests with this app’s token will be refused. Disable?')
        : button('Enable app', async () => { await api('POST', `/apps/${app.id}/enable`); await refresh(); }),
      ' ',
      button('Delete app', async () => { await api('DELETE', `/apps/${app.id}`); location.hash = '#/apps'; }, 'danger', 'Delete this app with its secrets, tokens and devices?'),
    ),
  ];
}
