/** The devices of an app (search, paging, revocation), its development tokens, and the page of one device. */
import { api, type App, type Device, type DevicePage, type RequestLog, type Usage } from '../api.js';
import { field, formValues, h, stackTable, table } from '../dom.js';
import { duration } from '../format.js';
import { refresh } from '../state.js';
import { frames, isSession, sessionRoute, sessionStatus } from '../sessions.js';
import { badge, button, emptyState, onSubmit, once, say, show } from '../ui.js';
import { monitorBanner, tabs } from './app.js';

export async function devicesTab(app: App): Promise<(Node | null)[]> {
  const tokens = await api<Array<{ id: string; tokenHint: string; label: string | null; createdAt: string; revokedAt: string | null }>>('GET', `/apps/${app.id}/development-tokens`);
  const form = h('form', { class: 'inline', 'aria-label': 'Create a development token' }, field('Label', h('input', { name: 'label', placeholder: 'iPhone simulator' })), h('button', { type: 'submit' }, 'Create development token'));
  return [
    h('h2', {}, 'Devices'),
    ...(await deviceListContent(app)),
    h('h2', {}, 'Development tokens'),
    h('p', { class: 'muted' }, app.settings.allowDevelopmentAttestation ? 'For simulators and emulators, in debug builds only. Refused in production.' : 'Development attestation is off for this app (Policy → Attestation).'),
    table(
      ['Token', 'Label', 'Created', 'State'],
      tokens.map((token) => [
        h('code', {}, token.tokenHint),
        token.label ?? '',
        new Date(token.createdAt).toLocaleString(),
        token.revokedAt ? badge('revoked', 'bad') : button(`Revoke ${token.tokenHint}`, async () => { await api('POST', `/apps/${app.id}/development-tokens/${token.id}/revoke`); await refresh(); }, 'danger'),
      ]),
    ),
    onSubmit(form, async (values) => {
      const token = await api<{ developmentToken: string }>('POST', `/apps/${app.id}/development-tokens`, values.label ? { label: values.label } : {});
      once('Development token', token.developmentToken);
      await refresh();
    }),
  ];
}

const PLATFORMS: Array<[string, string]> = [['', 'any'], ['ios', 'iOS'], ['android', 'Android'], ['development', 'Development (simulators, emulators)'], ['other', 'other']];
const platformName = (platform: string) => PLATFORMS.find(([value]) => value === platform)?.[1] ?? platform;
const devicePath = (app: App, deviceId: string) => `#/apps/${app.id}/devices/${encodeURIComponent(deviceId)}`;

function revokeDeviceButton(app: App, deviceId: string): HTMLButtonElement {
  return button(
    `Revoke ${deviceId}`,
    async () => {
      await api('POST', `/apps/${app.id}/devices/${encodeURIComponent(deviceId)}/revoke`);
      // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
      await refresh();
      say(`Device ${deviceId} is revoked.`);
    },
    'danger',
    `Revoke ${deviceId}? Its next request is refused, and the SDK will not attest a new key for it.`,
  );
}

/** The app's devices: search by id prefix and platform, paged on the server, with the total. */
async function deviceListContent(app: App): Promise<Node[]> {
  const PAGE = 25;
  const form = h(
    'form',
    { class: 'inline', role: 'search', 'aria-label': 'Find devices' },
    field('Device id starts with', h('input', { name: 'q', type: 'search', placeholder: 'device id' })),
    field('Platform', h('select', { name: 'platform' }, ...PLATFORMS.map(([value, label]) => h('option', { value }, label)))),
    h('button', { type: 'submit' }, 'Find'),
  );
  const output = h('div', { 'aria-live': 'polite' });
  let offset = 0;
  // A danger button with nothing to act on is not shown: it appears once a device has attested.
  const revokeAll = h('p', {}, button('Revoke every device', async () => { await api('POST', `/apps/${app.id}/devices/revoke-all`); say('Every device token issued until now is revoked.'); await refresh(); }, 'danger', 'Every device must attest again. Revoke all?'));
  const render = async () => {
    const values = formValues(form);
    const query = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
    const prefix = String(values.q ?? '').trim();
    if (prefix) query.set('q', prefix);
    if (values.platform) query.set('platform', String(values.platform));
    const page = await api<DevicePage>('GET', `/apps/${app.id}/devices?${query}`);
    const filtered = Boolean(prefix || values.platform);
    revokeAll.hidden = !filtered && page.total === 0;
    output.replaceChildren(
      page.total === 0 ? h('div', { 'data-testid': 'device-total' }, emptyState(filtered ? 'No device matches.' : 'No device has attested yet.', filtered ? undefined : h('a', { href: `#/apps/${app.id}/integrate` }, 'Install the SDK in your app (Integrate)'))) : h('p', { 'data-testid': 'device-total' }, `Devices ${page.offset + 1}–${page.offset + page.devices.length} of ${page.total}.`),
      page.devices.length
        ? stackTable(
            ['Device', 'Platform', 'First seen', 'Last attested', 'State'],
            page.devices.map((device) => [
              h('a', { href: devicePath(app, device.deviceId), title: 'Status, traffic and latest requests of this device' }, h('code', {}, device.deviceId)),
              h('span', { title: device.method }, platformName(device.platform)),
              new Date(device.firstSeenAt).toLocaleString(),
              new Date(device.lastAttestedAt).toLocaleString(),
              device.revokedAt ? badge(`revoked ${new Date(device.revokedAt).toLocaleString()}`, 'bad') : revokeDeviceButton(app, device.deviceId),
            ]),
            undefined,
            'device-list',
          )
        : '',
      h(
        'p',
        { class: 'pager' },
        button('Previous devices', async () => { offset = Math.max(0, offset - PAGE); await render(); }, offset > 0 ? '' : 'hidden'),
        ' ',
        button('Next devices', async () => { offset = page.nextOffset ?? offset; await render(); }, page.nextOffset !== null ? '' : 'hidden'),
      ),
    );
  };
  onSubmit(form, async () => {
    offset = 0;
    await render();
  });
  await render();
  return [form, output, revokeAll];
}

