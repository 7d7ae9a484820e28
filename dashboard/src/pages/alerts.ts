/**
 * An app's alerts: webhook endpoints (signed per the Standard Webhooks specification; the signing secret is shown
 * once), a test delivery, and the latest deliveries with their outcomes.
 */
import { api, type App, type Webhook, type WebhookDelivery as Delivery } from '../api.js';
import { checkbox, field, h, table } from '../dom.js';
import { refresh } from '../state.js';
import { badge, button, emptyState, onSubmit, once, say, when } from '../ui.js';

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
      say('Webhook added.');
      await refresh();
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
