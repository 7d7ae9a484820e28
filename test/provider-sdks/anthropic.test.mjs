/**
 * Official Anthropic SDK (`@anthropic-ai/sdk`) through the gateway: messages and streamed messages.
 * Wire format: https://docs.anthropic.com/en/api/messages (POST /v1/messages, `x-api-key`, `anthropic-version`) and
 * https://docs.anthropic.com/en/docs/build-with-claude/streaming (SSE events message_start … message_stop).
 */
import Anthropic from '@anthropic-ai/sdk';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondChunks, sseEvents, assert } from './harness.mjs';

const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-model', content: [{ type: 'text', text: 'Hello from the fake' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 4 } };

describe('official SDK: @anthropic-ai/sdk', function () {
  let suite;
  let client;
  const credential = ['x-api-key', serverKey('anthropic')];
  before(async function () {
    suite = await startSuite({ anthropic: '' });
    // The SDK writes /v1/messages itself: its base URL is the provider root, whose first segment is the gateway version.
    client = new Anthropic({ apiKey: CLIENT_KEY, baseURL: suite.base('anthropic'), defaultHeaders: suite.headers, maxRetries: 0 });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  it('messages.create', async function () {
    suite.upstream.on(/\/v1\/messages/, respondJson(200, message));
    const answer = await client.messages.create({ model: 'claude-model', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.content[0].text, 'Hello from the fake');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: '/v1/messages', header: credential });
    // The SDK sends its own anthropic-version (required by the docs); the manifest's default only fills it in when absent.
    assert.match(request.headers['anthropic-version'], /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(request.headers.authorization, undefined);
  });

  it('messages.stream (SSE)', async function () {
    const events = [
      { type: 'message_start', message: { ...message, content: [], stop_reason: null } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } },
      { type: 'message_stop' },
    ];
    suite.upstream.on(/\/v1\/messages/, respondChunks(sseEvents(events, { done: false, eventNames: events.map((event) => event.type) })));
    const stream = client.messages.stream({ model: 'claude-model', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const final = await stream.finalMessage();
    assert.equal(text, 'Hello');
    assert.equal(final.content[0].text, 'Hello');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/messages', header: credential });
  });
});
