/**
 * An app's whole policy on one page: how devices prove themselves, which providers and routes they reach, and the
 * limits and budgets they spend within. Each setting says in one line what it does; each section saves on its own.
 */
import { api, type App } from '../api.js';
import { checkbox, field, h } from '../dom.js';
import { refresh } from '../state.js';
import { onSubmit, say, text } from '../ui.js';
import { tokenBudgetFieldset, tokenBudgetPatch } from './budgets.js';
import { routesSection } from './policy-routes.js';
import { sessionsSection, usersSection } from './policy-sessions-users.js';

const select = (name: string, current: unknown, options: ReadonlyArray<readonly [string, string]>) =>
  h('select', { name }, ...options.map(([value, label]) => h('option', { value, selected: current === value }, label)));

function attestationSection(app: App): HTMLFormElement {
  const settings = app.settings;
  const form = h(
    'form',
    { 'aria-label': 'App settings' },
    field('Name', h('input', { name: 'name', value: app.name, required: true }), 'Shown in the dashboard and the audit log.'),
    field('Apple app id (TEAMID.BUNDLE)', h('input', { name: 'appleAppId', value: text(settings.appleAppId), placeholder: 'ABCDE12345.com.example.app' }), 'App Attest keys must come from this app.'),
    field('Android package', h('input', { name: 'androidPackage', value: text(settings.androidPackage), placeholder: 'com.example.app' }), 'Play Integrity and key attestation must name this package.'),
    field('Android signing certificate SHA-256', h('input', { name: 'androidCertSha256', value: text(settings.androidCertSha256) }), 'The app must be signed with this certificate.'),
    checkbox('Allow development attestation (refused in production)', 'allowDevelopmentAttestation', settings.allowDevelopmentAttestation === true),
    checkbox('Accept App Attest keys from Xcode’s development environment (refused in production)', 'allowAppAttestDevelopment', settings.allowAppAttestDevelopment === true),
    field('Assertion mode (App Attest)', select('assertionMode', settings.assertionMode, [['exchange', 'When a device token is issued or refreshed'], ['every-request', 'On every request (Tollgate-Assertion)']]), 'Every request costs one signature on the device, and proves each one.'),
    field('Play Integrity device verdict required', select('playIntegrityDeviceVerdict', settings.playIntegrityDeviceVerdict, [['MEETS_BASIC_INTEGRITY', 'MEETS_BASIC_INTEGRITY'], ['MEETS_DEVICE_INTEGRITY', 'MEETS_DEVICE_INTEGRITY'], ['MEETS_STRONG_INTEGRITY', 'MEETS_STRONG_INTEGRITY']]), 'Stronger verdicts refuse rooted and uncertified devices.'),
    field(
      'Attestation mode',
      select('attestationMode', settings.attestationMode ?? 'enforce', [['enforce', 'Enforce: refuse requests without a valid device token'], ['monitor', 'Monitor only: forward them and count them as unverified (rollout)']]),
      'Ship the SDK in monitor mode, watch verified against unverified traffic under Usage, then enforce. Revoked devices are refused in both modes.',
    ),
    field('Monitor only these providers (comma-separated slugs; empty: all)', h('input', { name: 'monitorProviders', value: ((settings.monitorProviders as string[] | undefined) ?? []).join(', ') }), 'Other providers stay enforced during the rollout.'),
    checkbox('Allow monitor mode on a production gateway (explicit opt-in)', 'allowMonitorInProduction', settings.allowMonitorInProduction === true),
    field('Device token lifetime (seconds)', h('input', { name: 'deviceTokenTtlSeconds', type: 'number', min: 60, value: text(settings.deviceTokenTtlSeconds) }), 'How long a device token works before the SDK refreshes it; empty for 1 hour.'),
    h('div', { class: 'sticky-save' }, h('button', { type: 'submit', class: 'primary' }, 'Save settings')),
  );
  return onSubmit(form, async (values) => {
    const patch: Record<string, unknown> = {
      name: values.name,
      allowDevelopmentAttestation: values.allowDevelopmentAttestation,
      allowAppAttestDevelopment: values.allowAppAttestDevelopment,
      assertionMode: values.assertionMode,
      playIntegrityDeviceVerdict: values.playIntegrityDeviceVerdict,
      attestationMode: values.attestationMode,
      allowMonitorInProduction: values.allowMonitorInProduction,
    };
    const monitorProviders = String(values.monitorProviders).split(',').map((slug) => slug.trim()).filter(Boolean);
    patch.monitorProviders = monitorProviders.length ? monitorProviders : null;
    // An emptied field clears its setting (null), so that what the form shows is what is saved.
    for (const key of ['appleAppId', 'androidPackage', 'androidCertSha256'] as const) patch[key] = values[key] ? values[key] : null;
    patch.deviceTokenTtlSeconds = values.deviceTokenTtlSeconds ? Number(values.deviceTokenTtlSeconds) : null;
    await api('PATCH', `/apps/${app.id}`, patch);
    // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
    await refresh();
    say('Settings saved.');
  });
}

