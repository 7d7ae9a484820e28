/**
 * Schema migrations, the same for SQLite and PostgreSQL. Listed in code (not read from a folder) so that the compiled
 * build carries them and their order is explicit. Times are unix milliseconds (bigint).
 */
import type { Knex } from 'knex';

export interface Migration {
  readonly name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const initial: Migration = {
  name: '0001-initial',
  async up(knex) {
    await knex.schema.createTable('apps', (table) => {
      table.string('id', 64).primary();
      table.string('name', 200).notNullable();
      table.string('token_hash', 64).notNullable().unique();
      table.string('token_hint', 16).notNullable();
      table.string('status', 16).notNullable().defaultTo('active');
      table.text('settings').notNullable();
      table.bigInteger('devices_revoked_before').notNullable().defaultTo(0);
      table.bigInteger('created_at').notNullable();
      table.bigInteger('updated_at').notNullable();
    });
    await knex.schema.createTable('secrets', (table) => {
      table.string('app_id', 64).notNullable().references('id').inTable('apps').onDelete('CASCADE');
      table.string('provider', 40).notNullable();
      table.text('sealed_value').notNullable();
      table.string('key_id', 32).notNullable();
      table.string('masked', 64).notNullable();
      table.string('base_url', 2048).nullable();
      table.bigInteger('created_at').notNullable();
      table.bigInteger('updated_at').notNullable();
      table.primary(['app_id', 'provider']);
    });
    await knex.schema.createTable('development_tokens', (table) => {
      table.string('id', 64).primary();
      table.string('app_id', 64).notNullable().references('id').inTable('apps').onDelete('CASCADE');
      table.string('token_hash', 64).notNullable().unique();
      table.string('token_hint', 16).notNullable();
      table.string('label', 200).nullable();
      table.bigInteger('created_at').notNullable();
      table.bigInteger('revoked_at').nullable();
    });
    await knex.schema.createTable('admin_keys', (table) => {
      table.string('id', 64).primary();
      table.string('name', 200).notNullable();
      table.string('key_hash', 64).notNullable().unique();
      table.string('key_hint', 16).notNullable();
      table.bigInteger('created_at').notNullable();
      table.bigInteger('revoked_at').nullable();
    });
    await knex.schema.createTable('devices', (table) => {
      table.string('app_id', 64).notNullable().references('id').inTable('apps').onDelete('CASCADE');
      table.string('device_id', 200).notNullable();
      table.string('method', 40).notNullable();
      table.text('public_key').nullable();
      table.bigInteger('counter').notNullable().defaultTo(0);
      table.bigInteger('created_at').notNullable();
      table.bigInteger('last_attested_at').notNullable();
      table.bigInteger('revoked_at').nullable();
      table.primary(['app_id', 'device_id']);
    });
    await knex.schema.createTable('signing_keys', (table) => {
      table.string('kid', 64).primary();
      table.string('algorithm', 16).notNullable();
      table.text('sealed_private_key').notNullable();
      table.text('public_jwk').notNullable();
      table.bigInteger('created_at').notNullable();
      table.bigInteger('retired_at').nullable();
    });
    await knex.schema.createTable('usage_events', (table) => {
      table.bigIncrements('id').primary();
      table.string('app_id', 64).notNullable();
      table.string('device_id', 200).nullable();
      table.string('provider', 40).notNullable();
      table.integer('status').notNullable();
      table.string('error_type', 40).nullable();
      table.integer('latency_ms').notNullable();
      table.bigInteger('bytes_in').notNullable();
      table.bigInteger('bytes_out').notNullable();
      table.boolean('truncated').notNullable().defaultTo(false);
      table.bigInteger('created_at').notNullable();
      table.index(['app_id', 'created_at']);
    });
    await knex.schema.createTable('change_feed', (table) => {
      table.integer('id').primary();
      table.bigInteger('sequence').notNullable();
    });
    await knex('change_feed').insert({ id: 1, sequence: 0 });
  },
  async down(knex) {
    for (const table of ['change_feed', 'usage_events', 'signing_keys', 'devices', 'admin_keys', 'development_tokens', 'secrets', 'apps']) {
      await knex.schema.dropTableIfExists(table);
    }
  },
};

const auditLog: Migration = {
  name: '0002-audit-log',
  async up(knex) {
    await knex.schema.createTable('audit_log', (table) => {
      table.bigIncrements('id').primary();
      table.string('actor', 200).notNullable();
      table.string('action', 100).notNullable();
      table.string('target', 300).nullable();
      table.text('details').nullable();
      table.bigInteger('created_at').notNullable();
      table.index(['created_at']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('audit_log');
  },
};

/** Dashboard sign-in: administrators (scrypt password hashes), their sessions, and the one-time set-up link. */
const dashboardUsers: Migration = {
  name: '0003-dashboard-users',
  async up(knex) {
    await knex.schema.createTable('admin_users', (table) => {
      table.string('id', 64).primary();
      table.string('username', 100).notNullable().unique();
      table.string('password_hash', 300).notNullable();
      table.bigInteger('created_at').notNullable();
      table.bigInteger('disabled_at').nullable();
    });
    await knex.schema.createTable('admin_sessions', (table) => {
      table.string('id_hash', 64).primary();
      table.string('user_id', 64).notNullable().references('id').inTable('admin_users').onDelete('CASCADE');
      table.string('csrf_token', 64).notNullable();
      table.bigInteger('created_at').notNullable();
      table.bigInteger('expires_at').notNullable();
      table.index(['user_id']);
    });
    await knex.schema.createTable('setup_tokens', (table) => {
      table.string('token_hash', 64).primary();
      table.bigInteger('created_at').notNullable();
      table.bigInteger('expires_at').notNullable();
    });
  },
  async down(knex) {
    for (const table of ['setup_tokens', 'admin_sessions', 'admin_users']) await knex.schema.dropTableIfExists(table);
  },
};

/**
 * App-token rotation with a grace period: the previous token keeps working until `previous_token_expires_at`, and the
 * request log's columns (method, route, reason, request id) beside each usage event.
 */
const tokenGraceAndRequestLog: Migration = {
  name: '0004-token-grace-request-log',
  async up(knex) {
    await knex.schema.alterTable('apps', (table) => {
      table.string('previous_token_hash', 64).nullable();
      table.string('previous_token_hint', 20).nullable();
      table.bigInteger('previous_token_expires_at').nullable();
      table.index(['previous_token_hash']);
    });
    // Sign-in lockout counts failed attempts per user only (a successful sign-in resets it).
    await knex.schema.alterTable('admin_users', (table) => {
      table.integer('failed_sign_ins').notNullable().defaultTo(0);
      table.bigInteger('locked_until').nullable();
    });
    await knex.schema.alterTable('usage_events', (table) => {
      table.string('method', 10).nullable();
      table.string('route', 300).nullable();
      table.string('reason', 80).nullable();
      table.string('request_id', 64).nullable();
      // True: a valid device token; false: forwarded in monitor mode without one; null: refused before any device check.
      table.boolean('verified').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('usage_events', (table) => {
      for (const column of ['method', 'route', 'reason', 'request_id', 'verified']) table.dropColumn(column);
    });
    await knex.schema.alterTable('admin_users', (table) => {
      for (const column of ['failed_sign_ins', 'locked_until']) table.dropColumn(column);
    });
    await knex.schema.alterTable('apps', (table) => {
      table.dropIndex(['previous_token_hash']);
      for (const column of ['previous_token_hash', 'previous_token_hint', 'previous_token_expires_at']) table.dropColumn(column);
    });
  },
};

/**
 * Token usage per event: what the provider reported, read by the usage tap; null when unknown (the provider
 * has no extractor, or the answer could not be read). The model is the one the answer named, else the request's. And
 * the operator's price table, from which the usage summary estimates spend.
 */
const usageTokens: Migration = {
  name: '0005-usage-tokens',
  async up(knex) {
    await knex.schema.alterTable('usage_events', (table) => {
      table.bigInteger('input_tokens').nullable();
      table.bigInteger('output_tokens').nullable();
      table.bigInteger('cached_tokens').nullable();
      table.bigInteger('reasoning_tokens').nullable();
      table.string('model', 200).nullable();
    });
    // The operator's price table (USD per million tokens), shipped empty: no stale prices.
    await knex.schema.createTable('prices', (table) => {
      table.string('provider', 40).notNullable();
      table.string('model', 200).notNullable();
      table.double('input_usd_per_million').notNullable();
      table.double('output_usd_per_million').notNullable();
      table.bigInteger('updated_at').notNullable();
      table.primary(['provider', 'model']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('prices');
    await knex.schema.alterTable('usage_events', (table) => {
      for (const column of ['input_tokens', 'output_tokens', 'cached_tokens', 'reasoning_tokens', 'model']) table.dropColumn(column);
    });
  },
};

/**
 * "Last used" per provider key: the time of the last request forwarded with the app's key for that provider,
 * written by the usage recorder with each batch (one UPDATE per app and provider in the batch, never on the request
 * path), so that it outlives the request log's retention. Null: not used since it was set.
 */
const secretLastUsed: Migration = {
  name: '0006-secret-last-used',
  async up(knex) {
    await knex.schema.alterTable('secrets', (table) => {
      table.bigInteger('last_used_at').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('secrets', (table) => {
      table.dropColumn('last_used_at');
    });
  },
};

/**
 * One stored usage event per request: a unique index on `(created_at, request_id)`, which the usage inserts name in
 * `on conflict do nothing`. A batch whose write failed is written again, and the failure may have come after its
 * commit (a PostgreSQL answer lost while the server stalled): its second write stores nothing twice, however the two
 * writes interleave on the server. `created_at` first, so that rows are added at the index's end (as the request log's
 * own index). Duplicates that older versions may have written are removed first (the earliest row is kept).
 */
const usageEventOnce: Migration = {
  name: '0007-usage-event-once',
  async up(knex) {
    await knex.raw(
      'delete from usage_events where request_id is not null and id not in (select min(id) from usage_events where request_id is not null group by created_at, request_id)',
    );
    await knex.raw('create unique index usage_events_request_once on usage_events (created_at, request_id) where request_id is not null');
  },
  async down(knex) {
    await knex.raw('drop index usage_events_request_once');
  },
};

/**
 * The answers of management calls made with an `Idempotency-Key` (core/management/idempotency.ts), stored in the
 * change's own transaction and sealed under the master key (an answer may hold a new app token); kept 24 hours.
 */
const faultsIdempotencyKeys: Migration = {
  name: 'faults-idempotency-keys',
  async up(knex) {
    await knex.schema.createTable('idempotency_keys', (table) => {
      table.string('scope', 400).notNullable();
      table.string('key', 200).notNullable();
      table.string('request_hash', 64).notNullable();
      table.text('answer').notNullable();
      table.bigInteger('created_at').notNullable();
      table.primary(['scope', 'key']);
      table.index(['created_at']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('idempotency_keys');
  },
};

/**
 * End users and alerts: the users the gateway has seen per app (issuer-scoped `sub`, the profile their tier claim
 * selected, when first and last seen, blocked or not: core/users/end-user-store.ts), the app's webhook endpoints (the
 * signing secret sealed under the master key) and the queue of their deliveries, which survives a restart
 * (core/webhooks/).
 */
const endUsersAndWebhooks: Migration = {
  name: '0008-end-users-and-webhooks',
  async up(knex) {
    await knex.schema.createTable('end_users', (table) => {
      table.string('app_id', 64).notNullable();
      table.string('issuer', 500).notNullable();
      table.string('subject', 255).notNullable();
      table.string('profile', 100).nullable();
      table.bigInteger('first_seen_at').notNullable();
      table.bigInteger('last_seen_at').notNullable();
      table.bigInteger('blocked_at').nullable();
      table.primary(['app_id', 'issuer', 'subject']);
    });
    await knex.schema.createTable('webhooks', (table) => {
      table.string('id', 64).primary();
      table.string('app_id', 64).notNullable().index();
      table.string('url', 2048).notNullable();
      table.text('events').notNullable();
      table.text('sealed_secret').notNullable();
      table.bigInteger('created_at').notNullable();
    });
    await knex.schema.createTable('webhook_deliveries', (table) => {
      table.string('id', 64).primary();
      table.string('webhook_id', 64).notNullable().index();
      table.string('app_id', 64).notNullable();
      table.string('type', 64).notNullable();
      table.text('payload').notNullable();
      table.string('status', 16).notNullable();
      table.integer('attempts').notNullable();
      table.bigInteger('next_attempt_at').notNullable();
      table.integer('last_status').nullable();
      table.string('last_error', 500).nullable();
      table.bigInteger('created_at').notNullable();
      table.bigInteger('finished_at').nullable();
      table.index(['status', 'next_attempt_at']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('webhook_deliveries');
    await knex.schema.dropTableIfExists('webhooks');
    await knex.schema.dropTableIfExists('end_users');
  },
};

/**
 * Realtime sessions: one request-log row per WebSocket session, whose own figures (frames each way, close code and
 * reason, who closed, audio seconds) go in one JSON text column; null on every HTTP request's row.
 */
const realtimeSessions: Migration = {
  name: '0008-realtime-sessions',
  async up(knex) {
    await knex.schema.alterTable('usage_events', (table) => {
      table.text('session').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('usage_events', (table) => {
      table.dropColumn('session');
    });
  },
};

/**
 * Scopes and expiry of admin keys (core/management/admin-scopes.ts): a comma-separated list of scopes and an optional
 * end. Keys made before scopes existed keep the full `admin` scope and never expire.
 */
const adminKeyScopes: Migration = {
  name: 'hardening2-admin-key-scopes',
  async up(knex) {
    await knex.schema.alterTable('admin_keys', (table) => {
      table.string('scopes', 100).notNullable().defaultTo('admin');
      table.bigInteger('expires_at').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('admin_keys', (table) => {
      table.dropColumn('expires_at');
      table.dropColumn('scopes');
    });
  },
};

/**
 * Alerts raised once (core/webhooks/alerts.ts): one row per app, event and period (the UTC day of a `spend.threshold`),
 * inserted with a conditional insert in the transaction that queues the event, so that one node of a fleet raises it,
 * once, across restarts.
 */
const webhookAlertMarks: Migration = {
  name: '0009-webhook-alert-marks',
  async up(knex) {
    await knex.schema.createTable('webhook_alert_marks', (table) => {
      table.string('app_id', 64).notNullable();
      table.string('event', 64).notNullable();
      table.string('period', 32).notNullable();
      table.bigInteger('created_at').notNullable();
      table.primary(['app_id', 'event', 'period']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('webhook_alert_marks');
  },
};

/**
 * The signed-in user of each request-log row: the sign-in provider's `sub` (null without a user token), written with the
 * row in its batch (no work on the request path), so that a user's page finds the user's requests, devices and usage.
 * A partial index (rows with a user only; SQLite and PostgreSQL both have them) keeps those reads off a scan of the
 * app's whole log, and costs nothing on rows without a user.
 */
const usageEndUser: Migration = {
  name: '0010-usage-end-user',
  async up(knex) {
    await knex.schema.alterTable('usage_events', (table) => {
      table.string('user_id', 255).nullable();
    });
    await knex.raw('create index usage_events_user on usage_events (app_id, user_id, created_at) where user_id is not null');
  },
  async down(knex) {
    await knex.raw('drop index usage_events_user');
    await knex.schema.alterTable('usage_events', (table) => {
      table.dropColumn('user_id');
    });
  },
};

/** Append only; never reorder or edit a migration that has shipped. */
export const MIGRATIONS: readonly Migration[] = [initial, auditLog, dashboardUsers, tokenGraceAndRequestLog, usageTokens, secretLastUsed, usageEventOnce, faultsIdempotencyKeys, endUsersAndWebhooks, realtimeSessions, adminKeyScopes, webhookAlertMarks, usageEndUser];

/** A knex migration source over {@link MIGRATIONS}. */
export class CodeMigrationSource implements Knex.MigrationSource<Migration> {
  getMigrations(): Promise<Migration[]> {
    return Promise.resolve([...MIGRATIONS]);
  }
  getMigrationName(migration: Migration): string {
    return migration.name;
  }
  getMigration(migration: Migration): Promise<Knex.Migration> {
    return Promise.resolve({ up: (knex: Knex) => migration.up(knex), down: (knex: Knex) => migration.down(knex) });
  }
}
