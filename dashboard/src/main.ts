/**
 * The Tollgate dashboard: apps, secrets (write-only), limits, development tokens and devices, usage charts, and
 * integration code. A single page over the management API (`/v1/admin/*`) with hash routes; every control is a
 * native, labelled form element, so the whole dashboard works from the keyboard.
 */
import { api, ApiError, setCsrfToken, type App, type Device, type DevicePage, type KeyCheck, type Provider, type RequestLog, type Secret, type Session, type Usage, type User } from './api.js';
import { barChart, bucketLabel, timeBuckets } from './charts.js';
import { checkbox, field, formValues, h, stackTable, table } from './dom.js';
import type { Price } from './api.js';

const main = document.getElementById('main') as HTMLElement;
const status = document.getElementById('status') as HTMLElement;
let session: Session | null = null;
let providers: Provider[] | null = null;

function say(message: string): void {
  status.textContent = message;
}

/** Shows a page: replaces the main region and moves focus to its heading. */
function show(title: string, ...content: (Node | null)[]): void {
  document.title = `${title} · Tollgate`;
  const heading = h('h1', { tabindex: -1 }, title);
  main.replaceChildren(heading, ...content.filter((node): node is Node => node !== null));
  heading.focus();
}

/** What the forms call each API field, so that an error names the control the operator sees, not an internal name. */
const FIELD_LABELS: Record<string, string> = {
  name: 'Name', appleAppId: 'Apple app id', androidPackage: 'Android package', androidCertSha256: 'Android signing certificate',
  deviceTokenTtlSeconds: 'Device token lifetime', allowedProviders: 'Allowed providers', allowedRoutes: 'Allowed routes',
  deviceLimitPerMinute: 'Requests per minute per device', appLimitPerMinute: 'Requests per minute for the app',
  deviceDailyQuota: 'Requests per day per device', appDailyQuota: 'Requests per day for the app', maxConcurrentStreamsPerDevice: 'Open streams per device',
  providerLimitsPerMinute: 'Per-provider limits', deviceDailyTokens: 'Tokens per day per device', appDailyTokens: 'Tokens per day for the app',
  providerDailyTokens: 'Per-provider token budgets', value: 'Key', baseUrl: 'Base URL', username: 'User name', password: 'Password',
  currentPassword: 'Current password', newPassword: 'New password', graceHours: 'Grace period', label: 'Label',
};

/** A validator message without its leading field name ("deviceLimitPerMinute must be …" → "must be …"). */
function fieldMessage(name: string, message: string): string {
  return message.startsWith(`${name} `) ? message.slice(name.length + 1) : message;
}

function errorBox(error: unknown): HTMLElement {
  if (error instanceof ApiError) {
    const fields = Object.entries(error.body.fields ?? {});
    // With field errors, list each once under the label the operator sees; the summary sentence would repeat them.
    if (fields.length) {
      return h('div', { class: 'error', role: 'alert' }, 'Please correct:', h('ul', {}, ...fields.map(([name, messages]) => h('li', {}, `${FIELD_LABELS[name] ?? name}: ${messages.map((message) => fieldMessage(name, message)).join('; ')}`))));
    }
    return h('div', { class: 'error', role: 'alert' }, error.body.message);
  }
  // fetch() rejects with a bare TypeError ("Failed to fetch") when the gateway cannot be reached at all.
  if (error instanceof TypeError) return h('div', { class: 'error', role: 'alert' }, 'The gateway cannot be reached. Check that it is running and that this page points at it, then try again.');
  return h('div', { class: 'error', role: 'alert' }, error instanceof Error ? error.message : String(error));
}

/** A button that copies `text` to the clipboard and says so. */
function copyButton(text: string, label = 'Copy'): HTMLButtonElement {
  const element = h('button', { type: 'button', class: 'copy' }, label);
  element.addEventListener('click', () => {
    void navigator.clipboard?.writeText(text).then(
      () => {
        element.textContent = 'Copied';
        say('Copied to the clipboard.');
        setTimeout(() => (element.textContent = label), 2000);
      },
      () => say('Copying was refused by the browser: select the text and copy it.'),
    );
  });
  return element;
}

function badge(text: string, tone: 'ok' | 'bad' | 'muted'): HTMLElement {
  return h('span', { class: `badge ${tone}` }, text);
}

/** Wires a form: on submit, runs `action`; shows its error next to the form; changes nothing on failure. */
function onSubmit(form: HTMLFormElement, action: (values: Record<string, string | boolean>) => Promise<void>): HTMLFormElement {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    form.querySelector('.error')?.remove();
    // The last action's message ("Settings saved.") must not stand for this one while it runs.
    say('');
    const button = form.querySelector('button[type="submit"]') as HTMLButtonElement | null;
    if (button) button.disabled = true;
    action(formValues(form))
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 401 && session) return signedOut();
        form.prepend(errorBox(error));
      })
      .finally(() => {
        if (button) button.disabled = false;
      });
  });
  return form;
}

function button(label: string, action: () => Promise<void>, className = '', confirmText?: string): HTMLButtonElement {
  const element = h('button', { type: 'button', class: className }, label);
  element.addEventListener('click', () => {
    if (confirmText && !window.confirm(confirmText)) return;
    element.disabled = true;
    action()
      .catch((error: unknown) => element.after(errorBox(error)))
      .finally(() => {
        element.disabled = false;
      });
  });
  return element;
}

/**
 * A value shown once (a new token): it cannot be shown again, so it stays on screen, above the page, across actions and
 * page changes, until the operator dismisses it.
 */
function once(label: string, value: string): void {
  const box = h('div', { class: 'once', role: 'alert', 'data-testid': 'shown-once' }, h('strong', {}, label), h('p', {}, 'Copy it now: it will not be shown again.'), h('code', {}, value), ' ', copyButton(value));
  box.append(' ', button('I have copied it', async () => box.remove()));
  document.getElementById('once')?.append(box);
}

async function loadProviders(): Promise<Provider[]> {
  providers ??= await api<Provider[]>('GET', '/providers');
  return providers;
}

// Sign-in, set-up, sign-out.

function signInPage(): void {
  document.getElementById('top')!.hidden = true;
  document.getElementById('who')!.textContent = '';
  const form = h(
    'form',
    { 'aria-label': 'Sign in' },
    field('User name', h('input', { name: 'username', autocomplete: 'username', required: true })),
    field('Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true })),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  );
  show('Sign in to Tollgate', h('p', { class: 'muted' }, 'First time? Open the set-up link the server printed when it started.'), onSubmit(form, async (values) => {
    session = await api<Session>('POST', '/session', { username: values.username, password: values.password });
    setCsrfToken(session.csrfToken);
    await route();
  }));
}

function setupPage(token: string): void {
  document.getElementById('top')!.hidden = true;
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
    session = await api<Session>('POST', '/setup', { setupToken: token, username: values.username, password: values.password });
    setCsrfToken(session.csrfToken);
    history.replaceState(null, '', '/dashboard/#/apps');
    await route();
  }));
}

