/**
 * The realtime and credential-route settings of `tollgate apps update` (operations.md: the management API's names in
 * kebab case): `--max-session-seconds`, `--session-idle-seconds`, `--device-daily-session-seconds`,
 * `--app-daily-session-seconds`, `--open-credential-routes` / `--close-credential-routes`, `--credential-ttl-seconds`.
 * An empty value clears a setting (back to its default, or none).
 */

export const REALTIME_OPTIONS = {
  'max-session-seconds': { type: 'string' },
  'session-idle-seconds': { type: 'string' },
  'device-daily-session-seconds': { type: 'string' },
  'app-daily-session-seconds': { type: 'string' },
  'open-credential-routes': { type: 'string' },
  'close-credential-routes': { type: 'string' },
  'credential-ttl-seconds': { type: 'string' },
} as const;

export const REALTIME_USAGE = `                        [--max-session-seconds N] [--session-idle-seconds N] [--device-daily-session-seconds N] [--app-daily-session-seconds N]
                        [--open-credential-routes SLUG,…] [--close-credential-routes SLUG,…] [--credential-ttl-seconds N]   (realtime sessions; credential routes)`;

type RealtimeValues = { [K in keyof typeof REALTIME_OPTIONS]?: string };

/** What opening credential routes exposes: said on stderr each time a CLI opens them. */
export const CREDENTIAL_ROUTES_WARNING =
  'warning: a credential route mints a provider credential for the device; what the device does with it bypasses the gateway\'s limits, budgets, request log and revocation until it expires (at most --credential-ttl-seconds, default 60, where the provider takes a lifetime).';

function integer(values: RealtimeValues, name: keyof RealtimeValues, fail: (message: string) => Error): number | null | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (raw === '') return null;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw fail(`--${name} must be an integer, got "${raw}"`);
  return value;
}

function slugs(raw: string | undefined): string[] | undefined {
  return raw === undefined ? undefined : raw.split(',').map((slug) => slug.trim()).filter(Boolean);
}

/**
 * The settings these options change, for `management.updateApp` (absent options are left out). `current` reads the
 * app's open credential routes, asked only when an open or close option is given.
 */
export async function realtimeSettings(
  values: RealtimeValues,
  current: () => Promise<readonly string[] | undefined>,
  fail: (message: string) => Error,
  warn: (line: string) => void,
): Promise<Record<string, unknown>> {
  const settings: Record<string, unknown> = {};
  const numbers = {
    maxSessionSeconds: 'max-session-seconds',
    sessionIdleSeconds: 'session-idle-seconds',
    deviceDailySessionSeconds: 'device-daily-session-seconds',
    appDailySessionSeconds: 'app-daily-session-seconds',
    credentialTtlSeconds: 'credential-ttl-seconds',
  } as const;
  for (const [setting, option] of Object.entries(numbers)) {
    const value = integer(values, option, fail);
    if (value !== undefined) settings[setting] = value;
  }
  const opened = slugs(values['open-credential-routes']);
  const closed = slugs(values['close-credential-routes']);
  if (opened !== undefined || closed !== undefined) {
    const next = new Set([...((await current()) ?? []), ...(opened ?? [])]);
    for (const slug of closed ?? []) next.delete(slug);
    settings.openCredentialRoutes = next.size ? [...next].sort() : null;
    if (opened?.length) warn(CREDENTIAL_ROUTES_WARNING);
  }
  return settings;
}
