/**
 * The official OpenAI SDK (`openai`) under a token budget: a streamed chat without `stream_options` is asked for its
 * usage by the gateway, yet the SDK sees exactly the chunks it would have seen without a budget (no usage-only last
 * chunk), and the usage the provider reported refuses the next call with `token_budget`.
 * Wire format: https://platform.openai.com/docs/api-reference/chat-streaming/streaming (with `include_usage`, every
 * chunk carries `usage: null` and one more chunk, with `choices: []`, carries the usage).
 */
import OpenAI from 'openai';
import { startSuite, CLIENT_KEY, assertUpstream, only, sseEvents, assert } from './harness.mjs';

const chunk = (content, usage) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content }, finish_reason: null }], ...(usage ? { usage: null } : {}) });
const usageChunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 1500, completion_tokens: 500, total_tokens: 2000 } };

describe('official SDK: openai under a token budget', function () {
  let suite;
  let client;

  before(async function () {
    suite = await startSuite({ openai: '' });
    await suite.gateway.gateway.management.updateApp(suite.provisioned.appId, { deviceDailyTokens: 1000 });
    client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: suite.base('openai', 'v1'), defaultHeaders: suite.headers, maxRetries: 0 });
  });
  after(async function () {
    await suite?.close();
  });

  it('a stream without stream_options: the SDK gets the chunks it asked for, the reported usage refuses the next call', async function () {
    suite.upstream.on(/chat\/completions/, (request, response) => {
      const usage = JSON.parse(request.body.toString()).stream_options?.include_usage === true;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(sseEvents([chunk('Hel', usage), chunk('lo', usage), ...(usage ? [usageChunk] : [])]).join(''));
    });
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], stream: true });
    const parts = [];
    for await (const part of stream) parts.push(part);
    assert.deepEqual(parts.map((part) => part.choices.map((choice) => choice.delta.content)), [['Hel'], ['lo']]);
    assert.ok(parts.every((part) => !part.usage), 'no usage reaches the SDK that did not ask for it');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: '/v1/chat/completions' });
    assert.deepEqual(JSON.parse(request.body.toString()).stream_options, { include_usage: true });
    // The usage event is recorded by the same observer, just before the settlement: once it is stored, the budget holds it.
    await suite.gateway.recordedUsage(suite.provisioned.appId, 0, (events) => events.length === 1);
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], stream: true }),
      (error) => error.status === 429 && JSON.stringify(error.error ?? error).includes('token_budget'),
    );
    assert.equal(suite.upstream.requests.length, 1);
  });
});
