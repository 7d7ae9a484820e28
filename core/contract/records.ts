/**
 * The facts the pipeline establishes about a request, stage by stage. Plain data, safe to log (no secret in them).
 */

/** Per-app settings that change how the pipeline treats the app's requests. */
export interface AppSettings {
  /** Requests per minute per device. Default 60. */
  readonly deviceLimitPerMinute: number;
  /** Requests per minute for the whole app. Default 600. */
  readonly appLimitPerMinute: number;
  /** Accept `POST /v1/attest/development` (never in production). Default false. */
  readonly allowDevelopmentAttestation: boolean;
  /** Lifetime of issued device tokens in seconds. Default 3600. */
  readonly deviceTokenTtlSeconds: number;
  /** `TEAMID.BUNDLE` for Apple App Attest. */
  readonly appleAppId: string | undefined;
  /** Android package name for Play Integrity and key attestation. */
  readonly androidPackage: string | undefined;
  /** SHA-256 of the Android signing certificate, lower-case hex. */
  readonly androidCertSha256: string | undefined;
  /** Narrows the providers this app may call (slugs). Absent: every provider it has a secret for. */
  readonly allowedProviders: readonly string[] | undefined;
  /**
   * Narrows further to routes: `slug/path-prefix` entries, e.g. `acme/chat/completions` or `acme/audio/`.
   * A bare slug allows all of that provider's routes. Absent: every route the provider's manifest allows.
   */
  readonly allowedRoutes: readonly string[] | undefined;
  /** Requests per minute per provider for the whole app, e.g. `{ openai: 300 }`. Absent: none beyond the app limit. */
  readonly providerLimitsPerMinute: Readonly<Record<string, number>> | undefined;
  /** Requests per rolling day per device. Absent: no daily quota. */
  readonly deviceDailyQuota: number | undefined;
  /** Requests per rolling day for the whole app. Absent: no daily quota. */
  readonly appDailyQuota: number | undefined;
  /**
   * Token budgets (input + output tokens as the providers report them) per fixed UTC day, checked before forwarding
   * against what was already spent: the request that crosses one completes, the next is refused (`rateLimited`,
   * reason `token_budget`) until 00:00 UTC. Absent: no budget. Per device, for the whole app, and per provider for
   * the whole app (`{ openai: 2000000 }`).
   */
  readonly deviceDailyTokens: number | undefined;
  readonly appDailyTokens: number | undefined;
  readonly providerDailyTokens: Readonly<Record<string, number>> | undefined;
  /** Token budgets per provider per device per UTC day (`{ openai: 20000 }`): one device's spend with one provider. */
  readonly providerDeviceDailyTokens: Readonly<Record<string, number>> | undefined;
  /**
   * Token budgets per fixed UTC minute (the same rules as the daily ones; `Retry-After` to the minute's end): per device,
   * for the whole app, and per provider for the whole app. They stop a burst that a daily budget would only stop once
   * the day's budget is gone. Absent: no budget.
   */
  readonly deviceMinuteTokens: number | undefined;
  readonly appMinuteTokens: number | undefined;
  readonly providerMinuteTokens: Readonly<Record<string, number>> | undefined;
  /** Open streams (unfinished responses) per device at once. Default 10. */
  readonly maxConcurrentStreamsPerDevice: number;
  /**
   * When devices with their own keys (App Attest) prove themselves: `exchange` (default), an attestation or assertion
   * each time a device token is issued or refreshed; `every-request`, also a `Tollgate-Assertion` over the request
   * digest on every proxied call.
   */
  readonly assertionMode: 'exchange' | 'every-request';
  /** Accept App Attest keys of Xcode's development environment (`appattestdevelop`); never in production. Default false. */
  readonly allowAppAttestDevelopment: boolean;
  /** The Play Integrity device verdict required. Default `MEETS_DEVICE_INTEGRITY`. */
  readonly playIntegrityDeviceVerdict: 'MEETS_BASIC_INTEGRITY' | 'MEETS_DEVICE_INTEGRITY' | 'MEETS_STRONG_INTEGRITY';
  /**
   * `enforce` (default): a request without a valid device token is refused. `monitor` (a rollout aid, as Firebase App
   * Check's unenforced mode): such a request is forwarded and counted as unverified, so that an operator can ship the
   * SDK, watch verified against unverified traffic, then enforce. A revoked device is refused in both modes. Refused in
   * production unless {@link allowMonitorInProduction} is set too.
   */
  readonly attestationMode: 'enforce' | 'monitor';
  /** With `monitor`: only these providers are monitored, the rest enforced. Absent: every provider. */
  readonly monitorProviders: readonly string[] | undefined;
  /** The explicit opt-in for `monitor` on a production gateway. Default false. */
  readonly allowMonitorInProduction: boolean;
  /**
   * Provider slugs whose `account`-class routes (files, stored data, fine-tunes…: each manifest's `routes.account`) are
   * open for this app. Absent: none; every account route answers `invalidRequest` (`route_not_allowed`).
   */
  readonly openAccountRoutes: readonly string[] | undefined;
  /**
   * Routes a manifest does not know yet, allowed for this app only: a provider, methods and a path pattern (the syntax
   * of `routes.account`). Still subject to every path-safety rule and to the manifest's `deny`.
   */
  readonly extraRoutes: readonly AppExtraRoute[] | undefined;
  /**
   * End users (core/users): the sign-in provider whose ID tokens (`Tollgate-User-Token`) identify the app's users, as
   * issuer, JWKS address, audience and tier claim, or a preset (`{ preset: 'firebase', projectId: 'my-project' }`).
   * Absent: none. Example: `{ issuer: 'https://id.example.com', jwksUrl: 'https://id.example.com/jwks.json', audience: 'app' }`.
   */
  readonly userAuth: UserAuthSetting | undefined;
  /** `off` (default): user tokens are ignored; `optional`: checked when sent; `required`: every request sends one. */
  readonly userTokenMode: 'off' | 'optional' | 'required';
  /** Requests per minute per end user, across the user's devices. Absent: none. */
  readonly userLimitPerMinute: number | undefined;
  /** Requests per rolling day per end user. Absent: none. */
  readonly userDailyQuota: number | undefined;
  /** Tokens per UTC day per end user (the rules of {@link deviceDailyTokens}). Absent: none. */
  readonly userDailyTokens: number | undefined;
  /** Tokens per UTC minute per end user. Absent: none. */
  readonly userMinuteTokens: number | undefined;
  /** Realtime session seconds per UTC day per end user (enforced by realtime sessions). Absent: none. */
  readonly userDailySessionSeconds: number | undefined;
  /**
   * Named limit profiles: the one named by the user token's tier claim overrides the app's own values for that user's
   * requests, e.g. `{ pro: { userDailyQuota: 1000, modelPolicy: {…} } }`. Absent: none.
   */
  readonly profiles: Readonly<Record<string, LimitProfile>> | undefined;
  /**
   * Model policy per provider slug: allowed models, aliases replaced before forwarding, a clamp of the output-token
   * field (where each route's body names them: the manifest's `requestFields`). Absent: bodies pass byte for byte.
   * Example: `{ openai: { allow: ['gpt-4o-mini'], aliases: { fast: 'gpt-4o-mini' }, maxOutputTokens: 1024 } }`.
   */
  readonly modelPolicy: Readonly<Record<string, ModelPolicy>> | undefined;
  /** Longest realtime session in seconds; closed with 4429 `session_too_long`. Default 1800. */
  readonly maxSessionSeconds: number;
  /** Seconds without a frame either way after which a realtime session is closed (4504 `session_idle`). Default 120. */
  readonly sessionIdleSeconds: number;
  /** Realtime session seconds per UTC day per device, and for the whole app (4429 `session_seconds_budget`). Absent: none. */
  readonly deviceDailySessionSeconds: number | undefined;
  readonly appDailySessionSeconds: number | undefined;
  /**
   * Provider slugs whose `credential` routes (provider credentials minted for the device) are open for this app. Absent:
   * none (`route_not_allowed`). What a device does with such a credential bypasses every limit until it expires.
   */
  readonly openCredentialRoutes: readonly string[] | undefined;
  /** The longest lifetime, in seconds, a minted credential may ask for where the provider takes one. Default 60. */
  readonly credentialTtlSeconds: number;
  /**
   * Alerts (webhook events, core/webhooks): `spend.threshold` once per UTC day when the app's estimated spend of the day
   * (the usage view's prices) passes this many USD. Absent: none.
   */
  readonly dailySpendAlertUsd: number | undefined;
  /**
   * `attestation.failure_rate` when, over the trailing 15 minutes, at least `minAttempts` attestations were tried and
   * `percent` % or more of them were refused. Absent: none (attempts are then not counted).
   */
  readonly attestationFailureAlert: AttestationFailureAlert | undefined;
}

