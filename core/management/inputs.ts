/**
 * Inputs of management operations (CLI, admin API, assistant server), validated with class-validator. Unknown fields
 * are refused (no mass assignment), and a failure names each failing field.
 */
import 'reflect-metadata';
import { Transform, plainToInstance } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsISO8601,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsPositive,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  IsObject,
  Validate,
  ValidateIf,
  ValidatorConstraint,
  type ValidatorConstraintInterface,
  type ValidationArguments,
  getMetadataStorage,
  validateSync,
  type ValidationError,
} from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { TollgateError } from '../contract';
import { routePatternProblem } from '../pipeline/route-class';
import { MODEL_POLICY_SCHEMA, ModelPolicyConstraint, PROFILES_SCHEMA, ProfilesConstraint, USER_AUTH_SCHEMA, UserAuthConstraint } from './end-user-inputs';

const SLUG = /^[a-z0-9][a-z0-9-]{0,39}$/;
const APPLE_APP_ID = /^[A-Z0-9]{10}\.[A-Za-z0-9][A-Za-z0-9.-]{0,154}$/;
const ANDROID_PACKAGE = /^[a-zA-Z][a-zA-Z0-9_]*(\.[a-zA-Z][a-zA-Z0-9_]*)+$/;
const SHA256_HEX = /^([0-9a-fA-F]{2}:?){31}[0-9a-fA-F]{2}$/;
const ROUTE = /^[a-z0-9][a-z0-9-]{0,39}(\/[A-Za-z0-9._~:\/-]{0,200})?$/;
const PRINTABLE = /^[^\u0000-\u001f\u007f]*$/;

/** `{ slug: requests per minute }`, at most 100 providers, each limit 1 … 100 000 000. */
@ValidatorConstraint({ name: 'providerLimits' })
class ProviderLimits implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.length <= 100 && entries.every(([slug, limit]) => SLUG.test(slug) && Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= 100_000_000);
  }
  defaultMessage(): string {
    return 'providerLimitsPerMinute must map provider slugs to whole numbers of requests per minute';
  }
}

