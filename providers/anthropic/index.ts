/**
 * Anthropic (https://docs.anthropic.com/en/api). `x-api-key: <key>` and the required `anthropic-version` header
 * (default `2023-06-01`, a client's own value wins). Streams SSE with event names (`message_start`,
 * `content_block_delta`, `ping`, `message_stop`).
 */
import { ANTHROPIC_USAGE } from '../_shared';
import { ANTHROPIC_PRICES } from '../_shared/prices';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'anthropic',
  // Published prices, read from the provider's price page (providers/_shared/prices.ts).
  prices: ANTHROPIC_PRICES,
  name: 'Anthropic',
  baseUrl: 'https://api.anthropic.com',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'x-api-key' },
  defaultHeaders: { 'anthropic-version': '2023-06-01' },
  capabilities: ['chat'],
  streaming: ['sse'],
  routes: {
    methods: ['GET', 'POST'],
    // `files`: uploading a document or image for a message (https://docs.anthropic.com/en/api/files-create) is inference.
    allow: ['messages', 'models', 'complete', 'files'],
    deny: ['organizations/'],
    // Account routes, from https://docs.anthropic.com/en/api/files-list and /en/api/creating-message-batches.
    account: [
      { methods: ['GET'], path: 'files', why: 'lists every file uploaded with the operator key, by any user' },
      { methods: ['GET', 'DELETE'], path: 'files/{file_id}/**', why: 'reads the metadata and content of, or deletes, any file of the workspace' },
      { methods: ['GET', 'POST', 'DELETE'], path: 'messages/batches/**', why: 'lists, creates, cancels or deletes message batches and reads their results, for every user' },
    ],
  },
  examples: {
    chat: { method: 'POST', version: 'v1', path: 'messages', body: { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello!' }] } },
    streaming: { method: 'POST', version: 'v1', path: 'messages', body: { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'Hello!' }] }, streams: true },
  },
  notes: 'SSE with event names; anthropic-version defaults to 2023-06-01.',
  // "List Models" needs the key and changes nothing: https://docs.anthropic.com/en/api/models-list
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
  usage: ANTHROPIC_USAGE,
  // Messages (https://docs.anthropic.com/en/api/messages): `model`, `max_tokens` (required), `stream`; a stream always
  // reports its usage (message_start, message_delta). Legacy Text Completions
  // (https://docs.anthropic.com/en/api/complete): `max_tokens_to_sample` (required).
  requestFields: [
    { methods: ['POST'], path: 'messages', model: 'model', outputLimit: ['max_tokens'], stream: 'stream' },
    { methods: ['POST'], path: 'complete', model: 'model', outputLimit: ['max_tokens_to_sample'], stream: 'stream' },
  ],
});