/** See {@link AppSettings.attestationFailureAlert}. */
export interface AttestationFailureAlert {
  /** The share of refused attestations, 1 … 100. */
  readonly percent: number;
  /** Attempts over the 15 minutes below which the share is not judged, 1 … 1,000,000. */
  readonly minAttempts: number;
}

/** See {@link AppSettings.userAuth}: explicit fields, or a preset with its parameters. */
export interface UserAuthSetting {
  readonly preset?: 'firebase' | 'supabase' | 'auth0' | 'clerk' | 'cognito' | 'apple';
  /** Firebase project id. */
  readonly projectId?: string;
  /** Supabase project reference (the `<ref>` of `https://<ref>.supabase.co`). */
  readonly projectRef?: string;
  /** Auth0 tenant domain (`example.eu.auth0.com`) or Clerk Frontend API host (`clerk.example.com`). */
  readonly domain?: string;
  /** Amazon Cognito region and user pool id. */
  readonly region?: string;
  readonly userPoolId?: string;
  /** Amazon Cognito app client id, or the Sign in with Apple client id (the app's bundle id). */
  readonly clientId?: string;
  readonly issuer?: string;
  readonly jwksUrl?: string;
  /** The `aud` the tokens must carry; absent: not checked (only where the provider sets none, e.g. Clerk). */
  readonly audience?: string;
  /** The claim whose value (a string, or the first known of a list) names a {@link AppSettings.profiles} entry. */
  readonly tierClaim?: string;
}

