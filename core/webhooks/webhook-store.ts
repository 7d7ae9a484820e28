/**
 * Webhook endpoints (`webhooks`) and the queue of their deliveries (`webhook_deliveries`), in the database: a delivery
 * waits there until it is sent, so it survives a restart, and several nodes share the queue (a node claims a delivery
 * with a conditional update before sending it, so only one node sends each attempt).
 */
import type { Knex } from 'knex';

export const WEBHOOK_EVENTS = ['budget.threshold', 'spend.threshold', 'provider.key_rejected', 'attestation.failure_rate', 'device.revoked', 'user.blocked'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface WebhookRow {
  readonly id: string;
  readonly appId: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly sealedSecret: string;
  readonly createdAt: number;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryRow {
  readonly id: string;
  readonly webhookId: string;
  readonly appId: string;
  readonly type: string;
  readonly payload: string;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly nextAttemptAt: number;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly createdAt: number;
  readonly finishedAt: number | null;
}

type Row = Record<string, unknown>;
const numberOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

function toWebhook(row: Row): WebhookRow {
  return { id: String(row.id), appId: String(row.app_id), url: String(row.url), events: JSON.parse(String(row.events)) as string[], sealedSecret: String(row.sealed_secret), createdAt: Number(row.created_at) };
}

function toDelivery(row: Row): DeliveryRow {
  return {
    id: String(row.id),
    webhookId: String(row.webhook_id),
    appId: String(row.app_id),
    type: String(row.type),
    payload: String(row.payload),
    status: String(row.status) as DeliveryStatus,
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
    lastStatus: numberOrNull(row.last_status),
    lastError: row.last_error === null || row.last_error === undefined ? null : String(row.last_error),
    createdAt: Number(row.created_at),
    finishedAt: numberOrNull(row.finished_at),
  };
}

export class WebhookRepository {
  constructor(private readonly database: Knex | Knex.Transaction) {}

  async insert(webhook: WebhookRow): Promise<void> {
    await this.database('webhooks').insert({ id: webhook.id, app_id: webhook.appId, url: webhook.url, events: JSON.stringify(webhook.events), sealed_secret: webhook.sealedSecret, created_at: webhook.createdAt });
  }

  async list(appId?: string): Promise<WebhookRow[]> {
    const query = this.database('webhooks').orderBy('created_at');
    return ((await (appId === undefined ? query : query.where('app_id', appId))) as Row[]).map(toWebhook);
  }

  async find(id: string): Promise<WebhookRow | null> {
    const row = (await this.database('webhooks').where('id', id).first()) as Row | undefined;
    return row ? toWebhook(row) : null;
  }

  async delete(id: string): Promise<boolean> {
    await this.database('webhook_deliveries').where({ webhook_id: id, status: 'pending' }).update({ status: 'failed', last_error: 'webhook deleted' });
    return (await this.database('webhooks').where('id', id).delete()) > 0;
  }

  /** Queues one delivery per endpoint of `appId` that subscribed to `type` (or every endpoint for a test event). */
  async enqueue(appId: string, type: string, payloadFor: (deliveryId: string) => string, newId: () => string, now: number, only?: string): Promise<DeliveryRow[]> {
    const endpoints = (await this.list(appId)).filter((webhook) => (only ? webhook.id === only : webhook.events.includes(type)));
    const rows: DeliveryRow[] = endpoints.map((webhook) => {
      const id = newId();
      return { id, webhookId: webhook.id, appId, type, payload: payloadFor(id), status: 'pending', attempts: 0, nextAttemptAt: now, lastStatus: null, lastError: null, createdAt: now, finishedAt: null };
    });
    for (const row of rows) {
      await this.database('webhook_deliveries').insert({
        id: row.id, webhook_id: row.webhookId, app_id: row.appId, type: row.type, payload: row.payload, status: row.status, attempts: 0,
        next_attempt_at: row.nextAttemptAt, last_status: null, last_error: null, created_at: row.createdAt, finished_at: null,
      });
    }
    return rows;
  }

  /**
   * Marks an alert raised for `period` (a conditional insert: true only for the first caller, on any node) and drops the
   * app's older marks of the same event.
   */
  async mark(appId: string, event: string, period: string, now: number): Promise<boolean> {
    const inserted = (await this.database('webhook_alert_marks').insert({ app_id: appId, event, period, created_at: now }).onConflict(['app_id', 'event', 'period']).ignore().returning('app_id')) as unknown[];
    if (inserted.length === 0) return false;
    await this.database('webhook_alert_marks').where({ app_id: appId, event }).andWhere('period', '<', period).delete();
    return true;
  }

  /** Whether the alert was marked raised for `period`. */
  async marked(appId: string, event: string, period: string): Promise<boolean> {
    return (await this.database('webhook_alert_marks').where({ app_id: appId, event, period }).first()) !== undefined;
  }

  /** Pending deliveries due at `now`, oldest first. */
  async due(now: number, limit: number): Promise<DeliveryRow[]> {
    return ((await this.database('webhook_deliveries').where('status', 'pending').where('next_attempt_at', '<=', now).orderBy('next_attempt_at').limit(limit)) as Row[]).map(toDelivery);
  }

  /**
   * Claims a due delivery for one attempt: moves its next attempt to `leaseUntil` only if no other node did first (the
   * row still holds the time it was read with). True: this node sends it.
   */
  async claim(delivery: DeliveryRow, leaseUntil: number): Promise<boolean> {
    const changed = await this.database('webhook_deliveries').where({ id: delivery.id, status: 'pending', next_attempt_at: delivery.nextAttemptAt }).update({ next_attempt_at: leaseUntil });
    return changed === 1;
  }

  async recordAttempt(id: string, outcome: { status: DeliveryStatus; attempts: number; nextAttemptAt: number; lastStatus: number | null; lastError: string | null; finishedAt: number | null }): Promise<void> {
    await this.database('webhook_deliveries').where('id', id).update({
      status: outcome.status,
      attempts: outcome.attempts,
      next_attempt_at: outcome.nextAttemptAt,
      last_status: outcome.lastStatus,
      last_error: outcome.lastError === null ? null : outcome.lastError.slice(0, 500),
      finished_at: outcome.finishedAt,
    });
  }

  async deliveries(appId: string, options: { webhookId?: string; limit?: number } = {}): Promise<DeliveryRow[]> {
    let query = this.database('webhook_deliveries').where('app_id', appId).orderBy('created_at', 'desc').limit(options.limit ?? 100);
    if (options.webhookId) query = query.where('webhook_id', options.webhookId);
    return ((await query) as Row[]).map(toDelivery);
  }
}
