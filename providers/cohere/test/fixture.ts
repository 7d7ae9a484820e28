import { jsonResponse, sseResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Cohere v2 Chat and chat streaming reference (https://docs.cohere.com/reference/chat, /chat-stream), checked 2026-11-22',
  secret: 'co-conformance-0123456789abcdef',
  call: { method: 'POST', version: 'v2', path: 'chat', contentType: 'application/json', body: JSON.stringify({ model: 'command-r', messages: [{ role: 'user', content: 'Hello' }] }) },
  response: jsonResponse({ id: 'c1', finish_reason: 'COMPLETE', message: { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] } }),
  stream: {
    call: { method: 'POST', version: 'v2', path: 'chat', contentType: 'application/json', body: JSON.stringify({ model: 'command-r', stream: true, messages: [{ role: 'user', content: 'Hello' }] }) },
    response: sseResponse([
      ['message-start', { type: 'message-start', id: 'c1' }],
      ['content-delta', { type: 'content-delta', index: 0, delta: { message: { content: { text: 'Hello!' } } } }],
      ['message-end', { type: 'message-end', delta: { finish_reason: 'COMPLETE' } }],
    ]),
  },
  error: jsonResponse({ message: 'invalid api token' }, 401),
};
