/**
 * Anthropic (https://docs.anthropic.com/en/api). `x-api-key: <key>` and the required `anthropic-version` header
 * (default `2023-06-01`, a client's own value wins). Streams SSE with event names (`message_start`,
 * `content_block_delta`, `ping`, `message_stop`).
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'anthropic',
  name: 'Anthropic',
  baseUrl: 'https://api.anthropic.com',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'x-api-key' },
  defaultHeaders: { 'anthropic-version': '2023-06-01' },
  capabilities: ['chat'],
  streaming: ['sse'],
  routes: { methods: ['GET', 'POST'], allow: ['messages', 'models', 'complete'], deny: ['organizations/'] },
  examples: {
    chat: { method: 'POST', version: 'v1', path: 'messages', body: { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello!' }] } },
    streaming: { method: 'POST', version: 'v1', path: 'messages', body: { model: 'claude-sonnet-4-5', max_tokens: 1024, stream: true, messages: [{ role: 'user', content: 'Hello!' }] }, streams: true },
  },
  notes: 'SSE with event names; anthropic-version defaults to 2023-06-01.',
});
