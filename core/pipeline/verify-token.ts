import { inject, injectable } from 'tsyringe';
import { CLOCK, GATEWAY_DIRECTORY, GatewayError, type AppEntry, type GatewayDirectory, type PipelineStage, type ProxyContext } from '../contract';
import { hashToken, isWellFormedToken } from '../security/tokens';
import { processMap } from './process-caches';

/** The shared check of `Tollgate-App-Token`, used by the proxy pipeline and the attestation routes. */
export function checkAppToken(directory: GatewayDirectory, header: string | string[] | undefined, nowMs: number = Date.now()): AppEntry | Promise<AppEntry> {
  if (typeof header !== 'string' || header.length === 0) {
    throw new GatewayError('unauthorized', 'Missing Tollgate-App-Token header.', { reason: 'app_token_missing' });
  }
  if (!isWellFormedToken('app', header)) {
    throw new GatewayError('unauthorized', 'The app token is malformed (expected at_ followed by 32 letters and digits).', { reason: 'app_token_malformed' });
  }
  // Lookup is by SHA-256 of the token in an index (or a map): the secret is never compared byte by byte.
  const known = admittedTokenHashes.get(header);
  const hash = known ?? hashToken(header);
  // A token not remembered yet is remembered once admitted.
  const remember = known === undefined ? header : undefined;
  const found = directory.findAppByTokenHash(hash);
  return found instanceof Promise ? found.then((app) => admit(app, hash, nowMs, remember)) : admit(found, hash, nowMs, remember);
}

/**
 * Tokens of admitted requests → their SHA-256 (hex). An app ships one token to all its devices, so the same few values
 * come back on every request; only admitted ones are kept (a flood of unknown tokens cannot evict them), at most
 * {@link ADMITTED_TOKENS_LIMIT}. Whether a token is still valid is decided by the lookup, every time.
 */
const admittedTokenHashes = processMap<string, string>();
const ADMITTED_TOKENS_LIMIT = 1000;

function admit(app: AppEntry | null, hash: string, nowMs: number, remember: string | undefined): AppEntry {
  if (!app) throw new GatewayError('unauthorized', 'The app token is not valid.', { reason: 'app_token_unknown' });
  // A rotated-away token works only during its grace period (the lookup matched the previous token, not the current one).
  if (app.tokenHash !== hash && !(app.previousTokenHash === hash && (app.previousTokenExpiresAt ?? 0) > nowMs)) {
    throw new GatewayError('unauthorized', 'This app token was rotated and its grace period has ended: ship the new token.', { reason: 'app_token_rotated' });
  }
  if (app.status !== 'active') throw new GatewayError('unauthorized', 'This app is disabled.', { reason: 'app_disabled' });
  if (remember !== undefined) {
    if (admittedTokenHashes.size >= ADMITTED_TOKENS_LIMIT) admittedTokenHashes.clear();
    admittedTokenHashes.set(remember, hash);
  }
  return app;
}

/** Stage 1, `verifyToken`: the `Tollgate-App-Token` names an active app. Provides `app`. */
@injectable()
export class VerifyTokenStage implements PipelineStage {
  readonly name = 'verifyToken' as const;

  constructor(
    @inject(GATEWAY_DIRECTORY) private readonly directory: GatewayDirectory,
    @inject(CLOCK) private readonly clock: () => number,
  ) {}

  run(context: ProxyContext): void | Promise<void> {
    const found = checkAppToken(this.directory, context.request.headers['tollgate-app-token'], this.clock());
    if (found instanceof Promise) return found.then((app) => context.set('app', app));
    context.set('app', found);
  }
}