function signedOut(): void {
  session = null;
  signInPage();
}

document.getElementById('sign-out')!.addEventListener('click', () => {
  if (!session) return signedOut();
  void api('DELETE', '/session').catch(() => undefined).finally(signedOut);
});

// Apps.

async function appsPage(): Promise<void> {
  const apps = await api<App[]>('GET', '/apps');
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Create an app' },
    field('App name', h('input', { name: 'name', required: true, maxlength: 200 })),
    checkbox('Allow development attestation (simulators, emulators)', 'allowDevelopmentAttestation', true),
    h('button', { type: 'submit', class: 'primary' }, 'Create app'),
  );
  show(
    'Apps',
    table(
      ['Name', 'Status', 'App token', 'Created'],
      apps.map((app) => [h('a', { href: `#/apps/${app.id}` }, app.name), badge(app.status, app.status === 'active' ? 'ok' : 'bad'), h('code', {}, app.tokenHint), new Date(app.createdAt).toLocaleString()]),
      apps.length ? undefined : 'No apps yet: create the first one below.',
    ),
    h('h2', {}, 'Create an app'),
    onSubmit(form, async (values) => {
      const app = await api<App & { appToken: string }>('POST', '/apps', { name: values.name, allowDevelopmentAttestation: values.allowDevelopmentAttestation });
      once(`App token of ${app.name}`, app.appToken);
      location.hash = `#/apps/${app.id}`;
    }),
  );
}

const TABS: Array<[string, string]> = [
  ['', 'Overview'],
  ['secrets', 'Secrets'],
  ['limits', 'Limits'],
  ['routes', 'Routes'],
  ['devices', 'Devices'],
  ['requests', 'Requests'],
  ['usage', 'Usage'],
  ['integrate', 'Integrate'],
];

function tabs(app: App, current: string): HTMLElement {
  return h('nav', { class: 'tabs', 'aria-label': `${app.name} sections` }, ...TABS.map(([tab, label]) => h('a', { href: `#/apps/${app.id}${tab ? `/${tab}` : ''}`, 'aria-current': tab === current ? 'page' : null }, label)));
}

/** The warning every page of an app in monitor mode shows: unattested requests reach the providers. */
function monitorBanner(app: App): HTMLElement | null {
  if (app.settings.attestationMode !== 'monitor') return null;
  const providers = (app.settings.monitorProviders as string[] | undefined) ?? [];
  return h(
    'div',
    { class: 'warning', role: 'note', 'data-testid': 'monitor-banner' },
    h('strong', {}, 'Monitor mode: '),
    `requests without a valid device token are forwarded${providers.length ? ` (for ${providers.join(', ')})` : ''} and counted as unverified. Watch Usage, then switch to Enforce in the settings below.`,
  );
}

async function appPage(appId: string, tab: string): Promise<void> {
  const app = await api<App>('GET', `/apps/${encodeURIComponent(appId)}`);
  const title = `${app.name}${tab ? ` · ${TABS.find(([key]) => key === tab)?.[1] ?? tab}` : ''}`;
  const page = PAGES[tab.split('?')[0]!];
  if (!page) throw new Error('No such page.');
  show(title, tabs(app, tab.split('?')[0]!), tab ? monitorBanner(app) : null, ...(await page(app)));
}

const text = (value: unknown) => (value === undefined || value === null ? '' : String(value));

