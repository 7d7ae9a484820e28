/**
 * DeepSeek (https://api-docs.deepseek.com): OpenAI-compatible. Under load it sends `: keep-alive` SSE comments (and blank
 * lines on non-streamed calls); the gateway passes them through.
 */
import { openAiCompatible } from '../_shared';
import { DEEPSEEK_PRICES } from '../_shared/prices';

export const manifest = openAiCompatible({
  slug: 'deepseek',
  // Published prices, read from the provider's price page (providers/_shared/prices.ts).
  prices: DEEPSEEK_PRICES,
  name: 'DeepSeek',
  baseUrl: 'https://api.deepseek.com',
  // "Lists models" needs the key and changes nothing: https://api-docs.deepseek.com/api/list-models
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
  notes: 'OpenAI SSE with ": keep-alive" comments under load.',
});