/** Limits a profile may override (per device and per user) and its own model policy. */
export interface LimitProfile {
  readonly deviceLimitPerMinute?: number;
  readonly deviceDailyQuota?: number;
  readonly deviceDailyTokens?: number;
  readonly deviceMinuteTokens?: number;
  readonly userLimitPerMinute?: number;
  readonly userDailyQuota?: number;
  readonly userDailyTokens?: number;
  readonly userMinuteTokens?: number;
  readonly userDailySessionSeconds?: number;
  readonly modelPolicy?: Readonly<Record<string, ModelPolicy>>;
}

/** One provider's model policy (see {@link AppSettings.modelPolicy}). */
export interface ModelPolicy {
  /** Models a request may name (after aliases). Absent: any. */
  readonly allow?: readonly string[];
  /** Alias → model, replaced in the body before forwarding. */
  readonly aliases?: Readonly<Record<string, string>>;
  /** Output tokens a request may ask for at most: the route's output-limit field is lowered (or set) to it. */
  readonly maxOutputTokens?: number;
}

/**
 * The signed-in end user behind a request (set by `verifyUser`), or null when the request carries no user token.
 * `settings` are the app's settings with the user's profile applied: the limits and policies that hold for this user.
 */
export interface EndUserIdentity {
  /** The token's `iss`. */
  readonly issuer: string;
  /** The token's `sub`: the user id, scoped by issuer. */
  readonly subject: string;
  /** Counter key of the user (issuer-scoped, no separators of the store's keys). */
  readonly key: string;
  /** The profile the tier claim selected, if any. */
  readonly profile: string | undefined;
  readonly settings: AppSettings;
}