const PAGES: Record<string, (app: App) => Promise<(Node | null)[]>> = {
  async ''(app) {
    const settings = h(
      'form',
      { 'aria-label': 'App settings' },
      field('Name', h('input', { name: 'name', value: app.name, required: true })),
      field('Apple app id (TEAMID.BUNDLE)', h('input', { name: 'appleAppId', value: text(app.settings.appleAppId), placeholder: 'ABCDE12345.com.example.app' })),
      field('Android package', h('input', { name: 'androidPackage', value: text(app.settings.androidPackage), placeholder: 'com.example.app' })),
      field('Android signing certificate SHA-256', h('input', { name: 'androidCertSha256', value: text(app.settings.androidCertSha256) })),
      checkbox('Allow development attestation (refused in production)', 'allowDevelopmentAttestation', app.settings.allowDevelopmentAttestation === true),
      checkbox('Accept App Attest keys from Xcode’s development environment (refused in production)', 'allowAppAttestDevelopment', app.settings.allowAppAttestDevelopment === true),
      field(
        'Assertion mode (App Attest)',
        h('select', { name: 'assertionMode' }, ...[['exchange', 'When a device token is issued or refreshed'], ['every-request', 'On every request (Tollgate-Assertion)']].map(([value, label]) => h('option', { value, selected: app.settings.assertionMode === value }, label ?? ''))),
      ),
      field(
        'Play Integrity device verdict required',
        h('select', { name: 'playIntegrityDeviceVerdict' }, ...['MEETS_BASIC_INTEGRITY', 'MEETS_DEVICE_INTEGRITY', 'MEETS_STRONG_INTEGRITY'].map((value) => h('option', { value, selected: app.settings.playIntegrityDeviceVerdict === value }, value))),
      ),
      field(
        'Attestation mode',
        h('select', { name: 'attestationMode' }, ...[['enforce', 'Enforce: refuse requests without a valid device token'], ['monitor', 'Monitor only: forward them and count them as unverified (rollout)']].map(([value, label]) => h('option', { value, selected: (app.settings.attestationMode ?? 'enforce') === value }, label ?? ''))),
        'Ship the SDK in monitor mode, watch verified against unverified traffic under Usage, then enforce. Revoked devices are refused in both modes.',
      ),
      field('Monitor only these providers (comma-separated slugs; empty: all)', h('input', { name: 'monitorProviders', value: ((app.settings.monitorProviders as string[] | undefined) ?? []).join(', ') })),
      checkbox('Allow monitor mode on a production gateway (explicit opt-in)', 'allowMonitorInProduction', app.settings.allowMonitorInProduction === true),
      field('Device token lifetime (seconds)', h('input', { name: 'deviceTokenTtlSeconds', type: 'number', min: 60, value: text(app.settings.deviceTokenTtlSeconds) })),
      field('Allowed providers (comma-separated slugs; empty allows all)', h('input', { name: 'allowedProviders', value: ((app.settings.allowedProviders as string[] | undefined) ?? []).join(', ') })),
      h('button', { type: 'submit', class: 'primary' }, 'Save settings'),
    );
    const rotate = h(
      'form',
      { class: 'inline', 'aria-label': 'Rotate the app token' },
      field(
        'Old token keeps working for',
        h('select', { name: 'graceHours' }, ...[['168', '7 days (ship the new token in an app update)'], ['720', '30 days'], ['24', '1 day'], ['1', '1 hour'], ['0', 'No grace: it stops at once']].map(([value, label]) => h('option', { value }, label ?? ''))),
      ),
      h('button', { type: 'submit' }, 'Rotate app token'),
    );
    return [
      monitorBanner(app),
      table(['', ''], [
        ['Id', h('span', {}, h('code', {}, app.id), ' ', copyButton(app.id, 'Copy id'))],
        ['Status', badge(app.status, app.status === 'active' ? 'ok' : 'bad')],
        ['App token', h('span', { 'data-testid': 'token-current' }, h('code', {}, app.tokenHint), ' ', badge('active', 'ok'))],
        ...(app.previousToken
          ? [['Previous app token', h('span', { 'data-testid': 'token-previous' }, h('code', {}, app.previousToken.tokenHint), ' ', badge(`works until ${new Date(app.previousToken.expiresAt).toLocaleString()}`, 'muted'))]]
          : []),
      ]),
      onSubmit(rotate, async (values) => {
        const graceHours = Number(values.graceHours);
        if (!window.confirm(graceHours === 0 ? 'The current app token stops working at once. Rotate?' : `The current app token keeps working for ${graceHours} hours. Rotate?`)) return;
        const result = await api<{ appToken: string }>('POST', `/apps/${app.id}/rotate-token`, { graceHours });
        once('New app token', result.appToken);
        await route();
      }),
      h(
        'p',
        {},
        app.status === 'active'
          ? button('Disable app', async () => { await api('POST', `/apps/${app.id}/disable`); await route(); }, 'danger', 'Requests with this app’s token will be refused. Disable?')
          : button('Enable app', async () => { await api('POST', `/apps/${app.id}/enable`); await route(); }),
        ' ',
        button('Delete app', async () => { await api('DELETE', `/apps/${app.id}`); location.hash = '#/apps'; }, 'danger', 'Delete this app with its secrets, tokens and devices?'),
      ),
      h('h2', {}, 'Settings and attestation policy'),
      onSubmit(settings, async (values) => {
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
        // Empty means "no narrowing" (null clears the setting); an empty list would allow nothing.
        const allowedProviders = String(values.allowedProviders).split(',').map((slug) => slug.trim()).filter(Boolean);
        patch.allowedProviders = allowedProviders.length ? allowedProviders : null;
        await api('PATCH', `/apps/${app.id}`, patch);
        say('Settings saved.');
        await route();
      }),
    ];
  },

  async secrets(app) {
    const [secrets, catalog, attestationSecrets] = await Promise.all([
      api<Secret[]>('GET', `/apps/${app.id}/secrets`),
      loadProviders(),
      api<Array<{ name: string; masked: string; updatedAt: string }>>('GET', `/apps/${app.id}/attestation-secrets`),
    ]);
    const attestationForm = h(
      'form',
      { 'aria-label': 'Set an attestation credential' },
      field('Credential', h('select', { name: 'name' }, ...[['play-integrity-decryption-key', 'Play Integrity decryption key (base64)'], ['play-integrity-verification-key', 'Play Integrity verification key (base64)'], ['play-integrity-service-account', 'Service-account JSON (standard requests)']].map(([value, label]) => h('option', { value }, label ?? '')))),
      field('Value', h('textarea', { name: 'value', rows: 3, autocomplete: 'off', required: true }), 'Stored encrypted; never shown again.'),
      h('button', { type: 'submit' }, 'Save credential'),
    );
    const form = h(
      'form',
      { 'aria-label': 'Set a provider key' },
      field('Provider', h('select', { name: 'provider', required: true }, ...catalog.map((provider) => h('option', { value: provider.slug }, `${provider.name} (${provider.slug})`)))),
      field('Key', h('input', { name: 'value', type: 'password', autocomplete: 'off', required: true }), 'Stored encrypted; it is never shown again, only masked.'),
      field('Base URL (per-tenant providers such as Azure OpenAI only)', h('input', { name: 'baseUrl', type: 'url', placeholder: 'https://my-resource.openai.azure.com' })),
      h('button', { type: 'submit', class: 'primary' }, 'Save key'),
    );
    return [
      stackTable(
        ['Provider', 'Key', 'Base URL', 'Updated', 'Last used', 'Check', ''],
        secrets.map((secret) => [
          secret.provider,
          h('code', { 'data-testid': `masked-${secret.provider}` }, secret.masked),
          secret.baseUrl ?? '',
          new Date(secret.updatedAt).toLocaleString(),
          keyLastUsed(secret),
          keyCheckControl(app, secret, catalog),
          button(`Delete ${secret.provider} key`, async () => { await api('DELETE', `/apps/${app.id}/secrets/${secret.provider}`); await route(); }, 'danger', `Delete the ${secret.provider} key?`),
        ]),
        secrets.length ? undefined : 'No provider keys yet.',
        'secret-list',
      ),
      h('h2', {}, 'Set a provider key'),
      onSubmit(form, async (values) => {
        await api('PUT', `/apps/${app.id}/secrets/${encodeURIComponent(String(values.provider))}`, { value: values.value, ...(values.baseUrl ? { baseUrl: values.baseUrl } : {}) });
        say(`The ${String(values.provider)} key is saved.`);
        await route();
      }),
      h('h2', {}, 'Attestation credentials (Play Integrity)'),
      table(
        ['Credential', 'Value', 'Updated'],
        attestationSecrets.map((secret) => [secret.name, h('code', {}, secret.masked), new Date(secret.updatedAt).toLocaleString()]),
        attestationSecrets.length ? undefined : 'None yet: Play Integrity needs the keys from Play Console (classic) or a service account (standard).',
      ),
      onSubmit(attestationForm, async (values) => {
        await api('PUT', `/apps/${app.id}/attestation-secrets/${encodeURIComponent(String(values.name))}`, { value: values.value });
        say(`${String(values.name)} is saved.`);
        await route();
      }),
    ];
  },

  async routes(app) {
    const catalog = (await loadProviders()).filter((provider) => provider.accountRoutes.length > 0);
    const opened = new Set((app.settings.openAccountRoutes as string[] | undefined) ?? []);
    const extra = ((app.settings.extraRoutes as Array<{ provider: string; methods: string[]; path: string }> | undefined) ?? [])
      .map((route) => `${route.provider}:${route.methods.join(',')}:${route.path}`)
      .join('\n');
    const form = h(
      'form',
      { 'aria-label': 'Account routes' },
      h(
        'p',
        { class: 'muted' },
        'Account routes list, read or delete data shared by every user of the provider key (files, stored completions, fine-tunes, voice libraries…). ',
        'They are closed by default. Opening them lets every device of this app reach that data.',
      ),
      ...catalog.map((provider) =>
        h(
          'fieldset',
          {},
          h('legend', {}, checkbox(`Open ${provider.name} account routes`, `account:${provider.slug}`, opened.has(provider.slug))),
          h('ul', { class: 'muted' }, ...provider.accountRoutes.map((route) => h('li', {}, h('code', {}, `${route.methods.join(', ')} ${route.path}`), `: ${route.why}`))),
        ),
      ),
      field(
        'Extra routes (one SLUG:METHOD[,METHOD]:PATTERN a line, e.g. openai:GET:evals/**)',
        h('textarea', { name: 'extraRoutes', rows: 3 }, extra),
        'Routes a provider offers that Tollgate does not list yet, for this app only. Path safety rules and the provider’s refused paths still apply.',
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Save routes'),
    );
    return [
      onSubmit(form, async (values) => {
        const open = catalog.filter((provider) => values[`account:${provider.slug}`] === true).map((provider) => provider.slug);
        const routes = String(values.extraRoutes).split('\n').map((line) => line.trim()).filter(Boolean).map((line) => {
          const first = line.indexOf(':');
          const second = first < 0 ? -1 : line.indexOf(':', first + 1);
          if (first <= 0 || second <= first + 1) throw new Error(`"${line}" is not SLUG:METHOD[,METHOD]:PATTERN.`);
          return { provider: line.slice(0, first), methods: line.slice(first + 1, second).split(',').map((method) => method.trim().toUpperCase()).filter(Boolean), path: line.slice(second + 1) };
        });
        await api('PATCH', `/apps/${app.id}`, { openAccountRoutes: open.length ? open : null, extraRoutes: routes.length ? routes : null });
        say('Routes saved.');
        await route();
      }),
    ];
  },

  async limits(app) {
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
      number('maxConcurrentStreamsPerDevice', 'Open streams per device', 'Concurrent streaming responses.'),
      field('Per-provider limits (one slug=requests per minute a line)', h('textarea', { name: 'providerLimitsPerMinute', rows: 3 }, providerLimits)),
      tokenBudgetFieldset(settings),
      field('Allowed routes (one slug or slug/path-prefix a line; empty allows all)', h('textarea', { name: 'allowedRoutes', rows: 3 }, ((settings.allowedRoutes as string[] | undefined) ?? []).join('\n'))),
      h('button', { type: 'submit', class: 'primary' }, 'Save limits'),
    );
    return [
      onSubmit(form, async (values) => {
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
        const allowedRoutes = String(values.allowedRoutes).split('\n').map((entry) => entry.trim()).filter(Boolean);
        patch.allowedRoutes = allowedRoutes.length ? allowedRoutes : null;
        await api('PATCH', `/apps/${app.id}`, patch);
        say('Limits saved.');
        await route();
      }),
    ];
  },

  async devices(app) {
    const tokens = await api<Array<{ id: string; tokenHint: string; label: string | null; createdAt: string; revokedAt: string | null }>>('GET', `/apps/${app.id}/development-tokens`);
    const form = h('form', { class: 'inline', 'aria-label': 'Create a development token' }, field('Label', h('input', { name: 'label', placeholder: 'iPhone simulator' })), h('button', { type: 'submit' }, 'Create development token'));
    return [
      h('h2', {}, 'Devices'),
      ...(await deviceListContent(app)),
      h('h2', {}, 'Development tokens'),
      h('p', { class: 'muted' }, app.settings.allowDevelopmentAttestation ? 'For simulators and emulators, in debug builds only. Refused in production.' : 'Development attestation is off for this app (Overview → settings).'),
      table(
        ['Token', 'Label', 'Created', 'State'],
        tokens.map((token) => [
          h('code', {}, token.tokenHint),
          token.label ?? '',
          new Date(token.createdAt).toLocaleString(),
          token.revokedAt ? badge('revoked', 'bad') : button(`Revoke ${token.tokenHint}`, async () => { await api('POST', `/apps/${app.id}/development-tokens/${token.id}/revoke`); await route(); }, 'danger'),
        ]),
      ),
      onSubmit(form, async (values) => {
        const token = await api<{ developmentToken: string }>('POST', `/apps/${app.id}/development-tokens`, values.label ? { label: values.label } : {});
        once('Development token', token.developmentToken);
        await route();
      }),
    ];
  },

  async requests(app) {
    return requestLogContent(app);
  },

  async usage(app) {
    return usageContent(`/apps/${app.id}/usage`);
  },

  async integrate(app) {
    const [catalog, secrets] = await Promise.all([loadProviders(), api<Secret[]>('GET', `/apps/${app.id}/secrets`)]);
    const output = h('div', { 'aria-live': 'polite' });
    const preferred = secrets[0]?.provider ?? catalog[0]?.slug ?? '';
    const form = h(
      'form',
      { class: 'inline', 'aria-label': 'Integration code' },
      field('Platform', h('select', { name: 'platform' }, ...[['ios', 'iOS (Swift)'], ['android', 'Android (Kotlin)'], ['flutter', 'Flutter (Dart)'], ['react-native', 'React Native']].map(([value, label]) => h('option', { value }, label ?? '')))),
      field('Provider', h('select', { name: 'provider' }, ...catalog.map((provider) => h('option', { value: provider.slug, selected: provider.slug === preferred }, provider.name)))),
      field('Capability', h('select', { name: 'capability' })),
      h('button', { type: 'submit', class: 'primary' }, 'Show code'),
    );
    // Only what the chosen provider offers (no placeholder paths for a capability it lacks).
    const providerSelect = form.querySelector('select[name="provider"]') as HTMLSelectElement;
    const capabilitySelect = form.querySelector('select[name="capability"]') as HTMLSelectElement;
    const fillCapabilities = () => {
      const offered = catalog.find((provider) => provider.slug === providerSelect.value)?.integrationCapabilities ?? [];
      const previous = capabilitySelect.value;
      capabilitySelect.replaceChildren(...offered.map((capability) => h('option', { value: capability, selected: capability === previous }, capability)));
    };
    fillCapabilities();
    providerSelect.addEventListener('change', fillCapabilities);
    let developmentToken = '';
    const block = (testId: string, text: string) => h('div', { class: 'code' }, h('pre', { 'data-testid': testId }, h('code', {}, text)), copyButton(text));
    const render = async (values: Record<string, string | boolean>) => {
      const query = new URLSearchParams({ platform: String(values.platform), provider: String(values.provider), capability: String(values.capability) });
      if (developmentToken) query.set('developmentToken', developmentToken);
      const snippet = await api<{ install: string; configuration: Array<{ file: string; place: string; content: string }>; initializationPlace: string; initialization: string; request: string; generic: boolean; development: boolean }>('GET', `/apps/${app.id}/integration?${query}`);
      const simulator = app.settings.allowDevelopmentAttestation === true
        ? developmentToken
          ? h('p', { class: 'muted' }, 'The code below carries a development token for simulators and emulators, in debug builds only. Production builds attest the real device.')
          : h('p', {}, 'To run this code on a simulator or emulator: ', button('Create a development token for this code', async () => {
              developmentToken = (await api<{ developmentToken: string }>('POST', `/apps/${app.id}/development-tokens`, { label: 'Integrate page' })).developmentToken;
              await render(formValues(form));
            }))
        : h('p', { class: 'muted' }, 'Simulators and emulators cannot attest: allow development attestation in this app’s settings to get a development token.');
      output.replaceChildren(
        h('h2', {}, '1. Install the SDK'),
        block('install', snippet.install),
        h('h2', {}, '2. Tell the SDK where the gateway is'),
        ...snippet.configuration.flatMap((entry) => [h('p', {}, `${entry.file}: ${entry.place}`), block('configuration', entry.content)]),
        h('h2', {}, '3. Initialize at app start'),
        h('p', {}, snippet.initializationPlace),
        simulator,
        block('initialization', snippet.initialization),
        h('h2', {}, '4. Call the provider through the SDK'),
        snippet.generic ? h('p', { class: 'muted' }, 'This provider declares no example for this capability: a generic call is shown; take the path from the provider’s documentation.') : '',
        block('request', snippet.request),
        h('p', { class: 'muted' }, 'Replace at_YOUR_APP_TOKEN with the app token shown when the app was created (or rotated). No provider key belongs in the app.'),
      );
    };
    onSubmit(form, render);
    await render(formValues(form));
    return [form, output];
  },
};

