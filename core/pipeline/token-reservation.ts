/**
 * Token budgets by reservation: a request is admitted only when an estimate of what it may cost fits in every budget
 * that applies, and that estimate is held in the budgets' counters while the request runs. When the answer ends the
 * reservation is settled to the tokens the provider reported, in the windows the request started in.
 *
 * - The estimate: input tokens from the body's size ({@link BYTES_PER_INPUT_TOKEN} bytes a token) plus output tokens
 *   from the request's declared output limit, found through the provider's `requestFields` (RequestBodyFields), or the
 *   route's `defaultOutputTokens` when the request names none. At least 1 token.
 * - Admission: the reservation is added to every counter only when each stays within its limit (all or nothing, one
 *   atomic step of the rate-limit store: one Lua script on Redis, so N requests on N nodes at once admit only the
 *   reservations that fit). Otherwise `rateLimited`, reason `token_budget`.
 * - Settlement (settleTokenBudgets): a 2xx answer whose input and output tokens were both read is charged what was
 *   read; one whose usage is unknown or partial (compressed against the gateway's request, cut, a stream that reported
 *   nothing) is charged at least the reservation, never zero; an answer that was not a 2xx (the gateway refused it
 *   after admission, the provider was unreachable or refused it) gives the reservation back.
 * - The bound that remains, and why these choices: docs/decisions/2026-11-28-token-budget-reservations.md.
 */
import { GatewayError, type BudgetReservation, type ProviderManifest, type ProxyContext, type RateLimitStore } from '../contract';
import { declaresBody, readRequestBody } from './request-body';
import { effectiveSettings } from '../users/profiles';
import { budgetsFor, budgetExpiresAt, budgetPolicyName, secondsToNextUtcMinute, secondsToUtcMidnight, tellThreshold, type Budget, type ThresholdListener } from './token-budget';
import { requestFieldsFor } from './model-policy';

/** Request-body bytes counted as one input token (English text averages about 4 characters a token). */
export const BYTES_PER_INPUT_TOKEN = 4;

const DAY_MS = 86_400_000;

// The route's declared body fields: one definition with the model policy's, so that the reservation and the policy
// read the same declaration for the same request, however its path is spelled.
export { requestFieldsFor };

