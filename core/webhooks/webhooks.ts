/**
 * Alerts to the operator as webhooks (operations.md, "Webhook events"): each delivery is a JSON body
 * `{"type","timestamp","app","data"}` signed per the Standard Webhooks specification (https://www.standardwebhooks.com,
 * with its reference implementation, the `standardwebhooks` package: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature` = `v1,` base64 HMAC-SHA256 of `id.timestamp.body` under the endpoint's `whsec_` secret).
 *
 * - Never sent on the request path: an event is queued in the database (`emit` returns at once, the insert runs
 *   after), and a dispatcher sends what is due, so a queued delivery survives a restart and a receiver that is down gets
 *   it when it comes back.
 * - Retried with exponential back-off (base × 4^attempt, at most 2 hours apart) for 24 hours after the event, then
 *   marked failed. A 2xx answer delivers; anything else (or no answer within 10 s) is retried. Redirects are not followed.
 * - Several nodes share the queue: each attempt is claimed with a conditional update, so one node sends it.
 * - Each attempt's outcome (status, error, attempts) is kept and listed by the management API.
 */
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { Webhook } from 'standardwebhooks';
import { TollgateError } from '../contract';
import { generateId } from '../security/tokens';
import type { SecretCipher } from '../storage/encryption';
import { AppRepository } from '../storage/repositories';
import { WEBHOOK_EVENTS, WebhookRepository, type DeliveryRow, type WebhookRow } from './webhook-store';

/** Deliveries are retried for this long after the event (operations.md). */
const RETRY_WINDOW_MS = 24 * 3_600_000;
const MAX_BACKOFF_MS = 2 * 3_600_000;
/** One attempt's deadline; a claimed attempt is not picked up by another node before twice that. */
const ATTEMPT_TIMEOUT_MS = 10_000;
const BATCH = 20;

export interface WebhookOptions {
  /** The first retry's delay; each next one is four times longer (default 5 s). */
  readonly retryBaseMs: number;
  /** How often the queue is read for due deliveries. */
  readonly pollIntervalMs: number;
  readonly clock: () => number;
  readonly onError: (error: unknown, what: string) => void;
}

export interface WebhookView {
  readonly id: string;
  readonly appId: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly createdAt: string;
}

export interface DeliveryView {
  readonly id: string;
  readonly webhookId: string;
  readonly type: string;
  readonly status: DeliveryRow['status'];
  readonly attempts: number;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly nextAttemptAt: string | null;
  readonly finishedAt: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

function webhookView(row: WebhookRow): WebhookView {
  return { id: row.id, appId: row.appId, url: row.url, events: row.events, createdAt: iso(row.createdAt) };
}

function deliveryView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    webhookId: row.webhookId,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    lastStatus: row.lastStatus,
    lastError: row.lastError,
    createdAt: iso(row.createdAt),
    nextAttemptAt: row.status === 'pending' ? iso(row.nextAttemptAt) : null,
    finishedAt: row.finishedAt === null ? null : iso(row.finishedAt),
  };
}

const secretData = (webhookId: string) => `webhook\u0000${webhookId}`;

export class Webhooks {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private readonly sending = new Set<Promise<void>>();

  constructor(
    private readonly database: Knex,
    private readonly cipher: SecretCipher,
    private readonly options: WebhookOptions,
  ) {}

  // Management.