// Token budgets (issue 20): the limits form's fieldset and the part of the patch it makes.

// The labels an error names for the token budget and price fields.
Object.assign(FIELD_LABELS, {
  deviceMinuteTokens: 'Tokens per minute per device',
  appMinuteTokens: 'Tokens per minute for the app',
  providerMinuteTokens: 'Per-provider budgets per minute',
  providerDeviceDailyTokens: 'Per-provider budgets per device',
  provider: 'Provider',
  model: 'Model',
  inputUsdPerMillion: 'Input USD per million tokens',
  outputUsdPerMillion: 'Output USD per million tokens',
});

/** The whole-number budgets: setting, label, hint. */
const TOKEN_BUDGET_NUMBERS: ReadonlyArray<readonly [string, string, string]> = [
  ['deviceDailyTokens', 'Tokens per day per device', 'Input + output tokens as providers report them, per UTC day; empty for none.'],
  ['appDailyTokens', 'Tokens per day for the app', 'All devices together, per UTC day; empty for none.'],
  ['deviceMinuteTokens', 'Tokens per minute per device', 'Per UTC minute: stops a burst long before a day’s budget is gone; empty for none.'],
  ['appMinuteTokens', 'Tokens per minute for the app', 'All devices together, per UTC minute; empty for none.'],
];

