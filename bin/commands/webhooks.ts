/**
 * `tollgate webhooks create --app ID --url URL --events E1,E2` (prints the signing secret `whsec_…` once) /
 * `list --app ID` / `delete --webhook ID` / `test --webhook ID` / `deliveries --app ID [--webhook ID]`.
 */
import { parseArgs } from 'node:util';
import type { CommandHelpers } from './types';

export const WEBHOOKS_USAGE = `  tollgate webhooks create --app ID --url URL --events budget.threshold,user.blocked,…   (prints the whsec_ signing secret once)
  tollgate webhooks list --app ID | delete --webhook ID | test --webhook ID | deliveries --app ID [--webhook ID]`;

export async function webhooksCommand(argv: readonly string[], helpers: CommandHelpers): Promise<void> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: { app: { type: 'string' }, url: { type: 'string' }, events: { type: 'string' }, webhook: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const need = (name: 'app' | 'url' | 'events' | 'webhook'): string => {
    const value = values[name];
    if (!value) throw helpers.usage(`--${name} is required`);
    return value;
  };
  switch (positionals[0]) {
    case 'create': {
      const app = need('app');
      const input = { url: need('url'), events: need('events').split(',').map((event) => event.trim()).filter(Boolean) };
      return helpers.change<{ id: string }>('webhook.create', (webhook) => webhook.id, (core) => core.webhooks.create(app, input));
    }
    case 'list': {
      const app = need('app');
      return helpers.withCore(async (core) => ({ webhooks: await core.webhooks.list(app) }));
    }
    case 'delete': {
      const webhook = need('webhook');
      return helpers.change('webhook.delete', () => webhook, (core) => core.webhooks.delete(webhook));
    }
    case 'test': {
      const webhook = need('webhook');
      return helpers.change('webhook.test', () => webhook, (core) => core.webhooks.test(webhook));
    }
    case 'deliveries': {
      const app = need('app');
      return helpers.withCore(async (core) => ({ deliveries: await core.webhooks.deliveries(app, values.webhook) }));
    }
    default:
      throw helpers.usage(`unknown command "webhooks ${positionals.join(' ')}"; see tollgate --help`);
  }
}
