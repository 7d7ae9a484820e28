/** xAI (https://docs.x.ai/docs/api-reference): OpenAI-compatible chat and embeddings. */
import { openAiCompatible } from '../_shared';
import { XAI_PRICES } from '../_shared/prices';

export const manifest = openAiCompatible({
  slug: 'xai',
  // Published prices, read from the provider's price page (providers/_shared/prices.ts).
  prices: XAI_PRICES,
  name: 'xAI',
  baseUrl: 'https://api.x.ai',
  capabilities: ['chat', 'embeddings', 'image'],
  // "List models" needs the key and changes nothing: https://docs.x.ai/docs/api-reference#list-models
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
});