/** The per-provider budgets (one `slug=tokens` a line): setting, label, hint. */
const TOKEN_BUDGET_MAPS: ReadonlyArray<readonly [string, string, string]> = [
  ['providerDailyTokens', 'Per-provider token budgets (one slug=tokens per day a line)', 'All devices together, per UTC day.'],
  ['providerMinuteTokens', 'Per-provider budgets per minute (one slug=tokens per minute a line)', 'All devices together, per UTC minute.'],
  ['providerDeviceDailyTokens', 'Per-provider budgets per device (one slug=tokens per day a line)', 'Each device on its own, per UTC day.'],
];

function tokenBudgetFieldset(settings: Record<string, unknown>): HTMLElement {
  return h(
    'fieldset',
    { class: 'budgets', 'data-testid': 'token-budgets' },
    h('legend', {}, 'Token budgets'),
    h('p', { class: 'muted' }, 'Checked before each request against what is already spent: the request that crosses a budget completes, the next is refused (429, token_budget) until its UTC day or minute ends. Answers whose usage the provider does not report count nothing.'),
    ...TOKEN_BUDGET_NUMBERS.map(([name, label, hint]) => field(label, h('input', { name, type: 'number', min: 1, step: 1, value: text(settings[name]) }), hint)),
    ...TOKEN_BUDGET_MAPS.map(([name, label, hint]) => {
      const lines = Object.entries((settings[name] as Record<string, number> | undefined) ?? {}).map(([slug, budget]) => `${slug}=${budget}`).join('\n');
      return field(label, h('textarea', { name, rows: 2 }, lines), hint);
    }),
  );
}

/** An emptied field clears its budget (null); a line that is not `slug=N` is sent as is, for the API to name the field. */
function tokenBudgetPatch(values: Record<string, string | boolean>): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const [name] of TOKEN_BUDGET_NUMBERS) patch[name] = values[name] === '' ? null : Number(values[name]);
  for (const [name] of TOKEN_BUDGET_MAPS) {
    const budgets: Record<string, number | string> = {};
    for (const line of String(values[name] ?? '').split('\n').map((entry) => entry.trim()).filter(Boolean)) {
      const [slug = '', budget = ''] = line.split('=').map((part) => part.trim());
      budgets[slug] = /^\d+$/.test(budget) ? Number(budget) : budget;
    }
    patch[name] = Object.keys(budgets).length ? budgets : null;
  }
  return patch;
}

// Spend and tokens per app and model (issue 20): the usage page's charts beyond requests.

/** Spend per model; on the all-apps page, tokens and spend per app (by name). */
function spendCharts(usage: Usage, appNames: ReadonlyMap<string, string> | null): HTMLElement[] {
  const charts: HTMLElement[] = [];
  if (usage.spend?.byModel.length) {
    charts.push(barChart('chart-spend-models', 'Estimated spend by model', usage.spend.byModel.map((entry) => entry.model), [{ label: 'USD', values: usage.spend.byModel.map((entry) => +entry.usd.toFixed(6)) }], ' $'));
  }
  if (appNames) {
    const name = (appId: string) => appNames.get(appId) ?? appId;
    const byApp = usage.tokens?.byApp ?? [];
    charts.push(
      barChart('chart-tokens-apps', 'Tokens by app', byApp.map((entry) => name(entry.appId)), [
        { label: 'input', values: byApp.map((entry) => entry.inputTokens) },
        { label: 'output', values: byApp.map((entry) => entry.outputTokens), className: 'alt' },
      ]),
    );
    if (usage.spend?.byApp?.length) charts.push(barChart('chart-spend-apps', 'Estimated spend by app', usage.spend.byApp.map((entry) => name(entry.appId)), [{ label: 'USD', values: usage.spend.byApp.map((entry) => +entry.usd.toFixed(6)) }], ' $'));
  }
  return charts;
}

// Prices (issue 20): the operator's price table behind the spend estimates.

