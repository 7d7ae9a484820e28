/**
 * Limit profiles: the profile a user's tier claim names overrides the app's own limits and model policy for that user's
 * requests. The merged settings are built once per app entry and profile (an app entry is replaced, never changed, when
 * its settings change), so a request costs a map lookup.
 */
import type { AppSettings, EndUserIdentity, LimitProfile, ProxyContext } from '../contract';

const merged = new WeakMap<AppSettings, Map<string, AppSettings>>();

/** The app's settings with `profile` applied (the app's own when it names no profile of the app). */
export function settingsWithProfile(settings: AppSettings, profile: string | undefined): AppSettings {
  if (profile === undefined) return settings;
  const overrides: LimitProfile | undefined = settings.profiles?.[profile];
  if (!overrides) return settings;
  let byProfile = merged.get(settings);
  if (!byProfile) {
    byProfile = new Map();
    merged.set(settings, byProfile);
  }
  let result = byProfile.get(profile);
  if (!result) {
    result = Object.freeze({ ...settings, ...overrides });
    byProfile.set(profile, result);
  }
  return result;
}

/**
 * The profile a token's claims select: the tier claim's value when it is a string naming a profile, or the first entry
 * of a list (an entitlements list) that names one. None: the app's own limits.
 */
export function profileFromClaims(settings: AppSettings, tierClaim: string | undefined, claims: Record<string, unknown>): string | undefined {
  if (tierClaim === undefined || !settings.profiles) return undefined;
  const value = claims[tierClaim];
  const names = Array.isArray(value) ? value : [value];
  for (const name of names) {
    if (typeof name === 'string' && Object.prototype.hasOwnProperty.call(settings.profiles, name)) return name;
  }
  return undefined;
}

/** The settings that hold for a request: its user's (profile applied) when it has one, else its app's. */
export function effectiveSettings(context: ProxyContext): AppSettings {
  const user: EndUserIdentity | null | undefined = context.peek('user');
  return user ? user.settings : context.get('app').settings;
}
