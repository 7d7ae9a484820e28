/**
 * Where an app's end-user ID tokens come from: an explicit issuer, JWKS address and audience, or a preset for a known
 * sign-in provider. Each preset's issuer and key-set address is the one its provider documents for verifying ID tokens
 * with a third-party JWT library (cited beside it); the audience is what that provider puts in `aud`.
 */
import { createHash } from 'node:crypto';
import type { UserAuthSetting } from '../contract';

/**
 * The key of a user's counters in the rate-limit store (request limits, token and session-seconds budgets): scoped by
 * issuer, without the store keys' separators. The verifyUser stage keys a request's user by it, and the management
 * API reads the same counters for a user's page.
 */
export function userCounterKey(issuer: string, subject: string): string {
  return createHash('sha256').update(`${issuer}\u0000${subject}`, 'utf8').digest('base64url').slice(0, 22);
}

/** What the gateway checks a user token against. */
export interface ResolvedUserAuth {
  readonly issuer: string;
  readonly jwksUrl: string;
  /** Absent: `aud` is not checked (a provider whose tokens carry none). */
  readonly audience: string | undefined;
  readonly tierClaim: string | undefined;
}

const PRESET_NAMES = ['firebase', 'supabase', 'auth0', 'clerk', 'cognito', 'apple'] as const;
export type UserAuthPreset = (typeof PRESET_NAMES)[number];

/** A host name (no scheme, path or port), for presets that take a domain. */
const HOST = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)+$/;
const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d$/;
const USER_POOL = /^[a-z]{2}(?:-[a-z]+)+-\d_[A-Za-z0-9]{1,64}$/;

function need(setting: UserAuthSetting, field: keyof UserAuthSetting, pattern: RegExp, preset: string): string {
  const value = setting[field];
  if (typeof value !== 'string' || !pattern.test(value)) throw new Error(`the ${preset} preset needs ${field}`);
  return value;
}

/**
 * The issuer, key set and audience of a setting, or an `Error` saying what is missing (the management API turns it
 * into a validation error; a stored setting is always valid).
 */
export function resolveUserAuth(setting: UserAuthSetting): ResolvedUserAuth {
  const tierClaim = setting.tierClaim;
  switch (setting.preset) {
    case undefined: {
      if (typeof setting.issuer !== 'string' || typeof setting.jwksUrl !== 'string') throw new Error('userAuth needs issuer and jwksUrl, or a preset');
      return { issuer: setting.issuer, jwksUrl: setting.jwksUrl, audience: setting.audience, tierClaim };
    }
    case 'firebase': {
      // https://firebase.google.com/docs/auth/admin/verify-id-tokens#verify_id_tokens_using_a_third-party_jwt_library:
      // iss https://securetoken.google.com/<projectId>, aud <projectId>; the keys are also published as a JWK set.
      const projectId = need(setting, 'projectId', IDENTIFIER, 'firebase');
      return {
        issuer: `https://securetoken.google.com/${projectId}`,
        jwksUrl: 'https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com',
        audience: projectId,
        tierClaim,
      };
    }
    case 'supabase': {
      // https://supabase.com/docs/guides/auth/jwts and /docs/guides/auth/signing-keys: iss https://<ref>.supabase.co/auth/v1,
      // keys at /auth/v1/.well-known/jwks.json (asymmetric signing keys), aud "authenticated" for signed-in users.
      const ref = need(setting, 'projectRef', /^[a-z0-9]{1,64}$/, 'supabase');
      const issuer = `https://${ref}.supabase.co/auth/v1`;
      return { issuer, jwksUrl: `${issuer}/.well-known/jwks.json`, audience: setting.audience ?? 'authenticated', tierClaim };
    }
    case 'auth0': {
      // https://auth0.com/docs/secure/tokens/json-web-tokens/json-web-key-sets: iss https://<domain>/, keys at
      // https://<domain>/.well-known/jwks.json; an ID token's aud is the application's client id.
      const domain = need(setting, 'domain', HOST, 'auth0');
      const audience = setting.audience ?? need(setting, 'clientId', IDENTIFIER, 'auth0');
      return { issuer: `https://${domain}/`, jwksUrl: `https://${domain}/.well-known/jwks.json`, audience, tierClaim };
    }
    case 'clerk': {
      // https://clerk.com/docs/guides/sessions/manual-jwt-verification: iss is the Frontend API URL, keys at
      // https://<Frontend API>/.well-known/jwks.json; session tokens carry no aud unless the app adds one (azp instead).
      const domain = need(setting, 'domain', HOST, 'clerk');
      return { issuer: `https://${domain}`, jwksUrl: `https://${domain}/.well-known/jwks.json`, audience: setting.audience, tierClaim };
    }
    case 'cognito': {
      // https://docs.aws.amazon.com/cognito/latest/developerguide/amazon-cognito-user-pools-using-tokens-verifying-a-jwt.html:
      // iss https://cognito-idp.<region>.amazonaws.com/<userPoolId>, keys at <iss>/.well-known/jwks.json, an ID token's
      // aud is the app client id.
      const region = need(setting, 'region', REGION, 'cognito');
      const pool = need(setting, 'userPoolId', USER_POOL, 'cognito');
      const issuer = `https://cognito-idp.${region}.amazonaws.com/${pool}`;
      return { issuer, jwksUrl: `${issuer}/.well-known/jwks.json`, audience: setting.audience ?? need(setting, 'clientId', IDENTIFIER, 'cognito'), tierClaim };
    }
    case 'apple': {
      // https://developer.apple.com/documentation/signinwithapplerestapi/verifying-a-user: iss https://appleid.apple.com,
      // aud the app's client id (its bundle id); keys from https://appleid.apple.com/auth/keys (Fetch Apple's public key).
      const clientId = setting.audience ?? need(setting, 'clientId', IDENTIFIER, 'apple');
      return { issuer: 'https://appleid.apple.com', jwksUrl: 'https://appleid.apple.com/auth/keys', audience: clientId, tierClaim };
    }
    default:
      throw new Error(`unknown userAuth preset "${String(setting.preset)}" (known: ${PRESET_NAMES.join(', ')})`);
  }
}

/** A problem with a `userAuth` value as sent to the management API, or null. */
export function userAuthProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be an object';
  const allowed = ['preset', 'projectId', 'projectRef', 'domain', 'region', 'userPoolId', 'clientId', 'issuer', 'jwksUrl', 'audience', 'tierClaim'];
  const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
  if (unknown.length) return `has unknown field ${unknown.join(', ')}`;
  const setting = value as Record<string, unknown>;
  for (const [key, member] of Object.entries(setting)) {
    if (typeof member !== 'string' || member.length === 0 || member.length > 2048 || /[\u0000-\u001f\u007f]/.test(member)) return `${key} must be a non-empty string without control characters`;
  }
  if (setting.jwksUrl !== undefined && !/^https?:\/\//.test(setting.jwksUrl as string)) return 'jwksUrl must be an http(s) URL';
  if (setting.tierClaim !== undefined && !/^[A-Za-z0-9_:./-]{1,100}$/.test(setting.tierClaim as string)) return 'tierClaim must be a claim name';
  try {
    resolveUserAuth(setting as UserAuthSetting);
  } catch (error) {
    return (error as Error).message;
  }
  return null;
}