async function pricesPage(): Promise<void> {
  const [prices, catalog] = await Promise.all([api<Price[]>('GET', '/prices'), loadProviders()]);
  const providerSelect = h('select', { name: 'provider', required: true }, ...catalog.map((provider) => h('option', { value: provider.slug }, provider.name)));
  const model = h('input', { name: 'model', required: true, maxlength: 200, placeholder: 'gpt-4o-mini' });
  const input = h('input', { name: 'inputUsdPerMillion', type: 'number', min: 0, step: 'any', required: true });
  const output = h('input', { name: 'outputUsdPerMillion', type: 'number', min: 0, step: 'any', required: true });
  const form = h(
    'form',
    { 'aria-label': 'Set a price' },
    field('Provider', providerSelect),
    field('Model', model, 'As the provider reports it; a dated version suffix (-2024-07-18) falls back to the name without it.'),
    field('Input USD per million tokens', input),
    field('Output USD per million tokens', output),
    h('button', { type: 'submit', class: 'primary' }, 'Save price'),
  );
  const edit = (price: Price) => async () => {
    providerSelect.value = price.provider;
    model.value = price.model;
    input.value = String(price.inputUsdPerMillion);
    output.value = String(price.outputUsdPerMillion);
    input.focus();
  };
  const remove = (price: Price) => async () => {
    await api('DELETE', `/prices?provider=${encodeURIComponent(price.provider)}&model=${encodeURIComponent(price.model)}`);
    await pricesPage();
    say(`The price of ${price.model} is removed.`);
  };
  show(
    'Prices',
    h('p', { class: 'muted' }, 'USD per million input and output tokens, per provider and model. The spend estimates under Usage use them at once, for past requests too. Tollgate ships none, so that no stale price is ever shown as fact.'),
    // Four narrow columns, so that the table fits a 390 px screen whole.
    table(
      ['Model', 'USD per million tokens', 'Updated', ''],
      prices.map((price) => {
        const editButton = button('Edit', edit(price));
        editButton.setAttribute('aria-label', `Edit ${price.model}`);
        const deleteButton = button('Delete', remove(price), 'danger', `Remove the price of ${price.provider} ${price.model}?`);
        deleteButton.setAttribute('aria-label', `Delete ${price.model}`);
        return [
          h('span', {}, h('span', { class: 'muted' }, price.provider), h('br'), h('code', {}, price.model)),
          `${price.inputUsdPerMillion} input, ${price.outputUsdPerMillion} output`,
          h('span', { title: new Date(price.updatedAt).toLocaleString() }, new Date(price.updatedAt).toLocaleDateString()),
          h('span', { class: 'actions' }, editButton, ' ', deleteButton),
        ];
      }),
      prices.length ? undefined : 'No prices yet: spend is not estimated until one is set below.',
    ),
    h('h2', {}, 'Set a price'),
    onSubmit(form, async (values) => {
      const price = await api<Price>('PUT', '/prices', { provider: values.provider, model: values.model, inputUsdPerMillion: Number(values.inputUsdPerMillion), outputUsdPerMillion: Number(values.outputUsdPerMillion) });
      await pricesPage();
      say(`The price of ${price.model} is saved.`);
    }),
  );
}

async function usageContent(path: string): Promise<Node[]> {
  const container = h('div', {});
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Usage window' },
    field('Window', h('select', { name: 'minutes' }, ...[['60', 'Last hour'], ['360', 'Last 6 hours'], ['1440', 'Last day'], ['10080', 'Last 7 days']].map(([value, label]) => h('option', { value }, label ?? '')))),
    h('button', { type: 'submit' }, 'Refresh now'),
  );
  const updated = h('p', { class: 'muted', 'data-testid': 'updated' });
  // The all-apps page names apps in its per-app charts.
  const appNames = path === '/usage' ? new Map((await api<App[]>('GET', '/apps')).map((app) => [app.id, app.name])) : null;
  let current: Record<string, string | boolean> = {};
  const render = async (values: Record<string, string | boolean>) => {
    current = values;
    const minutes = Number(values.minutes);
    const usage = await api<Usage>('GET', `${path}?minutes=${minutes}`);
    // A continuous time axis: the whole window in equal buckets, quiet ones included.
    const buckets = timeBuckets(usage.requestsPerMinute, minutes, Date.now());
    const bucketMinutes = (buckets[1]?.start ?? 60_000) - (buckets[0]?.start ?? 0);
    const tokens = usage.tokens ?? { inputTokens: 0, outputTokens: 0, cachedTokens: 0, reasoningTokens: 0, byDevice: [], byProvider: [], byModel: [] };
    container.replaceChildren(
      h('p', { 'data-testid': 'total-requests' }, `${usage.totalRequests} requests in this window.`),
      h('p', { 'data-testid': 'total-tokens' }, `${tokens.inputTokens} input and ${tokens.outputTokens} output tokens reported by the providers.`),
      h(
        'p',
        { 'data-testid': 'total-spend' },
        usage.spend
          ? `Estimated spend: $${usage.spend.totalUsd.toFixed(4)}${usage.spend.unpricedTokens ? ` (${usage.spend.unpricedTokens} tokens of models without a price not counted)` : ''}.`
          : 'No prices set: spend is not estimated (set them under Prices).',
      ),
      h(
        'div',
        { class: 'charts' },
        barChart('chart-requests', bucketMinutes <= 60_000 ? 'Requests per minute' : `Requests per ${bucketMinutes / 60_000} minutes`, buckets.map((bucket) => bucketLabel(bucket.start, minutes)), [
          { label: 'requests', values: buckets.map((bucket) => bucket.requests) },
          { label: 'errors', values: buckets.map((bucket) => bucket.errors), className: 'bad' },
          { label: 'token budget refusals', values: buckets.map((bucket) => bucket.budgetRefusals), className: 'budget' },
        ]),
        barChart('chart-errors', 'Errors by type', usage.errorsByType.map((entry) => entry.type), [{ label: 'errors', values: usage.errorsByType.map((entry) => entry.count), className: 'bad' }]),
        barChart('chart-latency', 'Latency per provider (p50, p95)', usage.latencyByProvider.map((entry) => entry.provider), [
          { label: 'p50', values: usage.latencyByProvider.map((entry) => entry.p50Ms) },
          { label: 'p95', values: usage.latencyByProvider.map((entry) => entry.p95Ms), className: 'alt' },
        ], ' ms'),
        barChart('chart-devices', 'Top devices', usage.topDevices.map((entry) => entry.deviceId), [{ label: 'requests', values: usage.topDevices.map((entry) => entry.requests) }]),
        barChart('chart-verification', 'Verified and unverified requests', ['verified', 'unverified'], [{ label: 'requests', values: [usage.verification.verified, usage.verification.unverified] }]),
        barChart('chart-tokens-devices', 'Top devices by tokens', tokens.byDevice.map((entry) => entry.deviceId), [
          { label: 'input', values: tokens.byDevice.map((entry) => entry.inputTokens) },
          { label: 'output', values: tokens.byDevice.map((entry) => entry.outputTokens), className: 'alt' },
        ]),
        ...(usage.spend && usage.spend.byDevice.length
          ? [barChart('chart-spend-devices', 'Estimated spend by device', usage.spend.byDevice.map((entry) => entry.deviceId), [{ label: 'USD', values: usage.spend.byDevice.map((entry) => +entry.usd.toFixed(6)) }], ' $')]
          : []),
        barChart('chart-tokens-models', 'Tokens by model', tokens.byModel.map((entry) => entry.model), [
          { label: 'input', values: tokens.byModel.map((entry) => entry.inputTokens) },
          { label: 'output', values: tokens.byModel.map((entry) => entry.outputTokens), className: 'alt' },
        ]),
        ...spendCharts(usage, appNames),
      ),
    );
  };
  onSubmit(form, render);
  await render(formValues(form));
  updated.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshes every 30 s.`;
  // Auto-refresh while this page is shown (the timer ends itself once the page is replaced).
  const timer = setInterval(() => {
    if (!container.isConnected) return clearInterval(timer);
    if (document.hidden) return;
    render(current).then(
      () => (updated.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshes every 30 s.`),
      () => (updated.textContent = 'Refresh failed; retrying in 30 s.'),
    );
  }, 30_000);
  return [form, updated, container];
}

