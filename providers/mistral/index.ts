/** Mistral AI (https://docs.mistral.ai/api/): OpenAI-compatible, Bearer, OpenAI SSE; also FIM and embeddings. */
import { openAiCompatible, openAiRequestFields, OPENAI_COMPATIBLE_ROUTES, OPENAI_DEFAULT_OUTPUT_TOKENS } from '../_shared';
import { MISTRAL_PRICES } from '../_shared/prices';
import type { AccountRoute } from '../../core/contract';

/**
 * Account routes, from https://docs.mistral.ai/api/ (Files, Fine Tuning, Batch, Agents, Conversations, Libraries):
 * what the key stores for every user. `agents/completions` (a generation) stays inference.
 */
const ACCOUNT: AccountRoute[] = [
  { methods: ['GET', 'POST', 'DELETE'], path: 'files/**', why: "lists, uploads to, reads (signed URLs, content) or deletes the account's files" },
  { methods: ['GET', 'POST', 'PATCH'], path: 'fine_tuning/**', why: 'lists, starts or cancels fine-tuning jobs billed to the account, and changes its fine-tuned models' },
  { methods: ['GET', 'POST'], path: 'batch/**', why: "lists, creates or cancels batch jobs over the account's files" },
  { methods: ['GET', 'POST'], path: 'agents', why: "lists or creates the account's agents" },
  { methods: ['GET', 'PATCH', 'PUT', 'DELETE'], path: 'agents/{agent_id}/**', why: "reads, changes or deletes any of the account's agents" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'conversations/**', why: 'reads, continues or deletes any stored conversation by id' },
  { methods: ['GET', 'POST', 'PUT', 'DELETE'], path: 'libraries/**', why: "lists, reads, changes or deletes the account's document libraries" },
];

export const manifest = openAiCompatible({
  slug: 'mistral',
  // Published prices, read from the provider's price page (providers/_shared/prices.ts).
  prices: MISTRAL_PRICES,
  name: 'Mistral AI',
  baseUrl: 'https://api.mistral.ai',
  capabilities: ['chat', 'embeddings'],
  // "List models" needs the key and changes nothing: https://docs.mistral.ai/api/#tag/models/operation/list_models_v1_models_get
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
  routes: {
    ...OPENAI_COMPATIBLE_ROUTES,
    allow: [...(OPENAI_COMPATIBLE_ROUTES.allow ?? []), 'fim/completions', 'agents/completions', 'ocr'],
    account: [...(OPENAI_COMPATIBLE_ROUTES.account ?? []), ...ACCOUNT],
  },
  // Chat (https://docs.mistral.ai/api/#tag/chat), FIM (https://docs.mistral.ai/api/#tag/fim) and agents completions:
  // `model`, `max_tokens`, `stream`. Mistral's stream reports `usage` in its last chunk without being asked and its API
  // documents no `stream_options`, so nothing is merged into the body.
  requestFields: [
    ...openAiRequestFields({ streamUsageRequest: false }),
    { methods: ['POST'], path: 'fim/completions', model: 'model', outputLimit: ['max_tokens'], defaultOutputTokens: OPENAI_DEFAULT_OUTPUT_TOKENS, stream: 'stream' },
    { methods: ['POST'], path: 'agents/completions', outputLimit: ['max_tokens'], defaultOutputTokens: OPENAI_DEFAULT_OUTPUT_TOKENS, stream: 'stream' },
  ],
});
