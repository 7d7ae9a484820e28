/**
 * An app's alerts: webhook endpoints (signed per the Standard Webhooks specification; the signing secret is shown
 * once), a test delivery, and the latest deliveries with their outcomes.
 */
import { api, type App } from '../api.js';
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

interface Webhook { id: string; url: string; events: string[]; createdAt: string }
interface Delivery { id: string; webhookId: string; type: string; status: 'pending' | 'delivered' | 'failed'; attempts: number; lastStatus: number | null; lastError: string | null; createdAt: string; nextAttemptAt: string | null }

export async function alertsTab(app: App): Promise<(Node | null)[]> {
  const [webhooks, deliveries] = await Promise.all([api<Webhook[]>('GET', `/apps/${app.id}/webhooks`), api<Delivery[]>('GET', `/apps/${app.id}/webhook-deliveries`)]);
  const form = h(
    'form',
    { 'aria-label': 'Add a webhook' },
    field('Address (https)', h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://example.com/tollgate-alerts' }), 'Each delivery is signed (webhook-id, webhook-timestamp, webhook-signature) and retried with back-off for 24 hours.'),
    h('fieldset', {}, h('legend', {}, 'Events'), ...EVENTS.map(([event, meaning]) => checkbox(`${event}: ${meaning}`, `event:${event}`, true))),
    h('button', { type: 'submit', class: 'primary' }, 'Add webhook'),
  );
  const outcome = (delivery: Delivery) =>
    delivery.status === 'delivered' ? badge('delivered', 'ok') : delivery.status === 'failed' ? badge('failed', 'bad') : badge(`pending, next ${when(delivery.nextAttemptAt)}`, 'muted');
  return [
    webhooks.length
      ? table(
          ['Address', 'Events', 'Added', ''],
          webhooks.map((webhook) => [
            h('code', {}, webhook.url),
            webhook.events.join(', '),
            when(webhook.createdAt),
            h('span', { class: 'actions' }, button(`Send a test to ${webhook.url}`, async () => { await api('POST', `/apps/${app.id}/webhooks/${webhook.id}/test`); say('A test delivery is queued.'); await refresh(); }), button(`Remove ${webhook.url}`, async () => { await api('DELETE', `/apps/${app.id}/webhooks/${webhook.id}`); await refresh(); }, 'danger', `Remove the webhook ${webhook.url}?`)),
          ]),
          undefined,
          'webhook-list',
        )
      : emptyState('No webhook yet: add one to hear about spent budgets, rejected provider keys and revoked devices as they happen.'),
    h('h2', {}, 'Add a webhook'),
    onSubmit(form, async (values) => {
      const events = EVENTS.map(([event]) => event).filter((event) => values[`event:${event}`] === true);
      const created = await api<{ secret: string; url: string }>('POST', `/apps/${app.id}/webhooks`, { url: values.url, events });
      once(`Signing secret of ${created.url}`, created.secret);
      await refresh();
    }),
    h('h2', {}, 'Latest deliveries'),
    deliveries.length
      ? table(['Event', 'Outcome', 'Attempts', 'Last answer', 'Queued'], deliveries.slice(0, 50).map((delivery) => [delivery.type, outcome(delivery), String(delivery.attempts), delivery.lastStatus === null ? (delivery.lastError ?? '') : `HTTP ${delivery.lastStatus}`, when(delivery.createdAt)]), undefined, 'webhook-deliveries')
      : emptyState('Nothing delivered yet.'),
  ];
}