async function adminKeysPage(): Promise<void> {
  const keys = await api<Array<{ id: string; name: string; keyHint: string; createdAt: string; revokedAt: string | null }>>('GET', '/admin-keys');
  const form = h('form', { class: 'inline', 'aria-label': 'Create an admin key' }, field('Name', h('input', { name: 'name', required: true })), h('button', { type: 'submit', class: 'primary' }, 'Create admin key'));
  show(
    'Admin keys',
    h('p', { class: 'muted' }, 'For the management API and the assistant server (Authorization: Bearer ak_…).'),
    table(
      ['Name', 'Key', 'Created', 'State'],
      keys.map((key) => [
        key.name,
        h('code', {}, key.keyHint),
        new Date(key.createdAt).toLocaleString(),
        key.revokedAt ? badge('revoked', 'bad') : button(`Revoke ${key.name}`, async () => { await api('DELETE', `/admin-keys/${key.id}`); await route(); }, 'danger', `Revoke the key ${key.name}?`),
      ]),
    ),
    onSubmit(form, async (values) => {
      const key = await api<{ adminKey: string; name: string }>('POST', '/admin-keys', { name: values.name });
      once(`Admin key ${key.name}`, key.adminKey);
      await adminKeysPage();
    }),
  );
}

type AuditRow = { id: number; actor: string; action: string; target: string | null; details: Record<string, unknown> | null; createdAt: string };
/** Audit entries fetched per request; older ones are fetched when the pages shown run out. */
const AUDIT_BATCH = 500;