function limitsSection(app: App): HTMLFormElement {
  const settings = app.settings;
  const number = (name: string, label: string, hint: string) => field(label, h('input', { name, type: 'number', min: 1, value: text(settings[name]) }), hint);
  const providerLimits = Object.entries((settings.providerLimitsPerMinute as Record<string, number> | undefined) ?? {}).map(([slug, limit]) => `${slug}=${limit}`).join('\n');
  const form = h(
    'form',
    { 'aria-label': 'Limits' },
    number('deviceLimitPerMinute', 'Requests per minute per device', 'Each attested device; empty for the default (60).'),
    number('appLimitPerMinute', 'Requests per minute for the app', 'All devices together; empty for the default (600).'),
    number('deviceDailyQuota', 'Requests per day per device', 'Rolling 24 hours; empty for none.'),
    number('appDailyQuota', 'Requests per day for the app', 'Rolling 24 hours; empty for none.'),
    number('maxConcurrentStreamsPerDevice', 'Open streams per device', 'Concurrent streaming responses (and realtime sessions) of one device.'),
    field('Per-provider limits (one slug=requests per minute a line)', h('textarea', { name: 'providerLimitsPerMinute', rows: 3 }, providerLimits), 'All devices together, per provider.'),
    tokenBudgetFieldset(settings),
    h('div', { class: 'sticky-save' }, h('button', { type: 'submit', class: 'primary' }, 'Save limits')),
  );
  return onSubmit(form, async (values) => {
    const patch: Record<string, unknown> = {};
    // An emptied field clears its limit (null: the default for per-minute limits, none for quotas).
    for (const key of ['deviceLimitPerMinute', 'appLimitPerMinute', 'deviceDailyQuota', 'appDailyQuota', 'maxConcurrentStreamsPerDevice']) {
      patch[key] = values[key] === '' ? null : Number(values[key]);
    }
    const limits: Record<string, number> = {};
    for (const line of String(values.providerLimitsPerMinute).split('\n').map((entry) => entry.trim()).filter(Boolean)) {
      const [slug, limit] = line.split('=').map((part) => part.trim());
      limits[slug ?? ''] = Number(limit);
    }
    patch.providerLimitsPerMinute = Object.keys(limits).length ? limits : null;
    Object.assign(patch, tokenBudgetPatch(values));
    await api('PATCH', `/apps/${app.id}`, patch);
    // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
    await refresh();
    say('Limits saved.');
  });
}

export async function policyTab(app: App): Promise<(Node | null)[]> {
  const contents = h('nav', { class: 'section-links', 'aria-label': 'Policy sections' }, h('a', { href: '#section-attestation' }, 'Attestation'), h('a', { href: '#section-routes' }, 'Providers and routes'), h('a', { href: '#section-limits' }, 'Limits and budgets'), h('a', { href: '#section-sessions' }, 'Realtime sessions'), h('a', { href: '#section-users' }, 'Signed-in users'));
  // In-page links scroll to their section without changing the hash route.
  contents.addEventListener('click', (event) => {
    const target = (event.target as HTMLElement).closest('a');
    if (!target) return;
    event.preventDefault();
    document.getElementById(target.getAttribute('href')!.slice(1))?.scrollIntoView({ block: 'start' });
  });
  return [
    contents,
    h('section', { id: 'section-attestation', 'aria-labelledby': 'heading-attestation' }, h('h2', { id: 'heading-attestation' }, 'Attestation'), attestationSection(app)),
    h('section', { id: 'section-routes', 'aria-labelledby': 'heading-routes' }, h('h2', { id: 'heading-routes' }, 'Providers and routes'), await routesSection(app)),
    h('section', { id: 'section-limits', 'aria-labelledby': 'heading-limits' }, h('h2', { id: 'heading-limits' }, 'Limits and budgets'), limitsSection(app)),
    h('section', { id: 'section-sessions', 'aria-labelledby': 'heading-sessions' }, h('h2', { id: 'heading-sessions' }, 'Realtime sessions'), sessionsSection(app)),
    h('section', { id: 'section-users', 'aria-labelledby': 'heading-users' }, h('h2', { id: 'heading-users' }, 'Signed-in users'), usersSection(app)),
  ];
}