  /** A new endpoint; its signing secret (`whsec_…`) is in this answer only. */
  async create(appId: string, input: { url?: unknown; events?: unknown }): Promise<WebhookView & { secret: string }> {
    const url = typeof input.url === 'string' ? input.url : '';
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      parsed = undefined;
    }
    const fields: Record<string, string[]> = {};
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || url.length > 2048 || parsed.username || parsed.password) fields.url = ['must be an http(s) URL without credentials, at most 2048 characters'];
    const events = input.events;
    if (!Array.isArray(events) || events.length === 0 || !events.every((event) => (WEBHOOK_EVENTS as readonly unknown[]).includes(event))) fields.events = [`must list events among ${WEBHOOK_EVENTS.join(', ')}`];
    if (Object.keys(fields).length) throw new TollgateError('TG_ERR_VALIDATION', `invalid input: ${Object.entries(fields).map(([field, messages]) => `${field}: ${messages.join('; ')}`).join(' | ')}`, fields);
    if (!(await new AppRepository(this.database).findById(appId))) throw new TollgateError('TG_ERR_NOT_FOUND', `app "${appId}" not found`);
    const id = generateId('wh');
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const row: WebhookRow = { id, appId, url, events: [...new Set(events as string[])], sealedSecret: this.cipher.seal(secret, secretData(id)), createdAt: this.options.clock() };
    await new WebhookRepository(this.database).insert(row);
    return { ...webhookView(row), secret };
  }

  async list(appId: string): Promise<WebhookView[]> {
    return (await new WebhookRepository(this.database).list(appId)).map(webhookView);
  }

  async delete(webhookId: string): Promise<{ id: string; deleted: true }> {
    if (!(await new WebhookRepository(this.database).delete(webhookId))) throw new TollgateError('TG_ERR_NOT_FOUND', `webhook "${webhookId}" not found`);
    return { id: webhookId, deleted: true };
  }

  async deliveries(appId: string, webhookId?: string): Promise<DeliveryView[]> {
    return (await new WebhookRepository(this.database).deliveries(appId, { webhookId })).map(deliveryView);
  }

  /** Queues a `webhook.test` delivery to one endpoint (the dashboard's and the CLI's "send a test"). */
  async test(webhookId: string): Promise<DeliveryView> {
    const webhook = await new WebhookRepository(this.database).find(webhookId);
    if (!webhook) throw new TollgateError('TG_ERR_NOT_FOUND', `webhook "${webhookId}" not found`);
    const [row] = await this.enqueue(webhook.appId, 'webhook.test', { webhookId }, webhookId);
    return deliveryView(row!);
  }

  // Events.

  /** Queues an event for every endpoint of the app that subscribed to it. Returns at once; never throws. */
  emit(appId: string, type: (typeof WEBHOOK_EVENTS)[number], data: Record<string, unknown>): void {
    const queued = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.enqueue(appId, type, data))
      .then(
        () => undefined,
        (error: unknown) => this.options.onError(error, `a ${type} webhook could not be queued`),
      );
    this.queueing.add(queued);
    void queued.finally(() => this.queueing.delete(queued));
  }

  /**
   * Queues an event only if it was not raised for `period` yet (e.g. `spend.threshold` of one UTC day): the mark and the
   * deliveries are written in one transaction, so that across restarts and nodes it is queued once. True: this call
   * raised it. Unlike `emit`, awaited and throwing (the caller retries later).
   */
  async emitOnce(appId: string, type: (typeof WEBHOOK_EVENTS)[number], period: string, data: Record<string, unknown>): Promise<boolean> {
    const now = this.options.clock();
    const queued = await this.database.transaction(async (transaction) => {
      const repository = new WebhookRepository(transaction);
      if (!(await repository.mark(appId, type, period, now))) return null;
      return repository.enqueue(appId, type, () => JSON.stringify({ type, timestamp: iso(now), app: appId, data }), () => `msg_${randomBytes(16).toString('hex')}`, now);
    });
    if (queued?.length) this.wake();
    return queued !== null;
  }

  /** Whether {@link emitOnce} raised `type` for `period` already. */
  async raised(appId: string, type: (typeof WEBHOOK_EVENTS)[number], period: string): Promise<boolean> {
    return new WebhookRepository(this.database).marked(appId, type, period);
  }

  /** Events being written to the queue (a CLI process waits for them before it closes the database). */
  private readonly queueing = new Set<Promise<void>>();

  private async enqueue(appId: string, type: string, data: Record<string, unknown>, only?: string): Promise<DeliveryRow[]> {
    const now = this.options.clock();
    const rows = await new WebhookRepository(this.database).enqueue(appId, type, () => JSON.stringify({ type, timestamp: iso(now), app: appId, data }), () => `msg_${randomBytes(16).toString('hex')}`, now, only);
    if (rows.length) this.wake();
    return rows;
  }

  // Dispatcher.

  start(): void {
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.queueing]);
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
    await Promise.allSettled([...this.sending]);
  }

  /** Reads the queue now (again after the current read, if one runs). */
  private wake(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.dispatch()
      .catch((error: unknown) => this.options.onError(error, 'the webhook queue could not be read'))
      .finally(() => {
        this.running = undefined;
        if (this.again && this.timer) {
          this.again = false;
          this.wake();
        }
      });
  }

  private async dispatch(): Promise<void> {
    const repository = new WebhookRepository(this.database);
    const now = this.options.clock();
    for (const delivery of await repository.due(now, BATCH)) {
      if (!(await repository.claim(delivery, now + 2 * ATTEMPT_TIMEOUT_MS))) continue;
      const attempt = this.attempt(delivery).catch((error: unknown) => this.options.onError(error, 'a webhook attempt could not be recorded'));
      this.sending.add(attempt);
      void attempt.finally(() => this.sending.delete(attempt));
    }
  }

  private async attempt(delivery: DeliveryRow): Promise<void> {
    const repository = new WebhookRepository(this.database);
    const webhook = await repository.find(delivery.webhookId);
    const attempts = delivery.attempts + 1;
    if (!webhook) {
      await repository.recordAttempt(delivery.id, { status: 'failed', attempts, nextAttemptAt: delivery.nextAttemptAt, lastStatus: null, lastError: 'webhook deleted', finishedAt: this.options.clock() });
      return;
    }
    let status: number | null = null;
    let error: string | null = null;
    try {
      const secret = this.cipher.open(webhook.sealedSecret, secretData(webhook.id));
      const sentAt = new Date(this.options.clock());
      const signature = new Webhook(secret).sign(delivery.id, sentAt, delivery.payload);
      const response = await fetch(webhook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Tollgate-Webhooks/1',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body: delivery.payload,
        redirect: 'manual',
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      status = response.status;
      await response.body?.cancel().catch(() => undefined);
      if (status < 200 || status > 299) error = `answered ${status}`;
    } catch (failure) {
      error = failure instanceof Error ? `${failure.name}: ${(failure.cause as Error | undefined)?.message ?? failure.message}` : 'failed';
    }
    const now = this.options.clock();
    if (error === null) {
      await repository.recordAttempt(delivery.id, { status: 'delivered', attempts, nextAttemptAt: now, lastStatus: status, lastError: null, finishedAt: now });
      return;
    }
    const next = now + Math.min(MAX_BACKOFF_MS, this.options.retryBaseMs * 4 ** (attempts - 1));
    const givenUp = next > delivery.createdAt + RETRY_WINDOW_MS;
    await repository.recordAttempt(delivery.id, { status: givenUp ? 'failed' : 'pending', attempts, nextAttemptAt: next, lastStatus: status, lastError: error, finishedAt: givenUp ? now : null });
  }
}
