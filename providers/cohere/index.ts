/**
 * Cohere (https://docs.cohere.com/reference). v2 chat streams SSE with event names (`message-start`, `content-delta`,
 * `message-end`); v1 `/generate` streams NDJSON. Bearer auth.
 */
import { BEARER, COHERE_USAGE } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'cohere',
  name: 'Cohere',
  baseUrl: 'https://api.cohere.com',
  versions: { v2: '/v2', v1: '/v1' },
  auth: BEARER,
  capabilities: ['chat', 'embeddings', 'rerank'],
  streaming: ['sse', 'ndjson'],
  routes: {
    methods: ['GET', 'POST'],
    allow: ['chat', 'embed', 'rerank', 'generate', 'classify', 'tokenize', 'detokenize', 'models'],
    // Connectors hold the operator's OAuth grants and api-keys the account's keys: never reachable.
    deny: ['connectors', 'api-keys'],
    // Account routes, from https://docs.cohere.com/reference (Datasets, Embed Jobs, Finetuning).
    account: [
      { methods: ['GET', 'POST', 'DELETE'], path: 'datasets/**', why: "lists, uploads, reads or deletes the account's datasets" },
      { methods: ['GET', 'POST'], path: 'embed-jobs/**', why: "lists, creates or cancels batch embed jobs over the account's datasets" },
      { methods: ['GET', 'POST', 'PATCH', 'DELETE'], path: 'finetuning/**', why: "lists, creates, changes or deletes the account's fine-tuned models" },
    ],
  },
  notes: 'v2 chat: SSE with event names; v1 generate: NDJSON.',
  usage: COHERE_USAGE,
  // v2 Chat (https://docs.cohere.com/reference/chat) and v1 Generate (https://docs.cohere.com/reference/generate):
  // `model`, `max_tokens`, `stream`; the stream's `message-end` / final event carries the usage. Cohere documents no
  // default limit for Chat (the model's maximum): 4,096 is reserved when none is set.
  requestFields: [
    { methods: ['POST'], path: 'chat', model: 'model', outputLimit: ['max_tokens'], defaultOutputTokens: 4096, stream: 'stream' },
    { methods: ['POST'], path: 'generate', model: 'model', outputLimit: ['max_tokens'], defaultOutputTokens: 4096, stream: 'stream' },
    { methods: ['POST'], path: 'embed', model: 'model' },
  ],
});