async function auditPage(): Promise<void> {
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

async function usersPage(): Promise<void> {
  const users = await api<User[]>('GET', '/users');
  const add = h(
    'form',
    { 'aria-label': 'Add an administrator' },
    field('User name', h('input', { name: 'username', autocomplete: 'off', required: true })),
    field('Password', h('input', { name: 'password', type: 'password', autocomplete: 'new-password', required: true, minlength: 12 }), 'At least 12 characters. Share it with the person safely; they can change it.'),
    h('button', { type: 'submit', class: 'primary' }, 'Add administrator'),
  );
  const change = h(
    'form',
    { 'aria-label': 'Change your password' },
    field('Current password', h('input', { name: 'currentPassword', type: 'password', autocomplete: 'current-password', required: true })),
    field('New password', h('input', { name: 'newPassword', type: 'password', autocomplete: 'new-password', required: true, minlength: 12 }), 'At least 12 characters. Your other sessions end.'),
    h('button', { type: 'submit' }, 'Change password'),
  );
  show(
    'Administrators',
    table(
      ['User', 'Added', 'State', ''],
      users.map((user) => [
        user.id === session?.user.id ? h('span', {}, user.username, ' ', badge('you', 'muted')) : user.username,
        new Date(user.createdAt).toLocaleString(),
        user.lockedUntil ? badge(`locked until ${new Date(user.lockedUntil).toLocaleTimeString()}`, 'bad') : badge('active', 'ok'),
        user.id === session?.user.id ? '' : button(`Remove ${user.username}`, async () => { await api('DELETE', `/users/${encodeURIComponent(user.id)}`); say(`${user.username} is removed.`); await route(); }, 'danger', `Remove ${user.username}? Their sessions end at once.`),
      ]),
    ),
    h('h2', {}, 'Add an administrator'),
    onSubmit(add, async (values) => {
      await api('POST', '/users', { username: values.username, password: values.password });
      say(`${String(values.username)} can now sign in.`);
      await route();
    }),
    h('h2', {}, 'Change your password'),
    onSubmit(change, async (values) => {
      await api('POST', '/session/password', { currentPassword: values.currentPassword, newPassword: values.newPassword });
      change.reset();
      say('Your password is changed; your other sessions have ended.');
    }),
  );
}

/** The request log of an app: filters, paging by cursor (newest first), CSV export of what the filters select. */
async function requestLogContent(app: App): Promise<Node[]> {
  const initial = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const catalog = await loadProviders();
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Filter requests' },
    field('Device', h('input', { name: 'device', value: initial.get('device') ?? '', placeholder: 'device id' })),
    field('Provider', h('select', { name: 'provider' }, h('option', { value: '' }, 'any'), ...catalog.map((provider) => h('option', { value: provider.slug, selected: initial.get('provider') === provider.slug }, provider.name)))),
    field('Outcome', h('select', { name: 'outcome' }, ...[['', 'any'], ['ok', 'succeeded'], ['error', 'failed']].map(([value, label]) => h('option', { value, selected: (initial.get('outcome') ?? '') === value }, label ?? '')))),
    field('Search', h('input', { name: 'q', type: 'search', value: initial.get('q') ?? '', placeholder: 'route, request id or reason' })),
    h('button', { type: 'submit', class: 'primary' }, 'Show'),
  );
  const output = h('div', { 'aria-live': 'polite' });
  const cursors: Array<number | null> = [null];
  const filters = () => {
    const values = formValues(form);
    const query = new URLSearchParams();
    for (const key of ['device', 'provider', 'outcome', 'q']) if (values[key]) query.set(key, String(values[key]));
    return query;
  };
  const render = async () => {
    const query = filters();
    const before = cursors[cursors.length - 1];
    if (before) query.set('before', String(before));
    query.set('limit', '50');
    const log = await api<RequestLog>('GET', `/apps/${app.id}/requests?${query}`);
    const exportQuery = filters();
    output.replaceChildren(
      table(
        ['Time', 'Device', 'Provider', 'Route', 'Status', 'Error', 'Latency', 'Bytes in / out'],
        log.requests.map((entry) => [
          new Date(entry.createdAt).toLocaleString(),
          entry.deviceId ? h('code', {}, entry.deviceId) : '',
          entry.provider,
          h('code', { title: entry.requestId ?? '' }, `${entry.method ?? ''} ${entry.route ?? ''}`.trim()),
          badge(String(entry.status), entry.status < 400 && !entry.errorType ? 'ok' : 'bad'),
          entry.errorType ? `${entry.errorType}${entry.reason ? ` (${entry.reason})` : ''}` : entry.status >= 400 ? 'providerError' : '',
          `${entry.latencyMs} ms`,
          `${entry.bytesIn} / ${entry.bytesOut}${entry.truncated ? ' (cut)' : ''}`,
        ]),
        log.requests.length ? undefined : 'No request matches these filters.',
      ),
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
  return [h('p', { class: 'muted' }, 'One row per request through the gateway, newest first. Kept for TOLLGATE_REQUEST_LOG_RETENTION_DAYS (default 30).'), form, output];
}

// Provider keys: last used and "test this key" (issue 19).

/** When the key was last used: the last request forwarded with it (written with each usage batch). */
function keyLastUsed(secret: Secret): HTMLElement {
  const testId = `last-used-${secret.provider}`;
  return secret.lastUsedAt
    ? h('time', { datetime: secret.lastUsedAt, 'data-testid': testId }, new Date(secret.lastUsedAt).toLocaleString())
    : h('span', { class: 'muted', 'data-testid': testId }, 'not used yet');
}

const KEY_CHECK_OUTCOMES: Record<KeyCheck['outcome'], string> = {
  ok: 'Works',
  rejected: 'Rejected by the provider',
  unexpected: 'Unexpected answer',
  unreachable: 'Provider unreachable',
};

/** "Test this key": one harmless request the provider documents, sent by the gateway with the stored key. */
function keyCheckControl(app: App, secret: Secret, catalog: Provider[]): HTMLElement {
  const check = catalog.find((provider) => provider.slug === secret.provider)?.keyCheck;
  if (!check) return h('span', { class: 'muted', title: 'This provider’s manifest declares no harmless request to test a key with.' }, 'no key check');
  const result = h('span', { class: 'key-check', role: 'status', 'data-testid': `key-check-${secret.provider}` });
  const run = button(`Test ${secret.provider} key`, async () => {
    result.className = 'key-check';
    result.textContent = 'Testing…';
    try {
      const outcome = await api<KeyCheck>('POST', `/apps/${app.id}/secrets/${encodeURIComponent(secret.provider)}/test`);
      result.className = `key-check ${outcome.outcome === 'ok' ? 'ok' : 'bad'}`;
      result.textContent = `${KEY_CHECK_OUTCOMES[outcome.outcome]}${outcome.status === null ? '' : ` (HTTP ${outcome.status})`}, ${outcome.latencyMs} ms`;
    } catch (error) {
      result.textContent = '';
      throw error;
    }
  });
  run.title = `Sends ${check} to the provider with this key; only the outcome is shown.`;
  return h('span', {}, run, ' ', result);
}

// Devices: search and paging (server side), and the per-device page (issue 19).

const PLATFORMS: Array<[string, string]> = [['', 'any'], ['ios', 'iOS'], ['android', 'Android'], ['development', 'Development (simulators, emulators)'], ['other', 'other']];
const platformName = (platform: string) => PLATFORMS.find(([value]) => value === platform)?.[1] ?? platform;
const devicePath = (app: App, deviceId: string) => `#/apps/${app.id}/devices/${encodeURIComponent(deviceId)}`;

function revokeDeviceButton(app: App, deviceId: string): HTMLButtonElement {
  return button(
    `Revoke ${deviceId}`,
    async () => {
      await api('POST', `/apps/${app.id}/devices/${encodeURIComponent(deviceId)}/revoke`);
      say(`Device ${deviceId} is revoked.`);
      await route();
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
  const render = async () => {
    const values = formValues(form);
    const query = new URLSearchParams({ limit: String(PAGE), offset: String(offset) });
    const prefix = String(values.q ?? '').trim();
    if (prefix) query.set('q', prefix);
    if (values.platform) query.set('platform', String(values.platform));
    const page = await api<DevicePage>('GET', `/apps/${app.id}/devices?${query}`);
    const filtered = Boolean(prefix || values.platform);
    output.replaceChildren(
      h('p', { 'data-testid': 'device-total' }, page.total === 0 ? (filtered ? 'No device matches.' : 'No device has attested yet.') : `Devices ${page.offset + 1}–${page.offset + page.devices.length} of ${page.total}.`),
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
  return [
    form,
    output,
    h('p', {}, button('Revoke every device', async () => { await api('POST', `/apps/${app.id}/devices/revoke-all`); say('Every device token issued until now is revoked.'); await route(); }, 'danger', 'Every device must attest again. Revoke all?')),
  ];
}

type LoggedRequest = RequestLog['requests'][number] & { inputTokens?: number | null; outputTokens?: number | null };

/** One device: status, its traffic (the usage summary of its events), its latest requests, and revocation. */
async function devicePage(appId: string, deviceId: string): Promise<void> {
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
      ),
    );
  };
  onSubmit(windowForm, renderTraffic);
  await renderTraffic(formValues(windowForm));
  const log = await api<{ requests: LoggedRequest[]; nextBefore: number | null }>('GET', `/apps/${app.id}/requests?device=${id}&limit=20`);
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
    h('h2', {}, 'Latest requests'),
    stackTable(
      ['Time', 'Provider', 'Route', 'Status', 'Error', 'Latency', 'Tokens in / out'],
      log.requests.map((entry) => [
        new Date(entry.createdAt).toLocaleString(),
        entry.provider,
        h('code', { title: entry.requestId ?? '' }, `${entry.method ?? ''} ${entry.route ?? ''}`.trim()),
        badge(String(entry.status), entry.status < 400 && !entry.errorType ? 'ok' : 'bad'),
        entry.errorType ? `${entry.errorType}${entry.reason ? ` (${entry.reason})` : ''}` : entry.status >= 400 ? 'providerError' : '',
        `${entry.latencyMs} ms`,
        entry.inputTokens === null || entry.inputTokens === undefined ? '' : `${entry.inputTokens} / ${entry.outputTokens ?? 0}`,
      ]),
      log.requests.length ? undefined : 'No request from this device in the request log.',
      'device-requests-list',
    ),
    h('p', {}, h('a', { href: `#/apps/${app.id}/requests?device=${id}` }, 'All requests of this device in the request log')),
  );
}

/** Routes `location.hash`; the set-up link is `/dashboard/setup#token=su_…`. */
async function route(): Promise<void> {
  if (location.pathname.endsWith('/setup')) {
    const token = new URLSearchParams(location.hash.slice(1)).get('token');
    if (token) return setupPage(token);
  }
  if (!session) {
    try {
      session = await api<Session>('GET', '/session');
      setCsrfToken(session.csrfToken);
    } catch {
      return signInPage();
    }
  }
  document.getElementById('top')!.hidden = false;
  document.getElementById('who')!.textContent = session.user.username;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  // A page that takes a while must not leave the previous one up looking current.
  main.setAttribute('aria-busy', 'true');
  main.replaceChildren(h('p', { class: 'muted loading' }, 'Loading…'));
  try {
    if (parts[0] === 'apps' && parts[1] && parts[2] === 'devices' && parts[3]) return await devicePage(parts[1], parts.slice(3).join('/'));
    if (parts[0] === 'apps' && parts[1]) return await appPage(parts[1], parts[2] ?? '');
    if (parts[0] === 'usage') return show('Usage of every app', ...(await usageContent('/usage')));
    if (parts[0] === 'prices') return await pricesPage();
    if (parts[0] === 'admin-keys') return await adminKeysPage();
    if (parts[0] === 'audit') return await auditPage();
    if (parts[0] === 'users') return await usersPage();
    return await appsPage();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signedOut();
    show('Something went wrong', errorBox(error), h('p', {}, h('a', { href: '#/apps' }, 'Back to apps')));
  } finally {
    main.removeAttribute('aria-busy');
  }
}

window.addEventListener('hashchange', () => {
  say('');
  void route();
});
void route();
