/**
 * Management routes of webhooks (`/v1/admin/apps/{appId}/webhooks…`): endpoints, their deliveries with each outcome,
 * and a test delivery.
 */
import type { Webhooks } from '../webhooks/webhooks';
import type { AdminRoute } from './admin-routes';

export function webhookRoutes(webhooks: Webhooks): AdminRoute[] {
  return [
    {
      method: 'get', path: '/apps/{appId}/webhooks', scope: 'read', operationId: 'listWebhooks', tag: 'webhooks', summary: 'The app\'s webhook endpoints (never their signing secrets)',
      response: { schema: 'Webhook', description: 'the endpoints', array: true },
      handle: ({ params }) => webhooks.list(params.appId!),
    },
    {
      method: 'post', path: '/apps/{appId}/webhooks', scope: 'apps', operationId: 'createWebhook', tag: 'webhooks', status: 201,
      summary: 'Add a webhook endpoint {url, events}; its signing secret (whsec_…) is in this answer only',
      response: { schema: 'CreatedWebhook', description: 'the endpoint and its signing secret (shown once)' },
      audit: { action: 'webhook.create', target: (_context, webhook) => webhook.id },
      handle: ({ params, body }) => webhooks.create(params.appId!, (body ?? {}) as { url?: unknown; events?: unknown }),
    },
    {
      method: 'delete', path: '/apps/{appId}/webhooks/{webhookId}', scope: 'apps', operationId: 'deleteWebhook', tag: 'webhooks', summary: 'Remove a webhook endpoint (its pending deliveries are dropped)',
      response: { schema: 'Deleted', description: 'removed' },
      audit: { action: 'webhook.delete', target: ({ params }) => params.webhookId! },
      handle: ({ params }) => webhooks.delete(params.webhookId!),
    },
    {
      method: 'post', path: '/apps/{appId}/webhooks/{webhookId}/test', scope: 'apps', operationId: 'testWebhook', tag: 'webhooks', status: 202,
      summary: 'Queue a test delivery (type webhook.test) to one endpoint',
      response: { schema: 'WebhookDelivery', description: 'the queued delivery' },
      audit: { action: 'webhook.test', target: ({ params }) => params.webhookId! },
      handle: ({ params }) => webhooks.test(params.webhookId!),
    },
    {
      method: 'get', path: '/apps/{appId}/webhook-deliveries', scope: 'read', operationId: 'listWebhookDeliveries', tag: 'webhooks',
      summary: 'The latest deliveries of the app\'s webhooks, newest first, with each one\'s outcome (delivered, pending with its next attempt, failed)',
      query: [{ name: 'webhook', description: 'only this endpoint', schema: { type: 'string', minLength: 1, maxLength: 64 } }],
      response: { schema: 'WebhookDelivery', description: 'the deliveries', array: true },
      handle: ({ params, query }) => webhooks.deliveries(params.appId!, typeof query.webhook === 'string' ? query.webhook : undefined),
    },
  ];
}
