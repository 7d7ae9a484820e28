/**
 * The policy sections for realtime sessions and minted credentials, and for signed-in users (sign-in provider, limits
 * per user, profiles by tier, model policy). Names are the management API's (docs/reference/configuration.md).
 */
import { api, type App } from '../api.js';
import { field, h } from '../dom.js';
import { refresh } from '../state.js';
import { onSubmit, say, text } from '../ui.js';

const numberField = (settings: Record<string, unknown>, name: string, label: string, hint: string) => field(label, h('input', { name, type: 'number', min: 1, value: text(settings[name]) }), hint);
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

const SESSION_NUMBERS: ReadonlyArray<readonly [string, string, string]> = [
  ['maxSessionSeconds', 'Longest realtime session (seconds)', 'A voice session is closed (4429 session_too_long) when it reaches this length.'],
  ['sessionIdleSeconds', 'Idle time before a session closes (seconds)', 'No frame either way for this long closes it (4504 session_idle).'],
  ['deviceDailySessionSeconds', 'Realtime seconds per day per device', 'Open seconds of every session of one device, per UTC day.'],
  ['appDailySessionSeconds', 'Realtime seconds per day for the app', 'All devices together, per UTC day.'],
  ['credentialTtlSeconds', 'Longest lifetime of a minted credential (seconds)', 'Provider keys minted for a device expire within this (default 60).'],
];

export function sessionsSection(app: App): HTMLFormElement {
  const settings = app.settings;
  const form = h(
    'form',
    { 'aria-label': 'Realtime sessions' },
    ...SESSION_NUMBERS.map(([name, label, hint]) => numberField(settings, name, label, hint)),
    field(
      'Open credential routes for (comma-separated slugs)',
      h('input', { name: 'openCredentialRoutes', value: ((settings.openCredentialRoutes as string[] | undefined) ?? []).join(', ') }),
      'Warning: a credential minted for a device is used with the provider directly, past every limit, budget, log and revocation of Tollgate until it expires. Prefer realtime sessions through the gateway.',
    ),
    h('div', { class: 'sticky-save' }, h('button', { type: 'submit', class: 'primary' }, 'Save session settings')),
  );
  return onSubmit(form, async (values) => {
    const patch: Record<string, unknown> = {};
    for (const [name] of SESSION_NUMBERS) patch[name] = numberOrNull(values[name]);
    const open = String(values.openCredentialRoutes).split(',').map((slug) => slug.trim()).filter(Boolean);
    patch.openCredentialRoutes = open.length ? open : null;
    await api('PATCH', `/apps/${app.id}`, patch);
    say('Session settings saved.');
    await refresh();
  });
}

const USER_NUMBERS: ReadonlyArray<readonly [string, string, string]> = [
  ['userLimitPerMinute', 'Requests per minute per user', 'Across all of a user’s devices; empty for none.'],
  ['userDailyQuota', 'Requests per day per user', 'Across all of a user’s devices, per UTC day; empty for none.'],
  ['userDailyTokens', 'Tokens per day per user', 'Input + output tokens, per UTC day; empty for none.'],
  ['userMinuteTokens', 'Tokens per minute per user', 'Per UTC minute; empty for none.'],
  ['userDailySessionSeconds', 'Realtime seconds per day per user', 'Open seconds of the user’s sessions, per UTC day; empty for none.'],
];

export function usersSection(app: App): HTMLFormElement {
  const settings = app.settings;
  const form = h(
    'form',
    { 'aria-label': 'Signed-in users' },
    field(
      'User tokens',
      h('select', { name: 'userTokenMode' }, ...[['off', 'Off: users are not identified'], ['optional', 'Optional: checked when the app sends one'], ['required', 'Required: every request names its user']].map(([value, label]) => h('option', { value, selected: (settings.userTokenMode ?? 'off') === value }, label ?? ''))),
      'Whether requests carry the signed-in user’s ID token (Tollgate-User-Token).',
    ),
    field('Sign-in provider (JSON)', h('textarea', { name: 'userAuth', rows: 3, placeholder: '{"preset": "firebase", "projectId": "my-project"}' }, json(settings.userAuth)), 'A preset (firebase, supabase, auth0, clerk, cognito, apple) with its parameters, or {"issuer", "jwksUrl", "audience", "tierClaim"}.'),
    ...USER_NUMBERS.map(([name, label, hint]) => numberField(settings, name, label, hint)),
    field('Profiles by tier (JSON)', h('textarea', { name: 'profiles', rows: 4, placeholder: '{"pro": {"userDailyTokens": 500000}}' }, json(settings.profiles)), 'The profile named by the user’s tier claim overrides these limits and budgets.'),
    field('Model policy (JSON)', h('textarea', { name: 'modelPolicy', rows: 4, placeholder: '{"openai": {"allow": ["gpt-4o-mini"], "aliases": {"fast": "gpt-4o-mini"}, "maxOutputTokens": 1024}}' }, json(settings.modelPolicy)), 'Allowed models per provider, aliases replaced before forwarding, and a cap on the output tokens a request may ask for.'),
    h('div', { class: 'sticky-save' }, h('button', { type: 'submit', class: 'primary' }, 'Save user settings')),
  );
  return onSubmit(form, async (values) => {
    const patch: Record<string, unknown> = { userTokenMode: values.userTokenMode };
    patch.userAuth = jsonOrNull('Sign-in provider', values.userAuth);
    for (const [name] of USER_NUMBERS) patch[name] = numberOrNull(values[name]);
    patch.profiles = jsonOrNull('Profiles by tier', values.profiles);
    patch.modelPolicy = jsonOrNull('Model policy', values.modelPolicy);
    await api('PATCH', `/apps/${app.id}`, patch);
    say('User settings saved.');
    await refresh();
  });
}