/** One device: status, its traffic (the usage summary of its events), its latest requests and sessions, and revocation. */
export async function devicePage(appId: string, deviceId: string): Promise<void> {
  const app = await api<App>('GET', `/apps/${encodeURIComponent(appId)}`);
  const device = await api<Device>('GET', `/apps/${app.id}/devices/${encodeURIComponent(deviceId)}`);
  const id = encodeURIComponent(device.deviceId);
  const when = (value: string | null | undefined, none: string) => (value ? new Date(value).toLocaleString() : none);
  const traffic = h('div', { 'aria-live': 'polite' });
  const windowForm = h(
    'form',
    { class: 'inline', 'aria-label': 'Traffic window' },
    field('Window', h('select', { name: 'minutes' }, ...[['1440', 'Last day'], ['10080', 'Last 7 days'], ['60', 'Last hour']].map(([value, label]) => h('option', { value }, label ?? '')))),
    h('button', { type: 'submit' }, 'Show traffic'),
  );
  const stat = (label: string, value: number, testId: string) => h('li', {}, h('strong', { 'data-testid': testId }, String(value)), label);
  const renderTraffic = async (values: Record<string, string | boolean>) => {
    const usage = await api<Usage>('GET', `/apps/${app.id}/usage?minutes=${Number(values.minutes)}&device=${id}`);
    const errors = usage.requestsPerMinute.reduce((sum, entry) => sum + entry.errors, 0);
    traffic.replaceChildren(
      h(
        'ul',
        { class: 'stats' },
        stat('requests', usage.totalRequests, 'device-requests'),
        stat('errors', errors, 'device-errors'),
        stat('input tokens', usage.tokens?.inputTokens ?? 0, 'device-input-tokens'),
        stat('output tokens', usage.tokens?.outputTokens ?? 0, 'device-output-tokens'),
        usage.realtime?.sessions ? stat('realtime sessions', usage.realtime.sessions, 'device-sessions') : null,
        usage.realtime?.sessions ? h('li', {}, h('strong', { 'data-testid': 'device-session-minutes' }, (usage.realtime.seconds / 60).toFixed(1)), 'realtime minutes') : null,
      ),
    );
  };
  onSubmit(windowForm, renderTraffic);
  await renderTraffic(formValues(windowForm));
  const log = await api<RequestLog>('GET', `/apps/${app.id}/requests?device=${id}&limit=20`);
  show(
    `${app.name} · Device ${device.deviceId}`,
    tabs(app, 'devices'),
    monitorBanner(app),
    h('p', {}, h('a', { href: `#/apps/${app.id}/devices` }, '← All devices')),
    h('h2', {}, 'Status'),
    h(
      'dl',
      { class: 'facts', 'data-testid': 'device-status' },
      h('dt', {}, 'Platform'), h('dd', {}, `${platformName(device.platform)} (${device.method})`),
      h('dt', {}, 'First attested'), h('dd', {}, when(device.firstSeenAt, '')),
      h('dt', {}, 'Last attested'), h('dd', {}, when(device.lastAttestedAt, '')),
      h('dt', {}, 'Last seen'), h('dd', { 'data-testid': 'device-last-seen' }, when(device.lastSeenAt, 'no request in the request log')),
      h('dt', {}, 'State'), h('dd', { 'data-testid': 'device-state' }, device.revokedAt ? badge(`revoked ${new Date(device.revokedAt).toLocaleString()}`, 'bad') : badge('active', 'ok')),
    ),
    device.revokedAt ? null : h('p', {}, revokeDeviceButton(app, device.deviceId)),
    h('h2', {}, 'Traffic'),
    windowForm,
    traffic,
    h('h2', {}, 'Latest requests and sessions'),
    stackTable(
      ['Time', 'Route', 'Status', 'Error', 'Latency', 'Frames in / out (audio)', 'Tokens in / out'],
      log.requests.map((entry) => [
        new Date(entry.createdAt).toLocaleString(),
        isSession(entry) ? sessionRoute(entry) : h('span', {}, h('span', { class: 'muted' }, entry.provider), ' ', h('code', { title: entry.requestId ?? '' }, `${entry.method ?? ''} ${entry.route ?? ''}`.trim())),
        isSession(entry) ? sessionStatus(entry.session) : badge(String(entry.status), entry.status < 400 && !entry.errorType ? 'ok' : 'bad'),
        entry.errorType ? `${entry.errorType}${entry.reason ? ` (${entry.reason})` : ''}` : entry.status >= 400 ? 'providerError' : '',
        duration(entry.latencyMs),
        isSession(entry) ? frames(entry.session) : '',
        entry.inputTokens === null || entry.inputTokens === undefined ? '' : `${entry.inputTokens} / ${entry.outputTokens ?? 0}`,
      ]),
      log.requests.length ? undefined : 'No request from this device in the request log.',
      'device-requests-list',
    ),
    h('p', {}, h('a', { href: `#/apps/${app.id}/requests?device=${id}` }, 'All requests of this device in the request log')),
  );
}

