/**
 * The Tollgate dashboard: apps, secrets (write-only), limits, development tokens and devices, usage charts, and
 * integration code. A single page over the management API (`/v1/admin/*`) with hash routes; every control is a
 * native, labelled form element, so the whole dashboard works from the keyboard.
 */
import { api, ApiError, setCsrfToken, type App, type Provider, type Secret, type Session, type Usage } from './api.js';
import { barChart } from './charts.js';
import { checkbox, field, formValues, h, table } from './dom.js';

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

function errorBox(error: unknown): HTMLElement {
  if (error instanceof ApiError) {
    const fields = Object.entries(error.body.fields ?? {});
    return h('div', { class: 'error', role: 'alert' }, error.body.message, fields.length ? h('ul', {}, ...fields.map(([name, messages]) => h('li', {}, `${name}: ${messages.join('; ')}`))) : null);
  }
  return h('div', { class: 'error', role: 'alert' }, error instanceof Error ? error.message : String(error));
}

/** Wires a form: on submit, runs `action`; shows its error next to the form; changes nothing on failure. */
function onSubmit(form: HTMLFormElement, action: (values: Record<string, string | boolean>) => Promise<void>): HTMLFormElement {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    form.querySelector('.error')?.remove();
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

/** A value shown once (a new token): it cannot be shown again. */
function once(label: string, value: string): HTMLElement {
  return h('div', { class: 'once', role: 'alert', 'data-testid': 'shown-once' }, h('strong', {}, label), h('p', {}, 'Copy it now: it will not be shown again.'), h('code', {}, value));
}

async function loadProviders(): Promise<Provider[]> {
  providers ??= await api<Provider[]>('GET', '/providers');
  return providers;
}

// Sign-in, set-up, sign-out.

function signInPage(): void {
  document.getElementById('top')!.hidden = true;
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
  void api('DELETE', '/session').finally(signedOut);
});

// Apps.

async function appsPage(): Promise<void> {
  const apps = await api<App[]>('GET', '/apps');
  const created = h('div', {});
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
      apps.map((app) => [h('a', { href: `#/apps/${app.id}` }, app.name), app.status, h('code', {}, app.tokenHint), new Date(app.createdAt).toLocaleString()]),
      apps.length ? undefined : 'No apps yet.',
    ),
    h('h2', {}, 'Create an app'),
    onSubmit(form, async (values) => {
      const app = await api<App & { appToken: string }>('POST', '/apps', { name: values.name, allowDevelopmentAttestation: values.allowDevelopmentAttestation });
      await appsPage();
      main.append(created);
      created.replaceChildren(once(`App token of ${app.name}`, app.appToken), h('p', {}, h('a', { href: `#/apps/${app.id}` }, `Open ${app.name}`)));
    }),
  );
}

const TABS: Array<[string, string]> = [
  ['', 'Overview'],
  ['secrets', 'Secrets'],
  ['limits', 'Limits'],
  ['routes', 'Routes'],
  ['devices', 'Devices'],
  ['usage', 'Usage'],
  ['integrate', 'Integrate'],
];

function tabs(app: App, current: string): HTMLElement {
  return h('nav', { class: 'tabs', 'aria-label': `${app.name} sections` }, ...TABS.map(([tab, label]) => h('a', { href: `#/apps/${app.id}${tab ? `/${tab}` : ''}`, 'aria-current': tab === current ? 'page' : null }, label)));
}

async function appPage(appId: string, tab: string): Promise<void> {
  const app = await api<App>('GET', `/apps/${encodeURIComponent(appId)}`);
  const title = `${app.name}${tab ? ` · ${TABS.find(([key]) => key === tab)?.[1] ?? tab}` : ''}`;
  const page = PAGES[tab];
  if (!page) throw new Error('No such page.');
  show(title, tabs(app, tab), ...(await page(app)));
}

const text = (value: unknown) => (value === undefined || value === null ? '' : String(value));

