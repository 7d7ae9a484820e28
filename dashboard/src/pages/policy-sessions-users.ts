/**
 * The policy sections for realtime sessions and minted credentials, and for signed-in users (sign-in provider by
 * preset or by issuer and key set, user token mode, limits per user, profiles by tier, model policy). Names are the
 * management API's (`AppSettingsInput` of /v1/admin/openapi.json; docs/reference/configuration.md).
 */
import { api, type App } from '../api.js';
import { field, h } from '../dom.js';
import { refresh } from '../state.js';
import { onSubmit, say, text } from '../ui.js';

const numberField = (settings: Record<string, unknown>, name: string, label: string, hint: string, max?: number) => field(label, h('input', { name, type: 'number', min: 1, max, value: text(settings[name]) }), hint);
const json = (value: unknown) => (value === undefined || value === null ? '' : JSON.stringify(value, null, 2));

/** A number field's value for the patch: empty clears the setting. */
const numberOrNull = (value: string | boolean | undefined) => (value === '' || value === undefined ? null : Number(value));

/** A JSON field's value for the patch: empty clears it; text that is not JSON is refused before anything is sent. */
function jsonOrNull(label: string, value: string | boolean | undefined): unknown {
  const source = String(value ?? '').trim();
  if (!source) return null;
  try {
    return JSON.parse(source) as unknown;
  } catch {
    throw new Error(`${label}: this is not valid JSON.`);
  }
}

const SESSION_NUMBERS: ReadonlyArray<readonly [string, string, string, number]> = [
  ['maxSessionSeconds', 'Longest realtime session (seconds)', 'A session is closed (4429 session_too_long) when it reaches this length; empty for 1800.', 86_400],
  ['sessionIdleSeconds', 'Idle time before a session closes (seconds)', 'No frame either way for this long closes it (4504 session_idle); empty for 120.', 86_400],
  ['deviceDailySessionSeconds', 'Realtime seconds per day per device', 'Open seconds of every session of one device, per UTC day; empty for none.', 1_000_000_000],
  ['appDailySessionSeconds', 'Realtime seconds per day for the app', 'All devices together, per UTC day; empty for none.', 1_000_000_000],
];

export function sessionsSection(app: App): HTMLFormElement {
  const settings = app.settings;
  const open = (settings.openCredentialRoutes as string[] | undefined) ?? [];
  const form = h(
    'form',
    { 'aria-label': 'Realtime sessions' },
    ...SESSION_NUMBERS.map(([name, label, hint, max]) => numberField(settings, name, label, hint, max)),
    h('h3', {}, 'Minted credentials'),
    h(
      'p',
      { class: 'warning', role: 'note', 'data-testid': 'credential-warning' },
      h('strong', {}, 'Warning: '),
      'a credential minted for a device is used with the provider directly, past every limit, budget, log and revocation of Tollgate until it expires. Keep these routes closed and use realtime sessions through the gateway unless a provider offers nothing else.',
    ),
    field('Open credential routes for (comma-separated provider slugs; empty keeps them closed)', h('input', { name: 'openCredentialRoutes', value: open.join(', ') }), open.length ? `Open now for: ${open.join(', ')}.` : 'Closed for every provider.'),
    numberField(settings, 'credentialTtlSeconds', 'Longest lifetime of a minted credential (seconds)', 'Where the provider takes a lifetime; empty for 60.', 3600),
    h('div', { class: 'sticky-save' }, h('button', { type: 'submit', class: 'primary' }, 'Save session settings')),
  );
  return onSubmit(form, async (values) => {
    const patch: Record<string, unknown> = {};
    for (const [name] of SESSION_NUMBERS) patch[name] = numberOrNull(values[name]);
    patch.credentialTtlSeconds = numberOrNull(values.credentialTtlSeconds);
    const slugs = String(values.openCredentialRoutes).split(',').map((slug) => slug.trim()).filter(Boolean);
    const opening = slugs.filter((slug) => !open.includes(slug));
    if (opening.length && !window.confirm(`Open credential routes for ${opening.join(', ')}? Credentials minted through them bypass every limit, budget and revocation until they expire.`)) return;
    patch.openCredentialRoutes = slugs.length ? slugs : null;
    await api('PATCH', `/apps/${app.id}`, patch);
    // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
    await refresh();
    say('Session settings saved.');
  });
}

