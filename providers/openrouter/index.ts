/**
 * OpenRouter (https://openrouter.ai/docs): OpenAI-compatible under `/api/v1`. Streams carry `: OPENROUTER PROCESSING`
 * comments, and mid-stream errors arrive as `data:` events with an `error` field. `HTTP-Referer` and `X-Title` (app
 * attribution) pass through from the client.
 */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'openrouter',
  name: 'OpenRouter',
  baseUrl: 'https://openrouter.ai/api',
  capabilities: ['chat', 'embeddings', 'image'],
  notes: 'SSE with ": OPENROUTER PROCESSING" comments; mid-stream errors as data events with an error field.',
});