/** One extra route of an app (see {@link AppSettings.extraRoutes}). */
export interface AppExtraRoute {
  readonly provider: string;
  readonly methods: readonly ('GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE')[];
  /** A route pattern, e.g. `evals/**` or `files/{file_id}`. */
  readonly path: string;
}

/** Default limits and lifetimes (protocol.md, issue "Core gateway"). */
export const DEFAULT_APP_SETTINGS: AppSettings = Object.freeze({
  deviceLimitPerMinute: 60,
  appLimitPerMinute: 600,
  allowDevelopmentAttestation: false,
  deviceTokenTtlSeconds: 3600,
  appleAppId: undefined,
  androidPackage: undefined,
  androidCertSha256: undefined,
  allowedProviders: undefined,
  allowedRoutes: undefined,
  providerLimitsPerMinute: undefined,
  deviceDailyQuota: undefined,
  appDailyQuota: undefined,
  deviceDailyTokens: undefined,
  appDailyTokens: undefined,
  providerDailyTokens: undefined,
  providerDeviceDailyTokens: undefined,
  deviceMinuteTokens: undefined,
  appMinuteTokens: undefined,
  providerMinuteTokens: undefined,
  maxConcurrentStreamsPerDevice: 10,
  assertionMode: 'exchange',
  allowAppAttestDevelopment: false,
  playIntegrityDeviceVerdict: 'MEETS_DEVICE_INTEGRITY',
  openAccountRoutes: undefined,
  extraRoutes: undefined,
  attestationMode: 'enforce',
  monitorProviders: undefined,
  allowMonitorInProduction: false,
  userAuth: undefined,
  userTokenMode: 'off',
  userLimitPerMinute: undefined,
  userDailyQuota: undefined,
  userDailyTokens: undefined,
  userMinuteTokens: undefined,
  userDailySessionSeconds: undefined,
  profiles: undefined,
  modelPolicy: undefined,
  maxSessionSeconds: 1800,
  sessionIdleSeconds: 120,
  deviceDailySessionSeconds: undefined,
  appDailySessionSeconds: undefined,
  openCredentialRoutes: undefined,
  credentialTtlSeconds: 60,
  dailySpendAlertUsd: undefined,
  attestationFailureAlert: undefined,
});

/**
 * The app a request's `Tollgate-App-Token` belongs to (set by `verifyToken`). Never changed once handed out: when the
 * app changes, the directory hands out a new object, so a stage may keep what it derives from one by identity.
 */
export interface AppIdentity {
  readonly id: string;
  readonly name: string;
  readonly settings: AppSettings;
  /** Device tokens issued before this instant (unix ms) are refused: revocation of every device of the app. */
  readonly devicesRevokedBefore: number;
}

/** The attested device behind a request (set by `verifyDevice`). */
export interface DeviceIdentity {
  /** The device key id (`dev` claim). */
  readonly deviceId: string;
  /** Attestation method (`m` claim), e.g. `development` or `apple-app-attest`. */
  readonly method: string;
  /** Token id (`jti` claim). */
  readonly tokenId: string;
  /** Unix ms. */
  readonly issuedAt: number;
  /** Unix ms. */
  readonly expiresAt: number;
  /**
   * False for a request forwarded in `monitor` mode without a valid device token: `deviceId` is then a per-address
   * bucket (`unverified:<address>`) for the limits only, never recorded as a device. Absent: verified.
   */
  readonly verified?: boolean;
}

/** One quota that applied to a request, for the `RateLimit-Policy` and `RateLimit` headers. */
export interface LimitOutcome {
  /** Policy name as sent in the headers, e.g. `device` or `app`. */
  readonly policy: string;
  /** Quota units per window. */
  readonly limit: number;
  /** Window in seconds. */
  readonly windowSeconds: number;
  /** Units left after this request. */
  readonly remaining: number;
  /** Seconds until the quota is whole again. */
  readonly resetSeconds: number;
}

/** What `limitRate` decided (set when the request is admitted). */
export interface LimitDecision {
  readonly outcomes: readonly LimitOutcome[];
}