/** The sign-in provider presets the gateway knows, with the parameters each takes (core/users/user-auth.ts). */
const PRESETS: ReadonlyArray<readonly [string, string, readonly string[]]> = [
  ['', 'None: users are not identified', []],
  ['firebase', 'Firebase Authentication', ['projectId']],
  ['supabase', 'Supabase Auth', ['projectRef', 'audience']],
  ['auth0', 'Auth0', ['domain', 'clientId']],
  ['clerk', 'Clerk', ['domain', 'audience']],
  ['cognito', 'Amazon Cognito', ['region', 'userPoolId', 'clientId']],
  ['apple', 'Sign in with Apple', ['clientId']],
  ['custom', 'Another OpenID provider (issuer and key set)', ['issuer', 'jwksUrl', 'audience']],
];
const AUTH_FIELDS: ReadonlyArray<readonly [string, string, string]> = [
  ['projectId', 'Firebase project id', 'The audience of the project’s ID tokens.'],
  ['projectRef', 'Supabase project ref', 'The subdomain of https://<ref>.supabase.co.'],
  ['domain', 'Domain', 'e.g. example.eu.auth0.com or clerk.example.com.'],
  ['region', 'Region', 'e.g. eu-west-1.'],
  ['userPoolId', 'User pool id', 'e.g. eu-west-1_AbCdEf123.'],
  ['clientId', 'Client id', 'The app client id (Apple: the Services ID or bundle id) the ID tokens are issued to.'],
  ['issuer', 'Issuer (iss)', 'Exactly as the ID tokens name it.'],
  ['jwksUrl', 'Key set URL (JWKS)', 'Where the provider publishes its signing keys.'],
  ['audience', 'Audience (aud)', 'Optional for presets that know it.'],
  ['tierClaim', 'Tier claim', 'Optional: the claim naming the user’s tier, which picks a profile below.'],
];

const USER_NUMBERS: ReadonlyArray<readonly [string, string, string, number]> = [
  ['userLimitPerMinute', 'Requests per minute per user', 'Across all of a user’s devices; empty for none.', 1_000_000],
  ['userDailyQuota', 'Requests per day per user', 'Across all of a user’s devices, per UTC day; empty for none.', 1_000_000_000],
  ['userDailyTokens', 'Tokens per day per user', 'Input + output tokens, per UTC day; empty for none.', 1_000_000_000_000],
  ['userMinuteTokens', 'Tokens per minute per user', 'Per UTC minute; empty for none.', 1_000_000_000_000],
  ['userDailySessionSeconds', 'Realtime seconds per day per user', 'Open seconds of the user’s sessions, per UTC day; empty for none.', 86_400],
];

function signInFields(current: Record<string, string>): HTMLElement[] {
  const preset = current.preset ?? (current.issuer ? 'custom' : '');
  const choose = h('select', { name: 'userAuth' }, ...PRESETS.map(([value, label]) => h('option', { value, selected: value === preset }, label)));
  const inputs = AUTH_FIELDS.map(([name, label, hint]) => field(label, h('input', { name: `auth:${name}`, value: current[name] ?? '' }), hint));
  const show = () => {
    const wanted = PRESETS.find(([value]) => value === choose.value)?.[2] ?? [];
    AUTH_FIELDS.forEach(([name], index) => (inputs[index]!.hidden = !(wanted.includes(name) || (name === 'tierClaim' && choose.value !== ''))));
  };
  choose.addEventListener('change', show);
  show();
  return [field('Sign-in provider', choose, 'Whose ID tokens identify the users; the gateway checks each against the provider’s published keys.'), ...inputs];
}

export function usersSection(app: App): HTMLFormElement {
  const settings = app.settings;
  const form = h(
    'form',
    { 'aria-label': 'Signed-in users' },
    ...signInFields((settings.userAuth as Record<string, string> | undefined) ?? {}),
    field(
      'User tokens',
      h('select', { name: 'userTokenMode' }, ...[['off', 'Off: users are not identified'], ['optional', 'Optional: checked when the app sends one'], ['required', 'Required: every request names its user']].map(([value, label]) => h('option', { value, selected: (settings.userTokenMode ?? 'off') === value }, label ?? ''))),
      'Whether requests carry the signed-in user’s ID token (Tollgate-User-Token).',
    ),
    ...USER_NUMBERS.map(([name, label, hint, max]) => numberField(settings, name, label, hint, max)),
    field('Profiles by tier (JSON)', h('textarea', { name: 'profiles', rows: 4, placeholder: '{"pro": {"userDailyTokens": 500000}}' }, json(settings.profiles)), 'The profile the user’s tier claim names overrides the app’s limits and budgets (and its model policy).'),
    field('Model policy (JSON)', h('textarea', { name: 'modelPolicy', rows: 4, placeholder: '{"openai": {"allow": ["gpt-4o-mini"], "aliases": {"fast": "gpt-4o-mini"}, "maxOutputTokens": 1024}}' }, json(settings.modelPolicy)), 'Per provider: the models allowed, aliases replaced before forwarding, and a cap on the output tokens a request may ask for.'),
    h('div', { class: 'sticky-save' }, h('button', { type: 'submit', class: 'primary' }, 'Save user settings')),
  );
  return onSubmit(form, async (values) => {
    const preset = String(values.userAuth ?? '');
    const wanted = [...(PRESETS.find(([value]) => value === preset)?.[2] ?? []), 'tierClaim'];
    const userAuth: Record<string, string> = preset && preset !== 'custom' ? { preset } : {};
    for (const name of wanted) {
      const value = String(values[`auth:${name}`] ?? '').trim();
      if (value) userAuth[name] = value;
    }
    const patch: Record<string, unknown> = { userAuth: preset ? userAuth : null, userTokenMode: values.userTokenMode };
    for (const [name] of USER_NUMBERS) patch[name] = numberOrNull(values[name]);
    patch.profiles = jsonOrNull('Profiles by tier', values.profiles);
    patch.modelPolicy = jsonOrNull('Model policy', values.modelPolicy);
    await api('PATCH', `/apps/${app.id}`, patch);
    // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
    await refresh();
    say('User settings saved.');
  });
}