const PAGES: Record<string, (app: App) => Promise<(Node | null)[]>> = {
  async ''(app) {
    const rotated = h('div', {});
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
      field('Device token lifetime (seconds)', h('input', { name: 'deviceTokenTtlSeconds', type: 'number', min: 60, value: text(app.settings.deviceTokenTtlSeconds) })),
      field('Allowed providers (comma-separated slugs; empty allows all)', h('input', { name: 'allowedProviders', value: ((app.settings.allowedProviders as string[] | undefined) ?? []).join(', ') })),
      h('button', { type: 'submit', class: 'primary' }, 'Save settings'),
    );
    return [
      table(['', ''], [
        ['Id', h('code', {}, app.id)],
        ['Status', app.status],
        ['App token', h('code', {}, app.tokenHint)],
      ]),
      h(
        'p',
        {},
        button('Rotate app token', async () => {
          const result = await api<{ appToken: string }>('POST', `/apps/${app.id}/rotate-token`);
          rotated.replaceChildren(once('New app token', result.appToken));
        }, '', 'The current app token stops working at once. Rotate?'),
        ' ',
        app.status === 'active'
          ? button('Disable app', async () => { await api('POST', `/apps/${app.id}/disable`); await route(); }, 'danger', 'Requests with this app’s token will be refused. Disable?')
          : button('Enable app', async () => { await api('POST', `/apps/${app.id}/enable`); await route(); }),
        ' ',
        button('Delete app', async () => { await api('DELETE', `/apps/${app.id}`); location.hash = '#/apps'; }, 'danger', 'Delete this app with its secrets, tokens and devices?'),
      ),
      rotated,
      h('h2', {}, 'Settings and attestation policy'),
      onSubmit(settings, async (values) => {
        const patch: Record<string, unknown> = {
          name: values.name,
          allowDevelopmentAttestation: values.allowDevelopmentAttestation,
          allowAppAttestDevelopment: values.allowAppAttestDevelopment,
          assertionMode: values.assertionMode,
          playIntegrityDeviceVerdict: values.playIntegrityDeviceVerdict,
        };
        for (const key of ['appleAppId', 'androidPackage', 'androidCertSha256'] as const) if (values[key]) patch[key] = values[key];
        if (values.deviceTokenTtlSeconds) patch.deviceTokenTtlSeconds = Number(values.deviceTokenTtlSeconds);
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
      table(
        ['Provider', 'Key', 'Base URL', 'Updated', ''],
        secrets.map((secret) => [
          secret.provider,
          h('code', { 'data-testid': `masked-${secret.provider}` }, secret.masked),
          secret.baseUrl ?? '',
          new Date(secret.updatedAt).toLocaleString(),
          button(`Delete ${secret.provider} key`, async () => { await api('DELETE', `/apps/${app.id}/secrets/${secret.provider}`); await route(); }, 'danger', `Delete the ${secret.provider} key?`),
        ]),
        secrets.length ? undefined : 'No provider keys yet.',
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
      number('deviceLimitPerMinute', 'Requests per minute per device', 'Each attested device.'),
      number('appLimitPerMinute', 'Requests per minute for the app', 'All devices together.'),
      number('deviceDailyQuota', 'Requests per day per device', 'Rolling 24 hours; empty for none.'),
      number('appDailyQuota', 'Requests per day for the app', 'Rolling 24 hours; empty for none.'),
      number('maxConcurrentStreamsPerDevice', 'Open streams per device', 'Concurrent streaming responses.'),
      field('Per-provider limits (one slug=requests per minute a line)', h('textarea', { name: 'providerLimitsPerMinute', rows: 3 }, providerLimits)),
      field('Allowed routes (one slug or slug/path-prefix a line; empty allows all)', h('textarea', { name: 'allowedRoutes', rows: 3 }, ((settings.allowedRoutes as string[] | undefined) ?? []).join('\n'))),
      h('button', { type: 'submit', class: 'primary' }, 'Save limits'),
    );
    return [
      onSubmit(form, async (values) => {
        const patch: Record<string, unknown> = {};
        for (const key of ['deviceLimitPerMinute', 'appLimitPerMinute', 'deviceDailyQuota', 'appDailyQuota', 'maxConcurrentStreamsPerDevice']) {
          if (values[key] !== '') patch[key] = Number(values[key]);
        }
        const limits: Record<string, number> = {};
        for (const line of String(values.providerLimitsPerMinute).split('\n').map((entry) => entry.trim()).filter(Boolean)) {
          const [slug, limit] = line.split('=').map((part) => part.trim());
          limits[slug ?? ''] = Number(limit);
        }
        patch.providerLimitsPerMinute = Object.keys(limits).length ? limits : null;
        const allowedRoutes = String(values.allowedRoutes).split('\n').map((entry) => entry.trim()).filter(Boolean);
        patch.allowedRoutes = allowedRoutes.length ? allowedRoutes : null;
        await api('PATCH', `/apps/${app.id}`, patch);
        say('Limits saved.');
        await route();
      }),
    ];
  },

  async devices(app) {
    const [tokens, devices] = await Promise.all([
      api<Array<{ id: string; tokenHint: string; label: string | null; createdAt: string; revokedAt: string | null }>>('GET', `/apps/${app.id}/development-tokens`),
      api<Array<{ deviceId: string; method: string; firstSeenAt: string; lastAttestedAt: string; revokedAt: string | null }>>('GET', `/apps/${app.id}/devices`),
    ]);
    const created = h('div', {});
    const form = h('form', { class: 'inline', 'aria-label': 'Create a development token' }, field('Label', h('input', { name: 'label', placeholder: 'iPhone simulator' })), h('button', { type: 'submit' }, 'Create development token'));
    return [
      h('h2', {}, 'Devices'),
      h('p', {}, button('Revoke every device', async () => { await api('POST', `/apps/${app.id}/devices/revoke-all`); say('Every device token issued until now is revoked.'); await route(); }, 'danger', 'Every device must attest again. Revoke all?')),
      table(
        ['Device', 'Method', 'First seen', 'Last attested', 'State'],
        devices.map((device) => [
          h('code', {}, device.deviceId),
          device.method,
          new Date(device.firstSeenAt).toLocaleString(),
          new Date(device.lastAttestedAt).toLocaleString(),
          device.revokedAt
            ? `revoked ${new Date(device.revokedAt).toLocaleString()}`
            : button(`Revoke ${device.deviceId}`, async () => { await api('POST', `/apps/${app.id}/devices/${encodeURIComponent(device.deviceId)}/revoke`); say(`Device ${device.deviceId} is revoked.`); await route(); }, 'danger'),
        ]),
        devices.length ? undefined : 'No device has attested yet.',
      ),
      h('h2', {}, 'Development tokens'),
      h('p', { class: 'muted' }, app.settings.allowDevelopmentAttestation ? 'For simulators and emulators, in debug builds only. Refused in production.' : 'Development attestation is off for this app (Overview → settings).'),
      table(
        ['Token', 'Label', 'Created', 'State'],
        tokens.map((token) => [
          h('code', {}, token.tokenHint),
          token.label ?? '',
          new Date(token.createdAt).toLocaleString(),
          token.revokedAt ? 'revoked' : button(`Revoke ${token.tokenHint}`, async () => { await api('POST', `/apps/${app.id}/development-tokens/${token.id}/revoke`); await route(); }, 'danger'),
        ]),
      ),
      onSubmit(form, async (values) => {
        const token = await api<{ developmentToken: string }>('POST', `/apps/${app.id}/development-tokens`, values.label ? { label: values.label } : {});
        await route();
        main.append(created);
        created.replaceChildren(once('Development token', token.developmentToken));
      }),
    ];
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
      field('Capability', h('select', { name: 'capability' }, ...['chat', 'streaming', 'image', 'tts', 'translation', 'search'].map((capability) => h('option', { value: capability }, capability)))),
      h('button', { type: 'submit', class: 'primary' }, 'Show code'),
    );
    const render = async (values: Record<string, string | boolean>) => {
      const query = new URLSearchParams({ platform: String(values.platform), provider: String(values.provider), capability: String(values.capability) });
      const snippet = await api<{ initializationPlace: string; initialization: string; request: string; generic: boolean }>('GET', `/apps/${app.id}/integration?${query}`);
      output.replaceChildren(
        h('h2', {}, 'Initialize at app start'),
        h('p', {}, snippet.initializationPlace),
        h('pre', { 'data-testid': 'initialization' }, h('code', {}, snippet.initialization)),
        h('h2', {}, 'Call the provider through the SDK'),
        snippet.generic ? h('p', { class: 'muted' }, 'This provider declares no example for this capability: a generic call is shown.') : '',
        h('pre', { 'data-testid': 'request' }, h('code', {}, snippet.request)),
        h('p', { class: 'muted' }, 'Replace at_YOUR_APP_TOKEN with the app token shown when the app was created (or rotated). No provider key belongs in the app.'),
      );
    };
    onSubmit(form, render);
    await render(formValues(form));
    return [form, output];
  },
};

async function usageContent(path: string): Promise<Node[]> {
  const container = h('div', {});
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Usage window' },
    field('Window', h('select', { name: 'minutes' }, ...[['60', 'Last hour'], ['360', 'Last 6 hours'], ['1440', 'Last day'], ['10080', 'Last 7 days']].map(([value, label]) => h('option', { value }, label ?? '')))),
    h('button', { type: 'submit' }, 'Refresh'),
  );
  const render = async (values: Record<string, string | boolean>) => {
    const minutes = Number(values.minutes);
    const usage = await api<Usage>('GET', `${path}?minutes=${minutes}`);
    const minute = (ms: number) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    // The last hour is drawn minute by minute, quiet minutes included; longer windows show the minutes that had traffic.
    if (minutes <= 60) {
      const counts = new Map(usage.requestsPerMinute.map((entry) => [entry.minute, entry]));
      const last = Math.floor(Date.now() / 60_000) * 60_000;
      usage.requestsPerMinute = Array.from({ length: minutes }, (_, index) => {
        const at = last - (minutes - 1 - index) * 60_000;
        return counts.get(at) ?? { minute: at, requests: 0, errors: 0 };
      });
    }
    container.replaceChildren(
      h('p', { 'data-testid': 'total-requests' }, `${usage.totalRequests} requests in this window.`),
      h(
        'div',
        { class: 'charts' },
        barChart('chart-requests', 'Requests per minute', usage.requestsPerMinute.map((entry) => minute(entry.minute)), [
          { label: 'requests', values: usage.requestsPerMinute.map((entry) => entry.requests) },
          { label: 'errors', values: usage.requestsPerMinute.map((entry) => entry.errors), className: 'bad' },
        ]),
        barChart('chart-errors', 'Errors by type', usage.errorsByType.map((entry) => entry.type), [{ label: 'errors', values: usage.errorsByType.map((entry) => entry.count), className: 'bad' }]),
        barChart('chart-latency', 'Latency per provider (p50, p95)', usage.latencyByProvider.map((entry) => entry.provider), [
          { label: 'p50', values: usage.latencyByProvider.map((entry) => entry.p50Ms) },
          { label: 'p95', values: usage.latencyByProvider.map((entry) => entry.p95Ms), className: 'alt' },
        ], ' ms'),
        barChart('chart-devices', 'Top devices', usage.topDevices.map((entry) => entry.deviceId), [{ label: 'requests', values: usage.topDevices.map((entry) => entry.requests) }]),
      ),
    );
  };
  onSubmit(form, render);
  await render(formValues(form));
  return [form, container];
}

