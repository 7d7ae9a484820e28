/**
 * An app's alerts: the thresholds of the spend.threshold and attestation.failure_rate events (app settings
 * `dailySpendAlertUsd` and `attestationFailureAlert`), webhook endpoints (signed per the Standard Webhooks
 * specification; the signing secret is shown once), a test delivery, and the latest deliveries with their outcomes.
 */
import { api, type App, type Webhook, type WebhookDelivery as Delivery } from '../api.js';
import { checkbox, field, h, table } from '../dom.js';
import { refresh } from '../state.js';
import { badge, button, emptyState, onSubmit, once, say, text, when } from '../ui.js';

const EVENTS: ReadonlyArray<readonly [string, string]> = [
  ['budget.threshold', 'A token or session-seconds budget passed 80 % or 100 %'],
  ['spend.threshold', 'The estimated spend of the UTC day passed its amount'],
  ['provider.key_rejected', 'A provider answered 401 or 403 to the stored key'],
  ['attestation.failure_rate', 'Failed attestations passed their share over 15 minutes'],
  ['device.revoked', 'A device was revoked'],
  ['user.blocked', 'A user was blocked'],
];

/** A button whose visible text is short (it fits a phone) and whose accessible name says what it acts on. */
const named = (element: HTMLButtonElement, name: string): HTMLButtonElement => {
  element.setAttribute('aria-label', name);
  element.title = name;
  return element;
};

/** The thresholds form: empty fields clear a setting (no such alert). */
function thresholdsForm(app: App): HTMLFormElement {
  const settings = app.settings;
  const spend = settings.dailySpendAlertUsd as number | undefined;
  const share = settings.attestationFailureAlert as { percent: number; minAttempts: number } | undefined;
  const form = h(
    'form',
    { 'aria-label': 'Alert thresholds' },
    field(
      'Daily spend alert (USD)',
      h('input', { name: 'dailySpendAlertUsd', type: 'number', min: 0.01, step: 0.01, max: 1_000_000_000, value: text(spend) }),
      `spend.threshold is sent once per UTC day when the app’s estimated spend of the day (the usage view’s prices) passes this amount; empty for none. ${spend === undefined ? 'Not set.' : `Now ${spend} USD.`}`,
    ),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Refused attestations'),
      field('Refused share (%)', h('input', { name: 'percent', type: 'number', min: 1, max: 100, step: 1, value: text(share?.percent) }), 'attestation.failure_rate is sent when at least this share of the attestations of the last 15 minutes was refused…'),
      field('Fewest attempts in 15 minutes', h('input', { name: 'minAttempts', type: 'number', min: 1, max: 1_000_000, step: 1, value: text(share?.minAttempts) }), `…out of at least this many. Both empty for none. ${share ? `Now ${share.percent} % of at least ${share.minAttempts}.` : 'Not set.'}`),
    ),
    h('button', { type: 'submit', class: 'primary' }, 'Save thresholds'),
  );
  return onSubmit(form, async (values) => {
    const amount = String(values.dailySpendAlertUsd ?? '').trim();
    const percent = String(values.percent ?? '').trim();
    const minAttempts = String(values.minAttempts ?? '').trim();
    if ((percent === '') !== (minAttempts === '')) throw new Error('Refused attestations: give both the share and the fewest attempts, or neither.');
    await api('PATCH', `/apps/${app.id}`, {
      dailySpendAlertUsd: amount === '' ? null : Number(amount),
      attestationFailureAlert: percent === '' ? null : { percent: Number(percent), minAttempts: Number(minAttempts) },
    });
    // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
    await refresh();
    say('Alert thresholds saved.');
  });
}

export async function alertsTab(app: App): Promise<(Node | null)[]> {
  const [webhooks, deliveries] = await Promise.all([api<Webhook[]>('GET', `/apps/${app.id}/webhooks`), api<Delivery[]>('GET', `/apps/${app.id}/webhook-deliveries`)]);
  const form = h(
    'form',
    { 'aria-label': 'Add a webhook' },
    field('Address (https URL)', h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://example.com/tollgate-alerts' }), 'Each delivery is signed (webhook-id, webhook-timestamp, webhook-signature) and retried with back-off for 24 hours.'),
    h('fieldset', {}, h('legend', {}, 'Events'), ...EVENTS.map(([event, meaning]) => checkbox(`${event}: ${meaning}`, `event:${event}`, true))),
    h('button', { type: 'submit', class: 'primary' }, 'Add webhook'),
  );
  const outcome = (delivery: Delivery) =>
    delivery.status === 'delivered'
      ? badge(`delivered ${when(delivery.finishedAt)}`, 'ok')
      : delivery.status === 'failed'
        ? badge(`failed ${when(delivery.finishedAt)}`, 'bad')
        : badge(delivery.nextAttemptAt ? `pending, next try ${when(delivery.nextAttemptAt)}` : 'pending', 'muted');
  return [
    h('h2', {}, 'Thresholds'),
    thresholdsForm(app),
    h('h2', {}, 'Webhooks'),
    webhooks.length
      ? table(
          ['Address', 'Events', 'Added', ''],
          webhooks.map((webhook) => [
            h('code', {}, webhook.url),
            webhook.events.join(', '),
            when(webhook.createdAt),
            h(
              'span',
              { class: 'actions' },
              named(button('Send a test', async () => { await api('POST', `/apps/${app.id}/webhooks/${webhook.id}/test`); say(`A test delivery (webhook.test) to ${webhook.url} is queued.`); await refresh(); }), `Send a test to ${webhook.url}`),
              ' ',
              named(button('Remove', async () => { await api('DELETE', `/apps/${app.id}/webhooks/${webhook.id}`); say(`The webhook ${webhook.url} is removed.`); await refresh(); }, 'danger', `Remove the webhook ${webhook.url}? Its pending deliveries are dropped.`), `Remove ${webhook.url}`),
            ),
          ]),
          undefined,
          'webhook-list',
        )
      : emptyState('No webhook yet: add one to hear about spent budgets, rejected provider keys and revoked devices as they happen.'),
    h('h2', {}, 'Add a webhook'),
    onSubmit(form, async (values) => {
      const events = EVENTS.map(([event]) => event).filter((event) => values[`event:${event}`] === true);
      const created = await api<Webhook & { secret: string }>('POST', `/apps/${app.id}/webhooks`, { url: values.url, events });
      once(`Signing secret of ${created.url} (verify each delivery's webhook-signature with it)`, created.secret);
      // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
      await refresh();
      say('Webhook added.');
    }),
    h('h2', {}, 'Latest deliveries'),
    deliveries.length
      ? table(
          ['Event', 'Address', 'Outcome', 'Attempts', 'Last answer', 'Queued'],
          deliveries.slice(0, 50).map((delivery) => [
            delivery.type,
            h('code', {}, webhooks.find((webhook) => webhook.id === delivery.webhookId)?.url ?? delivery.webhookId),
            outcome(delivery),
            String(delivery.attempts),
            delivery.lastStatus !== null ? `HTTP ${delivery.lastStatus}` : (delivery.lastError ?? (delivery.attempts ? '' : 'not sent yet')),
            when(delivery.createdAt),
          ]),
          undefined,
          'webhook-deliveries',
        )
      : emptyState('Nothing delivered yet: send a test to an endpoint to see its outcome here.'),
  ];
}
