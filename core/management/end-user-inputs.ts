/**
 * Validation of the end-user and model-policy settings (`userAuth`, `profiles`, `modelPolicy`): custom class-validator
 * constraints used by `AppSettingsInput`, and the check of a whole settings object (a user token mode needs a sign-in
 * provider).
 */
import { ValidatorConstraint, type ValidatorConstraintInterface } from 'class-validator';
import { TollgateError, type AppSettings } from '../contract';
import { userAuthProblem } from '../users/user-auth';

const SLUG = /^[a-z0-9][a-z0-9-]{0,39}$/;
const MODEL = /^[^\u0000-\u001f\u007f]{1,200}$/;
const PROFILE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

/** A problem with one provider's model policy, or null. */
function policyProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be an object {allow, aliases, maxOutputTokens}';
  const unknown = Object.keys(value).filter((key) => !['allow', 'aliases', 'maxOutputTokens'].includes(key));
  if (unknown.length) return `has unknown field ${unknown.join(', ')}`;
  const { allow, aliases, maxOutputTokens } = value as Record<string, unknown>;
  if (allow !== undefined && (!Array.isArray(allow) || allow.length > 500 || !allow.every((model) => typeof model === 'string' && MODEL.test(model)))) return 'allow must be a list of at most 500 model names';
  if (aliases !== undefined) {
    if (aliases === null || typeof aliases !== 'object' || Array.isArray(aliases)) return 'aliases must map alias names to model names';
    const entries = Object.entries(aliases as Record<string, unknown>);
    if (entries.length > 500 || !entries.every(([alias, model]) => MODEL.test(alias) && typeof model === 'string' && MODEL.test(model))) return 'aliases must map at most 500 alias names to model names';
  }
  if (maxOutputTokens !== undefined && (!Number.isInteger(maxOutputTokens) || (maxOutputTokens as number) < 1 || (maxOutputTokens as number) > 10_000_000)) return 'maxOutputTokens must be a whole number from 1 to 10,000,000';
  return null;
}

/** A problem with a `modelPolicy` value (`{ slug: policy }`), or null. */
export function modelPolicyProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must map provider slugs to policies';
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 100) return 'may name at most 100 providers';
  for (const [slug, policy] of entries) {
    if (!SLUG.test(slug)) return `"${slug.slice(0, 50)}" is not a provider slug`;
    const problem = policyProblem(policy);
    if (problem) return `${slug}: ${problem}`;
  }
  return null;
}

const PROFILE_LIMITS: Record<string, number> = {
  deviceLimitPerMinute: 1_000_000,
  deviceDailyQuota: 1_000_000_000,
  deviceDailyTokens: 1_000_000_000_000,
  deviceMinuteTokens: 1_000_000_000_000,
  userLimitPerMinute: 1_000_000,
  userDailyQuota: 1_000_000_000,
  userDailyTokens: 1_000_000_000_000,
  userMinuteTokens: 1_000_000_000_000,
  userDailySessionSeconds: 86_400,
};

/** A problem with a `profiles` value, or null. */
export function profilesProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must map profile names to limits';
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 50) return 'may hold at most 50 profiles';
  for (const [name, profile] of entries) {
    if (!PROFILE.test(name)) return `"${name.slice(0, 50)}" is not a profile name (letters, digits, . _ : -)`;
    if (profile === null || typeof profile !== 'object' || Array.isArray(profile)) return `${name} must be an object of limits`;
    for (const [key, limit] of Object.entries(profile as Record<string, unknown>)) {
      if (key === 'modelPolicy') {
        const problem = modelPolicyProblem(limit);
        if (problem) return `${name}.modelPolicy ${problem}`;
        continue;
      }
      const max = PROFILE_LIMITS[key];
      if (max === undefined) return `${name} has unknown field ${key} (a profile may set ${[...Object.keys(PROFILE_LIMITS), 'modelPolicy'].join(', ')})`;
      if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > max) return `${name}.${key} must be a whole number from 1 to ${max}`;
    }
  }
  return null;
}

function constraint(name: string, check: (value: unknown) => string | null): new () => ValidatorConstraintInterface {
  @ValidatorConstraint({ name })
  class Constraint implements ValidatorConstraintInterface {
    private problem = '';
    validate(value: unknown): boolean {
      this.problem = check(value) ?? '';
      return this.problem === '';
    }
    defaultMessage(): string {
      return `${name} ${this.problem}`;
    }
  }
  return Constraint;
}

export const UserAuthConstraint = constraint('userAuth', userAuthProblem);
export const ProfilesConstraint = constraint('profiles', profilesProblem);
export const ModelPolicyConstraint = constraint('modelPolicy', modelPolicyProblem);

/** The JSON Schemas of the three settings (for the OpenAPI document). */
export const USER_AUTH_SCHEMA = {
  type: 'object' as const,
  description: 'the sign-in provider of the app\'s users: {issuer, jwksUrl, audience, tierClaim} or a preset {preset: firebase|supabase|auth0|clerk|cognito|apple, projectId|projectRef|domain|region+userPoolId|clientId, tierClaim}; null clears',
  additionalProperties: { type: 'string' as const },
};
export const PROFILES_SCHEMA = {
  type: 'object' as const,
  description: 'named limit profiles {"pro": {userDailyQuota: 1000, …, modelPolicy}}: the one the user token\'s tier claim names overrides the app\'s values; null clears',
  additionalProperties: { type: 'object' as const },
};
export const MODEL_POLICY_SCHEMA = {
  type: 'object' as const,
  description: 'per provider slug: {allow: [models], aliases: {alias: model}, maxOutputTokens}; null clears',
  additionalProperties: { type: 'object' as const },
};

/** Settings the gateway could not enforce: user tokens asked for without a sign-in provider. */
export function checkEndUserSettings(settings: AppSettings): void {
  if (settings.userTokenMode !== 'off' && !settings.userAuth) {
    throw new TollgateError('TG_ERR_VALIDATION', 'userTokenMode "optional" or "required" needs userAuth (the sign-in provider of the app\'s users).', {
      userTokenMode: ['needs userAuth'],
    });
  }
}
