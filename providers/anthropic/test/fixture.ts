import { jsonResponse, sseResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] };

export const fixture: ProviderFixture = {
  provenance: 'Anthropic Messages API and streaming reference (https://docs.anthropic.com/en/api/messages, /messages-streaming), checked 2026-11-22',
  secret: 'sk-ant-api03-conformance-0123456789abcdef',
  call: { method: 'POST', version: 'v1', path: 'messages', contentType: 'application/json', body: JSON.stringify(body) },
  response: jsonResponse({ id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'Hello!' }], stop_reason: 'end_turn', usage: { input_tokens: 8, output_tokens: 3 } }),
  stream: {
    call: { method: 'POST', version: 'v1', path: 'messages', contentType: 'application/json', body: JSON.stringify({ ...body, stream: true }) },
    response: sseResponse([
      ['message_start', { type: 'message_start', message: { id: 'msg_01', type: 'message', role: 'assistant', content: [], model: 'claude-sonnet-4-5', usage: { input_tokens: 8, output_tokens: 1 } } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['ping', { type: 'ping' }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello!' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } }],
      ['message_stop', { type: 'message_stop' }],
    ]),
  },
  error: jsonResponse({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }, 401),
};
