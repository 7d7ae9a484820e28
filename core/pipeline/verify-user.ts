/**
 * Stage 3, `verifyUser`: the signed-in end user behind a request, from `Tollgate-User-Token` (an ID token of the app's
 * sign-in provider), verified locally against the provider's cached key set (protocol.md, "End users"); then the model
 * policy that holds for that user. Provides `user` (null without a user token).
 *
 * - `userTokenMode` `off` (default): the header is ignored. `optional`: checked when sent. `required`: refused without.
 * - Checked: the signature (asymmetric algorithms only), `iss`, `aud` (when the app names one), `exp` and `nbf` with 60 s
 *   of clock skew, and a `sub`. The user id is `sub`, scoped by issuer.
 * - Refusals: `unauthorized` with `user_token_required`, `user_token_invalid`, `user_token_expired`; `attestationFailed`
 *   with `user_blocked`; `serviceUnavailable` with `user_keys_unavailable` when the provider's keys were never fetched
 *   and cannot be now (a user whose key is cached is never refused for that).
 * - The token is never logged and never forwarded (header hygiene drops every `Tollgate-*` header). A verified token is
 *   remembered until it expires (at most {@link VERIFIED_TOKEN_MS}), so a user's next requests cost a map lookup.
 */
import { errors, jwtVerify, type JWTPayload } from 'jose';
import { inject, injectable } from 'tsyringe';
import { CONFIGURATION, GatewayError, type AppSettings, type EndUserIdentity, type PipelineStage, type ProxyContext } from '../contract';
import type { Configuration } from '../configuration/configuration';
import { END_USER_DIRECTORY, type EndUserDirectory } from '../users/end-user-store';
import { KeysUnavailable, keysFor } from '../users/jwks-keys';
import { profileFromClaims, settingsWithProfile } from '../users/profiles';
import { resolveUserAuth, userCounterKey, type ResolvedUserAuth } from '../users/user-auth';
import { enforceModelPolicy } from './model-policy';

/** Clock skew allowed on `exp` and `nbf` (protocol.md). */
const CLOCK_SKEW_SECONDS = 60;
/** A verified token is trusted again without verification for at most this long (never past its `exp`). */
const VERIFIED_TOKEN_MS = 60_000;
/** Verified tokens remembered per app settings object; past it the memory starts over. */
const VERIFIED_TOKENS_LIMIT = 50_000;
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const MAX_TOKEN_LENGTH = 16_384;

interface VerifiedToken {
  readonly issuer: string;
  readonly subject: string;
  readonly key: string;
  readonly profile: string | undefined;
  /** Unix ms until which the token is trusted without verifying it again. */
  readonly until: number;
}

function refused(reason: 'user_token_required' | 'user_token_invalid' | 'user_token_expired', message: string): GatewayError {
  return new GatewayError('unauthorized', message, { reason });
}

@injectable()
export class VerifyUserStage implements PipelineStage {
  readonly name = 'verifyUser' as const;

  constructor(
    @inject(CONFIGURATION) private readonly configuration: Configuration,
    @inject(END_USER_DIRECTORY) private readonly users: EndUserDirectory,
  ) {}

  /** Per app settings object (replaced when the app changes): its resolved sign-in provider and verified tokens. */
  private readonly perSettings = new WeakMap<AppSettings, { auth: ResolvedUserAuth; verified: Map<string, VerifiedToken> }>();

  run(context: ProxyContext): void | Promise<void> {
    const app = context.get('app');
    const settings = app.settings;
    if (settings.userTokenMode === 'off' || !settings.userAuth) {
      context.set('user', null);
      return enforceModelPolicy(context, settings, this.configuration.maxBodyBytes);
    }
    const header = context.request.headers['tollgate-user-token'];
    if (typeof header !== 'string' || header.length === 0) {
      if (settings.userTokenMode === 'required') throw refused('user_token_required', 'This app requires a signed-in user: send the user\'s ID token in Tollgate-User-Token.');
      context.set('user', null);
      return enforceModelPolicy(context, settings, this.configuration.maxBodyBytes);
    }
    const state = this.stateOf(settings);
    const known = state.verified.get(header);
    if (known !== undefined && known.until > Date.now()) return this.admit(context, settings, known);
    return this.verify(header, settings, state).then((verified) => this.admit(context, settings, verified));
  }

  private stateOf(settings: AppSettings): { auth: ResolvedUserAuth; verified: Map<string, VerifiedToken> } {
    let state = this.perSettings.get(settings);
    if (!state) {
      state = { auth: resolveUserAuth(settings.userAuth!), verified: new Map() };
      this.perSettings.set(settings, state);
    }
    return state;
  }

  private async verify(token: string, settings: AppSettings, state: { auth: ResolvedUserAuth; verified: Map<string, VerifiedToken> }): Promise<VerifiedToken> {
    const { auth } = state;
    if (token.length > MAX_TOKEN_LENGTH) throw refused('user_token_invalid', 'The user token is not valid.');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keysFor(auth.jwksUrl), {
        issuer: auth.issuer,
        ...(auth.audience !== undefined ? { audience: auth.audience } : {}),
        clockTolerance: CLOCK_SKEW_SECONDS,
        algorithms: ALGORITHMS,
        requiredClaims: ['sub', 'exp'],
      }));
    } catch (error) {
      if (error instanceof errors.JWTExpired) throw refused('user_token_expired', 'The user token has expired: get a fresh ID token from the sign-in provider.');
      if (error instanceof KeysUnavailable && error.kind === 'fetch_failed') {
        throw new GatewayError('serviceUnavailable', 'The sign-in provider\'s keys cannot be fetched right now.', { status: 503, retryAfterSeconds: 60, reason: 'user_keys_unavailable', cause: error.cause });
      }
      throw refused('user_token_invalid', 'The user token is not valid for this app (signature, issuer or audience).');
    }
    const subject = payload.sub!;
    if (subject.length === 0 || subject.length > 255) throw refused('user_token_invalid', 'The user token names no usable user (sub).');
    const key = userCounterKey(auth.issuer, subject);
    const profile = profileFromClaims(settings, auth.tierClaim, payload as Record<string, unknown>);
    const verified: VerifiedToken = { issuer: auth.issuer, subject, key, profile, until: Math.min(payload.exp! * 1000, Date.now() + VERIFIED_TOKEN_MS) };
    if (state.verified.size >= VERIFIED_TOKENS_LIMIT) state.verified.clear();
    state.verified.set(token, verified);
    return verified;
  }

  private admit(context: ProxyContext, settings: AppSettings, verified: VerifiedToken): void | Promise<void> {
    const app = context.get('app');
    if (this.users.isBlocked(app.id, verified.issuer, verified.subject)) {
      throw new GatewayError('attestationFailed', 'This user has been blocked by the operator.', { reason: 'user_blocked' });
    }
    this.users.noteSeen(app.id, verified.issuer, verified.subject, verified.profile);
    const userSettings = settingsWithProfile(settings, verified.profile);
    const user: EndUserIdentity = { issuer: verified.issuer, subject: verified.subject, key: verified.key, profile: verified.profile, settings: userSettings };
    context.set('user', user);
    return enforceModelPolicy(context, userSettings, this.configuration.maxBodyBytes);
  }
}