/** The value at a dotted member path (`generationConfig.maxOutputTokens`), or undefined. */
function memberAt(document: unknown, path: string): unknown {
  let value = document;
  for (const name of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.prototype.hasOwnProperty.call(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/** True when every member of `wanted` is in `document` with the same value (objects compared member by member). */
function contains(document: unknown, wanted: unknown): boolean {
  if (wanted === null || typeof wanted !== 'object' || Array.isArray(wanted)) return document === wanted;
  if (document === null || typeof document !== 'object' || Array.isArray(document)) return false;
  return Object.entries(wanted as Record<string, unknown>).every(([name, value]) => contains((document as Record<string, unknown>)[name], value));
}

/** `target` with `extra` merged in, objects member by member (a non-object member of the target is replaced). */
function merged(target: Record<string, unknown>, extra: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const result: Record<string, unknown> = { ...target };
  for (const [name, value] of Object.entries(extra)) {
    const current = result[name];
    const bothObjects = value !== null && typeof value === 'object' && !Array.isArray(value) && current !== null && typeof current === 'object' && !Array.isArray(current);
    result[name] = bothObjects ? merged(current as Record<string, unknown>, value as Record<string, unknown>) : value;
  }
  return result;
}

export interface TokenEstimate {
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** The body to send: the client's bytes, or a copy with the route's `streamUsageRequest` merged in. */
  readonly body: Buffer;
  /** The gateway asked a stream for usage the client did not ask for: the usage-only event is not relayed. */
  readonly addedStreamUsage: boolean;
}

/**
 * What a request may cost, from its body. The body is parsed only when the route declares body fields and the body is
 * a JSON object; `streamUsageRequest` is merged in (and the body rewritten) only when `askStreamUsage` is set, the
 * request streams and its body does not already ask for the same.
 */
export function estimateTokens(manifest: ProviderManifest, method: string, providerPath: string, body: Buffer, askStreamUsage: boolean): TokenEstimate {
  const inputTokens = Math.ceil(body.length / BYTES_PER_INPUT_TOKEN);
  const fields = requestFieldsFor(manifest, method, providerPath);
  let outputTokens = fields?.defaultOutputTokens ?? 0;
  if (!fields) return { inputTokens, outputTokens, body, addedStreamUsage: false };
  let document: unknown;
  try {
    const start = body.findIndex((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
    if (start >= 0 && body[start] === 0x7b) document = JSON.parse(body.toString('utf8'));
  } catch {
    document = undefined;
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) return { inputTokens, outputTokens, body, addedStreamUsage: false };
  for (const member of fields.outputLimit ?? []) {
    const limit = memberAt(document, member);
    if (typeof limit === 'number' && Number.isFinite(limit) && limit >= 0) {
      outputTokens = Math.ceil(limit);
      break;
    }
  }
  const request = fields.streamUsageRequest;
  const streams = fields.stream === undefined || memberAt(document, fields.stream) === true;
  if (!askStreamUsage || !request || !streams || contains(document, request)) return { inputTokens, outputTokens, body, addedStreamUsage: false };
  return { inputTokens, outputTokens, body: Buffer.from(JSON.stringify(merged(document as Record<string, unknown>, request)), 'utf8'), addedStreamUsage: true };
}

/**
 * `store.reserve`, or for a store without it (a third-party plugin) a read, then an add: not atomic, so concurrent
 * requests may all fit.
 */
export function reserveIn(store: RateLimitStore, keys: readonly string[], limits: readonly number[], amount: number, ttlsMs: readonly number[]): BudgetReservation | Promise<BudgetReservation> {
  if (store.reserve) return store.reserve(keys, limits, amount, ttlsMs);
  return (async () => {
    const totals = await store.spent(keys);
    if (totals.some((total, index) => total + amount > limits[index]!)) return { admitted: false, totals };
    return { admitted: true, totals: await Promise.all(keys.map((key, index) => store.spend(key, amount, ttlsMs[index]!))) };
  })();
}

/** `store.settle`, or `spend` per key for a store without it. */
export function settleIn(store: RateLimitStore, keys: readonly string[], delta: number, ttlsMs: readonly number[]): Promise<void> {
  if (store.settle) return Promise.resolve(store.settle(keys, delta, ttlsMs));
  return Promise.all(keys.map((key, index) => store.spend(key, delta, ttlsMs[index]!))).then(() => undefined);
}

/** A reservation held by one admitted request until it is settled. */
export interface TokenReservation {
  readonly budgets: readonly Budget[];
  readonly tokens: number;
  /** When the request was admitted: its windows are the ones settled. */
  readonly startedMs: number;
  readonly addedStreamUsage: boolean;
  settled: boolean;
}

const reservations = new WeakMap<ProxyContext, TokenReservation>();

/** The reservation of an admitted request, when budgets applied to it. */
export function reservationOf(context: ProxyContext): TokenReservation | undefined {
  return reservations.get(context);
}

/** Milliseconds from `nowMs` until the counter of `budget` (of the window that held `startedMs`) expires. */
function ttlOf(budget: Budget, startedMs: number, nowMs: number): number {
  return budgetExpiresAt(budget, startedMs) - nowMs;
}

/**
 * Reserves the request's estimate in every budget that applies, or refuses it with `token_budget`. Reads the body
 * (so the request's own output limit counts) only when a budget applies: no budget, no work. Store failures are thrown
 * as they are (the caller maps them to `rate_limit_store_unavailable`, fail closed).
 */
export function reserveTokenBudgets(store: RateLimitStore, context: ProxyContext, nowMs: number, maxBodyBytes: number): void | Promise<void> {
  const app = context.get('app');
  // The signed-in user's settings (profile applied) and the per-user budgets when a user is known (core/users).
  const budgets = budgetsFor(effectiveSettings(context), app.id, context.get('device').deviceId, context.provider.slug, nowMs, context.peek('user')?.key);
  if (budgets.length === 0) return;
  const reserve = (body: Buffer, unreadBytes = 0): void | Promise<void> => {
    const estimate = estimateTokens(context.provider, context.request.method ?? 'GET', context.route.providerPath, body, true);
    if (estimate.body !== body) context.requestBody = estimate.body;
    const tokens = Math.max(1, estimate.inputTokens + Math.ceil(unreadBytes / BYTES_PER_INPUT_TOKEN) + estimate.outputTokens);
    const keys = budgets.map((budget) => budget.key);
    const limits = budgets.map((budget) => budget.limit);
    const ttls = budgets.map((budget) => ttlOf(budget, nowMs, nowMs));
    const decide = (admitted: boolean, totals: readonly number[]): void => {
      if (!admitted) throw refusal(budgets, totals, tokens, nowMs);
      reservations.set(context, { budgets, tokens, startedMs: nowMs, addedStreamUsage: estimate.addedStreamUsage, settled: false });
    };
    const answer = reserveIn(store, keys, limits, tokens, ttls);
    if (answer instanceof Promise) return answer.then((settled) => decide(settled.admitted, settled.totals));
    return decide(answer.admitted, answer.totals);
  };
  if (!declaresBody(context.request)) return reserve(Buffer.alloc(0));
  if (context.requestBody) return reserve(context.requestBody);
  if (!requestFieldsFor(context.provider, context.request.method ?? 'GET', context.route.providerPath)) {
    // A route without declared body fields (uploads, audio, images): its body is not read (a 25 MB recording is not
    // buffered for a budget); a JSON or text body counts its declared length as input, media count none (providers
    // bill them in their own units: docs/decisions/2026-11-28-token-budget-reservations.md).
    return reserve(Buffer.alloc(0), countedLength(context));
  }
  return readRequestBody(context, maxBodyBytes).then(reserve, (error: unknown) => {
    // Over the body limit is the client's error as it is; a body cut short is the client going away, not the store.
    throw error instanceof GatewayError ? error : new GatewayError('invalidRequest', 'The client closed the connection before the request was complete.', { reason: 'client_aborted', cause: error });
  });
}

/** The declared length of a JSON or text body not read; 0 for other media or an undeclared length. */
function countedLength(context: ProxyContext): number {
  const headers = context.request.headers;
  const type = String(headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!(type === 'application/json' || type.endsWith('+json') || type.startsWith('text/'))) return 0;
  const length = Number(headers['content-length']);
  return Number.isFinite(length) && length > 0 ? length : 0;
}

/** The `token_budget` refusal: which budgets the reservation does not fit, and until when. */
function refusal(budgets: readonly Budget[], totals: readonly number[], tokens: number, nowMs: number): GatewayError {
  const full = budgets.filter((budget, index) => (totals[index] ?? 0) + tokens > budget.limit);
  const blocking = full.length > 0 ? full : budgets;
  const windowMs = Math.max(...blocking.map((budget) => budget.windowMs));
  const retryAfterSeconds = windowMs === DAY_MS ? secondsToUtcMidnight(nowMs) : secondsToNextUtcMinute(nowMs);
  const policies = blocking.map((budget) => budgetPolicyName(budget.policy)).join(' and ');
  const tooLarge = blocking.filter((budget) => tokens > budget.limit);
  const resets = windowMs === DAY_MS ? 'at 00:00 UTC' : 'at the next UTC minute';
  const message =
    tooLarge.length > 0
      ? `This request reserves ${tokens} tokens (its input and its output limit), more than the token budget allows (${tooLarge.map((budget) => budgetPolicyName(budget.policy)).join(' and ')}); ask for fewer output tokens.`
      : `Token budget used up (${policies}): this request's reservation of ${tokens} tokens does not fit; it starts again ${resets}, in ${retryAfterSeconds} s.`;
  return new GatewayError('rateLimited', message, { retryAfterSeconds, reason: 'token_budget' });
}

/** What a finished request is charged: see the file's comment. */
export function tokensToCharge(context: ProxyContext, reserved: number): number {
  const status = context.outcome.status;
  if (status < 200 || status >= 300) return 0;
  const usage = context.outcome.usage;
  const input = usage?.inputTokens;
  const output = usage?.outputTokens;
  if (input !== undefined && output !== undefined && !context.outcome.truncated) return input + output;
  return Math.max(reserved, (input ?? 0) + (output ?? 0));
}

/**
 * Settles the request's reservation (once): adds what it is charged minus what it reserved to the counters of the
 * windows it started in. Undefined (no promise) when there is nothing to settle.
 */
export function settleTokenBudgets(
  store: RateLimitStore,
  context: ProxyContext,
  nowMs: number,
  /** Told when this request's charge carried a budget past 80 % or 100 % of its limit (the charge that crossed it). */
  onThreshold?: ThresholdListener,
): Promise<void> | undefined {
  const reservation = reservations.get(context);
  if (!reservation || reservation.settled) return undefined;
  reservation.settled = true;
  const charged = tokensToCharge(context, reservation.tokens);
  const delta = charged - reservation.tokens;
  // Counters whose window (and its grace) ended are gone: nothing to settle there.
  const live = reservation.budgets.filter((budget) => ttlOf(budget, reservation.startedMs, nowMs) > 0);
  if (live.length === 0 || (delta === 0 && (!onThreshold || charged === 0))) return undefined;
  const keys = live.map((budget) => budget.key);
  const ttls = live.map((budget) => ttlOf(budget, reservation.startedMs, nowMs));
  try {
    const settled = delta === 0 ? Promise.resolve() : settleIn(store, keys, delta, ttls);
    if (!onThreshold || charged <= 0) return settled;
    // Thresholds: the totals after this request's charge, against the totals without it.
    return settled.then(async () => {
      const totals = await store.spent(keys);
      live.forEach((budget, index) => tellThreshold(budget, totals[index] ?? 0, charged, onThreshold));
    });
  } catch (error) {
    return Promise.reject(error);
  }
}