/** `{ slug: tokens per window }`, at most 100 providers, each budget 1 … 10^12 tokens. */
@ValidatorConstraint({ name: 'providerTokenBudgets' })
class ProviderTokenBudgets implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.length <= 100 && entries.every(([slug, budget]) => SLUG.test(slug) && Number.isInteger(budget) && (budget as number) >= 1 && (budget as number) <= 1_000_000_000_000);
  }
  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must map provider slugs to whole numbers of tokens per ${args.property.includes('Minute') ? 'minute' : 'day'} (1 to 10^12)`;
  }
}

/** `attestationFailureAlert`: exactly `{ percent: 1 … 100, minAttempts: 1 … 1,000,000 }` (whole numbers). */
@ValidatorConstraint({ name: 'attestationFailureAlert' })
class AttestationFailureAlertConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
    const { percent, minAttempts, ...rest } = value as Record<string, unknown>;
    return Object.keys(rest).length === 0 && Number.isInteger(percent) && (percent as number) >= 1 && (percent as number) <= 100 && Number.isInteger(minAttempts) && (minAttempts as number) >= 1 && (minAttempts as number) <= 1_000_000;
  }
  defaultMessage(): string {
    return 'attestationFailureAlert must be {"percent": 1-100, "minAttempts": 1-1000000} (whole numbers), or null to clear it';
  }
}

/** The JSON Schema of a `{ slug: tokens }` budget map. */
const providerTokenBudgetsSchema = (description: string) => ({
  type: 'object' as const,
  maxProperties: 100,
  // propertyNames (slugs) is checked by the validator; the schema type of this library lacks the keyword.
  additionalProperties: { type: 'integer' as const, minimum: 1, maximum: 1_000_000_000_000 },
  description,
});

/**
 * `[{ provider, methods, path }]`: routes a manifest does not know yet, for one app. At most 200; each names a provider
 * slug, 1 to 5 distinct methods, and a route pattern (the `routes.account` syntax: `*`, `{name}`, a final `**`).
 */
@ValidatorConstraint({ name: 'extraRoutes' })
class ExtraRoutes implements ValidatorConstraintInterface {
  private problem = '';
  validate(value: unknown): boolean {
    this.problem = extraRoutesProblem(value) ?? '';
    return this.problem === '';
  }
  defaultMessage(): string {
    return `extraRoutes ${this.problem}`;
  }
}

const EXTRA_ROUTE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

function extraRoutesProblem(value: unknown): string | null {
  if (!Array.isArray(value)) return 'must be an array of {provider, methods, path}';
  if (value.length > 200) return 'may hold at most 200 routes';
  for (const [index, entry] of value.entries()) {
    const at = `entry ${index}`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return `${at} must be an object {provider, methods, path}`;
    const keys = Object.keys(entry as object);
    const unknown = keys.filter((key) => !['provider', 'methods', 'path'].includes(key));
    if (unknown.length) return `${at} has unknown field ${unknown.join(', ')}`;
    const { provider, methods, path } = entry as Record<string, unknown>;
    if (typeof provider !== 'string' || !SLUG.test(provider)) return `${at}: provider must be a provider slug`;
    if (!Array.isArray(methods) || methods.length === 0 || methods.length > 5 || new Set(methods).size !== methods.length || !methods.every((method) => EXTRA_ROUTE_METHODS.includes(method as string))) {
      return `${at}: methods must be 1 to 5 distinct methods among ${EXTRA_ROUTE_METHODS.join(', ')}`;
    }
    const problem = typeof path === 'string' ? routePatternProblem(path) : 'must be a string';
    if (problem) return `${at}: path ${problem}`;
  }
  return null;
}

export class AppSettingsInput {
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000) deviceLimitPerMinute?: number;
  @IsOptional() @IsInt() @Min(1) @Max(100_000_000) appLimitPerMinute?: number;
  @IsOptional() @IsBoolean() allowDevelopmentAttestation?: boolean;
  @IsOptional() @IsInt() @Min(60) @Max(7 * 24 * 3600) deviceTokenTtlSeconds?: number;
  @IsOptional() @IsString() @Matches(APPLE_APP_ID, { message: 'appleAppId must be TEAMID.BUNDLE (10-character team id, a dot, the bundle id)' })
  appleAppId?: string;
  @IsOptional() @IsString() @Matches(ANDROID_PACKAGE, { message: 'androidPackage must be a Java package name such as com.example.app' })
  androidPackage?: string;
  @IsOptional() @IsString() @Matches(SHA256_HEX, { message: 'androidCertSha256 must be a SHA-256 digest in hex (colons allowed)' })
  androidCertSha256?: string;
  @IsOptional() @IsArray() @ArrayMaxSize(100) @Matches(SLUG, { each: true, message: 'allowedProviders must be provider slugs' })
  allowedProviders?: string[];
  @IsOptional()
  // Validated as sent: class-transformer would rebuild the map and silently drop keys such as `toString`.
  @Transform(({ obj }) => (obj as Record<string, unknown>).providerLimitsPerMinute)
  @IsObject()
  @Validate(ProviderLimits)
  @JSONSchema({
    type: 'object',
    maxProperties: 100,
    // propertyNames (slugs) is checked by the validator; the schema type of this library lacks the keyword.
    additionalProperties: { type: 'integer', minimum: 1, maximum: 100_000_000 },
    description: 'requests per minute per provider slug',
  })
  providerLimitsPerMinute?: Record<string, number>;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) deviceDailyQuota?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) appDailyQuota?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000_000)
  @JSONSchema({ description: 'tokens (input + output, as the provider reports them) per UTC day per device; null clears' })
  deviceDailyTokens?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000_000)
  @JSONSchema({ description: 'tokens per UTC day for the whole app; null clears' })
  appDailyTokens?: number;
  @IsOptional()
  @Transform(({ obj }) => (obj as Record<string, unknown>).providerDailyTokens)
  @IsObject()
  @Validate(ProviderTokenBudgets)
  @JSONSchema(providerTokenBudgetsSchema('tokens per UTC day per provider slug for the whole app; null clears'))
  providerDailyTokens?: Record<string, number>;
  @IsOptional()
  @Transform(({ obj }) => (obj as Record<string, unknown>).providerDeviceDailyTokens)
  @IsObject()
  @Validate(ProviderTokenBudgets)
  @JSONSchema(providerTokenBudgetsSchema('tokens per UTC day per provider slug for each device; null clears'))
  providerDeviceDailyTokens?: Record<string, number>;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000_000)
  @JSONSchema({ description: 'tokens (input + output, as the provider reports them) per UTC minute per device; null clears' })
  deviceMinuteTokens?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000_000)
  @JSONSchema({ description: 'tokens per UTC minute for the whole app; null clears' })
  appMinuteTokens?: number;
  @IsOptional()
  @Transform(({ obj }) => (obj as Record<string, unknown>).providerMinuteTokens)
  @IsObject()
  @Validate(ProviderTokenBudgets)
  @JSONSchema(providerTokenBudgetsSchema('tokens per UTC minute per provider slug for the whole app; null clears'))
  providerMinuteTokens?: Record<string, number>;
  @IsOptional() @IsInt() @Min(1) @Max(10_000) maxConcurrentStreamsPerDevice?: number;
  @IsOptional() @IsArray() @ArrayMaxSize(200) @Matches(ROUTE, { each: true, message: 'allowedRoutes entries must be slug or slug/path-prefix' })
  allowedRoutes?: string[];
  @IsOptional() @IsArray() @ArrayMaxSize(100) @Matches(SLUG, { each: true, message: 'openAccountRoutes must be provider slugs' })
  @JSONSchema({ description: 'provider slugs whose account-class routes (files, stored data, fine-tunes…) are open for this app; null closes all' })
  openAccountRoutes?: string[];
  @IsOptional()
  @Validate(ExtraRoutes)
  @JSONSchema({
    type: 'array',
    maxItems: 200,
    description: 'routes a manifest does not know yet, for this app only; still subject to path safety and the manifest deny list; null clears',
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['provider', 'methods', 'path'],
      properties: {
        provider: { type: 'string', pattern: SLUG.source },
        methods: { type: 'array', minItems: 1, maxItems: 5, uniqueItems: true, items: { type: 'string', enum: EXTRA_ROUTE_METHODS } },
        path: { type: 'string', minLength: 1, maxLength: 300, description: 'a route pattern: segments, "*" or {name} for one segment, a final "**" for the rest' },
      },
    },
  })
  extraRoutes?: Array<{ provider: string; methods: Array<'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'>; path: string }>;
  @IsOptional() @IsInt() @Min(1) @Max(86_400)
  @JSONSchema({ description: 'longest realtime session in seconds (closed 4429 session_too_long); default 1800' })
  maxSessionSeconds?: number;
  @IsOptional() @IsInt() @Min(1) @Max(86_400)
  @JSONSchema({ description: 'seconds without a frame after which a realtime session is closed (4504 session_idle); default 120' })
  sessionIdleSeconds?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000)
  @JSONSchema({ description: 'realtime session seconds per UTC day per device; null clears' })
  deviceDailySessionSeconds?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000)
  @JSONSchema({ description: 'realtime session seconds per UTC day for the whole app; null clears' })
  appDailySessionSeconds?: number;
  @IsOptional() @IsArray() @ArrayMaxSize(100) @Matches(SLUG, { each: true, message: 'openCredentialRoutes must be provider slugs' })
  @JSONSchema({ description: 'provider slugs whose credential-minting routes are open for this app: a minted credential bypasses every limit, budget and revocation until it expires; null closes all' })
  openCredentialRoutes?: string[];
  @IsOptional() @IsInt() @Min(1) @Max(3600)
  @JSONSchema({ description: 'longest lifetime in seconds of a credential minted through a credential route, where the provider takes one; default 60' })
  credentialTtlSeconds?: number;
  @IsOptional() @IsIn(['exchange', 'every-request']) assertionMode?: 'exchange' | 'every-request';
  @IsOptional() @IsBoolean() allowAppAttestDevelopment?: boolean;
  @IsOptional() @IsIn(['MEETS_BASIC_INTEGRITY', 'MEETS_DEVICE_INTEGRITY', 'MEETS_STRONG_INTEGRITY'])
  playIntegrityDeviceVerdict?: 'MEETS_BASIC_INTEGRITY' | 'MEETS_DEVICE_INTEGRITY' | 'MEETS_STRONG_INTEGRITY';
  @IsOptional() @IsIn(['enforce', 'monitor']) attestationMode?: 'enforce' | 'monitor';
  @IsOptional() @IsArray() @ArrayMaxSize(100) @Matches(SLUG, { each: true, message: 'monitorProviders must be provider slugs' })
  monitorProviders?: string[];
  @IsOptional() @IsBoolean() allowMonitorInProduction?: boolean;
  // End users and model policy (core/users, core/management/end-user-inputs.ts).
  @IsOptional() @Transform(({ obj }) => (obj as Record<string, unknown>).userAuth) @Validate(UserAuthConstraint) @JSONSchema(USER_AUTH_SCHEMA)
  userAuth?: Record<string, string>;
  @IsOptional() @IsIn(['off', 'optional', 'required']) userTokenMode?: 'off' | 'optional' | 'required';
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000) userLimitPerMinute?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000) userDailyQuota?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000_000) userDailyTokens?: number;
  @IsOptional() @IsInt() @Min(1) @Max(1_000_000_000_000) userMinuteTokens?: number;
  @IsOptional() @IsInt() @Min(1) @Max(86_400) userDailySessionSeconds?: number;
  @IsOptional() @Transform(({ obj }) => (obj as Record<string, unknown>).profiles) @Validate(ProfilesConstraint) @JSONSchema(PROFILES_SCHEMA)
  profiles?: Record<string, Record<string, unknown>>;
  @IsOptional() @Transform(({ obj }) => (obj as Record<string, unknown>).modelPolicy) @Validate(ModelPolicyConstraint) @JSONSchema(MODEL_POLICY_SCHEMA)
  modelPolicy?: Record<string, Record<string, unknown>>;
  // Alerts (core/webhooks): the amounts that raise spend.threshold and attestation.failure_rate.
  @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @IsPositive() @Max(1_000_000_000)
  @JSONSchema({ description: 'USD: spend.threshold is raised once per UTC day when the app\'s estimated spend of the day passes it; null clears' })
  dailySpendAlertUsd?: number;
  @IsOptional()
  @Transform(({ obj }) => (obj as Record<string, unknown>).attestationFailureAlert)
  @Validate(AttestationFailureAlertConstraint)
  @JSONSchema({
    type: 'object',
    required: ['percent', 'minAttempts'],
    additionalProperties: false,
    properties: { percent: { type: 'integer', minimum: 1, maximum: 100 }, minAttempts: { type: 'integer', minimum: 1, maximum: 1_000_000 } },
    description: 'attestation.failure_rate is raised when, over the trailing 15 minutes, at least minAttempts attestations were tried and percent % or more were refused; null clears',
  })
  attestationFailureAlert?: { percent: number; minAttempts: number };
}

export class CreateAppInput extends AppSettingsInput {
  @IsString() @Length(1, 200) @Matches(PRINTABLE, { message: 'name must not contain control characters' }) name!: string;
}

export class UpdateAppInput extends AppSettingsInput {
  // Absent keeps the name; null is refused (a name cannot be reset). Found by schemathesis: null reached the database.
  @ValidateIf((input: UpdateAppInput) => input.name !== undefined) @IsString() @Length(1, 200) @Matches(PRINTABLE, { message: 'name must not contain control characters' }) name?: string;
}

export class SetSecretInput {
  @IsString() @Length(1, 64) appId!: string;
  @IsString() @Matches(SLUG, { message: 'provider must be a provider slug' }) provider!: string;
  @IsString() @Length(1, 16_384) @Matches(PRINTABLE, { message: 'value must not contain control characters or line breaks' }) value!: string;
  @IsOptional() @IsString() @Length(1, 2048) baseUrl?: string;
}

/** The body of `POST /v1/admin/apps/{appId}/rotate-token` (optional). */
export class RotateTokenInput {
  /** Hours the old token keeps working (default 168 = 7 days; 0 ends it at once; at most 8760). */
  @IsOptional() @IsInt() @Min(0) @Max(8760) graceHours?: number;
}

/** The body of `PUT /v1/admin/prices`: one model's price, USD per million tokens. */
export class SetPriceInput {
  @IsString() @Matches(SLUG, { message: 'provider must be a provider slug' }) provider!: string;
  @IsString() @Length(1, 200) @Matches(PRINTABLE, { message: 'model must not contain control characters' })
  @JSONSchema({ description: 'the model name as the provider reports it; a dated version suffix (-2024-07-18, -20241022) falls back to the name without it' })
  model!: string;
  @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(0) @Max(1_000_000) inputUsdPerMillion!: number;
  @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(0) @Max(1_000_000) outputUsdPerMillion!: number;
}

/** The query of `DELETE /v1/admin/prices`. */
export class DeletePriceInput {
  @IsString() @Matches(SLUG, { message: 'provider must be a provider slug' }) provider!: string;
  @IsString() @Length(1, 200) model!: string;
}

export class NameInput {
  @IsString() @Length(1, 200) @Matches(PRINTABLE, { message: 'name must not contain control characters' }) name!: string;
}

/** The body of `POST /v1/admin/admin-keys` (and of the CLI and assistant tools that create keys). */
export class CreateAdminKeyInput {
  @IsString() @Length(1, 200) @Matches(PRINTABLE, { message: 'name must not contain control characters' }) name!: string;
  /** Absent: `admin` (every scope), as keys made before scopes existed. */
  @IsOptional() @IsArray() @ArrayMinSize(1) @ArrayMaxSize(4) @IsIn(['read', 'apps', 'secrets', 'admin'], { each: true, message: 'scopes must be read, apps, secrets or admin' })
  @JSONSchema({ description: 'read (every read, nothing else), apps (apps, settings, devices, users, webhooks, prices), secrets (provider keys and attestation credentials), admin (admin keys and dashboard administrators; implies all). Default admin. Never more than the creating key holds.' })
  scopes?: Array<'read' | 'apps' | 'secrets' | 'admin'>;
  /** When the key stops working (ISO 8601, in the future); absent: never. */
  @IsOptional() @IsISO8601({ strict: true }) @JSONSchema({ description: 'when the key stops working (ISO 8601 date-time, in the future, at most 10 years ahead); absent: never. A key that expires can only create keys that expire no later.' })
  expiresAt?: string;
}

/** The body of `PUT /v1/admin/apps/{appId}/secrets/{provider}`. */
export class SecretBodyInput {
  @IsString() @Length(1, 16_384) @Matches(PRINTABLE, { message: 'value must not contain control characters or line breaks' }) value!: string;
  @IsOptional() @IsString() @Length(1, 2048) baseUrl?: string;
}

/** Credentials an app keeps for its attestation methods, stored like provider keys (encrypted, write-only). */
export const ATTESTATION_SECRET_NAMES = ['play-integrity-decryption-key', 'play-integrity-verification-key', 'play-integrity-service-account'] as const;
export type AttestationSecretName = (typeof ATTESTATION_SECRET_NAMES)[number];

/** The body of `PUT /v1/admin/apps/{appId}/attestation-secrets/{name}`: line breaks allowed (a service-account JSON file). */
export class AttestationSecretBodyInput {
  @IsString() @Length(1, 16_384) @Matches(/^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]*$/, { message: 'value must not contain control characters other than line breaks and tabs' }) value!: string;
}

export class DevelopmentTokenInput {
  @IsOptional() @IsString() @Length(1, 200) @Matches(PRINTABLE, { message: 'label must not contain control characters' }) label?: string;
}

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

export class SignInInput {
  @IsString() @Matches(USERNAME, { message: 'username must be 1-100 letters, digits, or . _ @ -' }) username!: string;
  @IsString() @Length(1, 1024) password!: string;
}

/** The body of `POST /v1/admin/users`: a new dashboard administrator. */
export class CreateUserInput {
  @IsString() @Matches(USERNAME, { message: 'username must be 1-100 letters, digits, or . _ @ -' }) username!: string;
  @IsString() @Length(12, 1024, { message: 'password must be at least 12 characters' }) password!: string;
}

/** The body of `POST /v1/admin/session/password`: change one's own password. */
export class ChangePasswordInput {
  @IsString() @Length(1, 1024) currentPassword!: string;
  @IsString() @Length(12, 1024, { message: 'newPassword must be at least 12 characters' }) newPassword!: string;
}

export class SetupInput {
  @IsString() @Length(1, 100) setupToken!: string;
  @IsString() @Matches(USERNAME, { message: 'username must be 1-100 letters, digits, or . _ @ -' }) username!: string;
  @IsString() @Length(12, 1024, { message: 'password must be at least 12 characters' }) password!: string;
}

function collect(errors: readonly ValidationError[], prefix = '', into: Record<string, string[]> = {}): Record<string, string[]> {
  for (const error of errors) {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints) into[field] = Object.values(error.constraints);
    if (error.children?.length) collect(error.children, field, into);
  }
  return into;
}

/** Names that reach `Object.prototype` or a constructor when used as keys: refused at any depth of an input. */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
/** Inputs are a few levels deep at most (a map of limits, a list of routes; a profile's model policy: profiles.pro.modelPolicy.openai.allow). */
const MAX_INPUT_DEPTH = 5;

/** The fields `type` declares (class-validator metadata), by class. */
const declaredFields = new Map<Function, ReadonlySet<string>>();
function fieldsOf(type: Function): ReadonlySet<string> {
  let fields = declaredFields.get(type);
  if (!fields) {
    fields = new Set(getMetadataStorage().getTargetValidationMetadatas(type, '', true, false).map((metadata) => metadata.propertyName));
    declaredFields.set(type, fields);
  }
  return fields;
}

/**
 * The shape checks done before class-transformer sees an input: only plain JSON values; only declared fields at the top
 * (an inherited name such as `toString` or `hasOwnProperty` is not one); no prototype key (`__proto__`, `constructor`,
 * `prototype`) at any depth; nothing deeper than {@link MAX_INPUT_DEPTH}. Each problem is named by its path.
 */
function shapeProblems(type: Function, plain: Record<string, unknown>): { problems: Record<string, string[]>; sound: Record<string, unknown> } {
  // Null prototype: a problem named `__proto__` must be a key like any other.
  const problems: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  const fields = fieldsOf(type);
  const walk = (value: unknown, path: string, depth: number): boolean => {
    if (value === null || typeof value !== 'object') return true;
    if (depth > MAX_INPUT_DEPTH) {
      problems[path] = ['is nested too deeply'];
      return false;
    }
    if (Array.isArray(value)) return value.map((entry, index) => walk(entry, `${path}[${index}]`, depth + 1)).every(Boolean);
    if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) {
      problems[path] = ['must be a JSON object'];
      return false;
    }
    let clean = true;
    for (const key of Object.keys(value)) {
      const field = `${path}.${key}`;
      if (PROTOTYPE_KEYS.has(key)) {
        problems[field] = [`${key} is not an accepted name`];
        clean = false;
      } else if (!walk((value as Record<string, unknown>)[key], field, depth + 1)) clean = false;
    }
    return clean;
  };
  // The fields without a shape problem, for the field-by-field validation (so that every failing field is named).
  const sound: Record<string, unknown> = {};
  for (const key of Object.keys(plain)) {
    if (PROTOTYPE_KEYS.has(key)) problems[key] = [`${key} is not an accepted name`];
    else if (!fields.has(key)) problems[key] = [`property ${key} should not exist`];
    else if (walk(plain[key], key, 1)) sound[key] = plain[key];
  }
  return { problems, sound };
}

function validationError(details: Record<string, string[]>): TollgateError {
  const summary = Object.entries(details)
    .map(([field, messages]) => `${field}: ${messages.join('; ')}`)
    .join(' | ');
  return new TollgateError('TG_ERR_VALIDATION', `invalid input: ${summary}`, details);
}

/**
 * Validates `plain` against `type`, refusing unknown fields, inherited and prototype names, and anything but plain
 * JSON values, so that every bad input is a typed `validation` error, never a crash.
 *
 * @throws TollgateError `TG_ERR_VALIDATION` with `details` naming each failing field.
 */
export function validateInput<T extends object>(type: new () => T, plain: unknown): T {
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) {
    throw new TollgateError('TG_ERR_VALIDATION', 'the input must be a JSON object', { input: ['must be an object'] });
  }
  const shape = shapeProblems(type, plain as Record<string, unknown>);
  const instance = plainToInstance(type, shape.sound, { enableImplicitConversion: false });
  const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true, forbidUnknownValues: true });
  const problems = Object.assign(Object.create(null) as Record<string, string[]>, collect(errors), shape.problems);
  if (Object.keys(problems).length > 0) throw validationError(problems);
  return instance;
}