async function adminKeysPage(): Promise<void> {
  const keys = await api<Array<{ id: string; name: string; keyHint: string; createdAt: string; revokedAt: string | null }>>('GET', '/admin-keys');
  const created = h('div', {});
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
        key.revokedAt ? 'revoked' : button(`Revoke ${key.name}`, async () => { await api('DELETE', `/admin-keys/${key.id}`); await route(); }, 'danger', `Revoke the key ${key.name}?`),
      ]),
    ),
    onSubmit(form, async (values) => {
      const key = await api<{ adminKey: string; name: string }>('POST', '/admin-keys', { name: values.name });
      await adminKeysPage();
      main.append(created);
      created.replaceChildren(once(`Admin key ${key.name}`, key.adminKey));
    }),
  );
}

async function auditPage(): Promise<void> {
  const entries = await api<Array<{ actor: string; action: string; target: string | null; createdAt: string }>>('GET', '/audit?limit=200');
  show('Audit log', table(['When', 'Who', 'What', 'Target'], entries.map((entry) => [new Date(entry.createdAt).toLocaleString(), entry.actor, entry.action, entry.target ?? ''])));
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
  try {
    if (parts[0] === 'apps' && parts[1]) return await appPage(parts[1], parts[2] ?? '');
    if (parts[0] === 'usage') return show('Usage of every app', ...(await usageContent('/usage')));
    if (parts[0] === 'admin-keys') return await adminKeysPage();
    if (parts[0] === 'audit') return await auditPage();
    return await appsPage();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signedOut();
    show('Something went wrong', errorBox(error), h('p', {}, h('a', { href: '#/apps' }, 'Back to apps')));
  }
}

window.addEventListener('hashchange', () => {
  say('');
  void route();
});
void route();
