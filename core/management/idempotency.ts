/**
 * Idempotency keys on the management calls that create or rotate (`Idempotency-Key` request header, as in the IETF
 * httpapi draft "The Idempotency-Key HTTP Header Field", draft-ietf-httpapi-idempotency-key-header), and the
 * `outcome_unknown` answer of a commit whose result was lost.
 *
 * A call made with a key stores its answer in the same transaction as its change: the change committed if and only if
 * its answer is stored. A retry with the same key (same caller, same call, same body) gets the stored answer again
 * (`Idempotency-Replayed: true`) instead of a second change, which is what makes a retry after `outcome_unknown` safe:
 * an app created behind a lost COMMIT answer is returned, not created twice. The answer may hold a new app token, so
 * it is stored sealed under the master key, bound to its caller and key, and kept {@link IDEMPOTENCY_TTL_MS}.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { GatewayError } from '../contract';
import type { SecretCipher } from '../storage/encryption';

/** How long an answer is kept for retries. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const TABLE = 'idempotency_keys';

/** The keyed call running in this async context, until its change stored its answer. */
interface KeyedCall {
  readonly scope: string;
  readonly key: string;
  readonly requestHash: string;
  stored: boolean;
}

const keyedCalls = new AsyncLocalStorage<KeyedCall>();

/** The key as sent, checked: 1-200 visible ASCII characters. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^[\x21-\x7e]{1,200}$/.test(value.replace(/^"|"$/g, ''))) {
    throw new GatewayError('invalidRequest', 'Idempotency-Key must be 1 to 200 visible ASCII characters.', { reason: 'idempotency_key_invalid' });
  }
  return value.replace(/^"|"$/g, '');
}

export class IdempotencyStore {
  constructor(
    private readonly database: Knex,
    private readonly cipher: SecretCipher,
    private readonly clock: () => number,
  ) {}

  /**
   * Runs `call` under `key`: the stored answer of an earlier call with this key, or the call itself, whose change then
   * stores its answer (see {@link recordIfPending}). `scope` names the caller and the call (actor, operation, path
   * parameters); `body` is the request's, a retry with another body under the same key is refused.
   */
  async run<T>(scope: string, key: string, body: unknown, call: () => Promise<T>): Promise<{ replayed: boolean; value: T }> {
    const requestHash = createHash('sha256').update(JSON.stringify(body ?? null)).digest('hex');
    const stored = await this.database(TABLE).where({ scope, key }).first();
    if (stored) {
      const row = stored as { request_hash: string; answer: string; created_at: number | string };
      if (Number(row.created_at) >= this.clock() - IDEMPOTENCY_TTL_MS) {
        if (row.request_hash !== requestHash) {
          throw new GatewayError('conflict', 'This Idempotency-Key was used for another request body; use a new key for a new request.', { reason: 'idempotency_key_reused' });
        }
        return { replayed: true, value: JSON.parse(this.cipher.open(row.answer, `idempotency:${scope}:${key}`)) as T };
      }
      await this.database(TABLE).where({ scope, key }).delete();
    }
    const keyed: KeyedCall = { scope, key, requestHash, stored: false };
    return { replayed: false, value: await keyedCalls.run(keyed, call) };
  }

  /** Stores the answer of the keyed call running now, in its change's transaction (once, by its first change). */
  async recordIfPending(transaction: Knex.Transaction, answer: unknown): Promise<void> {
    const keyed = keyedCalls.getStore();
    if (!keyed || keyed.stored) return;
    const now = this.clock();
    try {
      await transaction(TABLE).insert({
        scope: keyed.scope,
        key: keyed.key,
        request_hash: keyed.requestHash,
        answer: this.cipher.seal(JSON.stringify(answer), `idempotency:${keyed.scope}:${keyed.key}`),
        created_at: now,
      });
    } catch (error) {
      // The same key is being used by a call still running (its row came first): this change is rolled back.
      throw new GatewayError('conflict', 'A request with this Idempotency-Key is still being processed; retry shortly to get its answer.', {
        reason: 'idempotency_key_in_use',
        retryAfterSeconds: 1,
        cause: error,
      });
    }
    keyed.stored = true;
  }

  /** Removes answers past their time (run now and then; a stale one is also removed when its key is seen again). */
  async prune(): Promise<void> {
    await this.database(TABLE).where('created_at', '<', this.clock() - IDEMPOTENCY_TTL_MS).delete();
  }
}

/**
 * The answer to a change whose COMMIT was sent but whose result never came back (the connection was lost): it may
 * have been made. Never "nothing was changed": retrying with the same Idempotency-Key is safe, otherwise the caller
 * must look before retrying.
 */
export function outcomeUnknown(cause: unknown): GatewayError {
  return new GatewayError(
    'serviceUnavailable',
    'The database connection was lost while the change was being committed: it may or may not have been made. Retry with the same Idempotency-Key to get its answer, or check before retrying.',
    { retryAfterSeconds: 2, reason: 'outcome_unknown', cause },
  );
}
