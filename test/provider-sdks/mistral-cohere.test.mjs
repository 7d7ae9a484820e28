/**
 * Official SDKs `@mistralai/mistralai` (chat, stream, embeddings) and `cohere-ai` (v2 chat, stream, embed, rerank)
 * through the gateway. Both write the API version into their paths, so their base URL is the provider root.
 * Wire formats: https://docs.mistral.ai/api/ (POST /v1/chat/completions, /v1/embeddings, `Authorization: Bearer`, SSE);
 * https://docs.cohere.com/reference/chat, https://docs.cohere.com/reference/chat-stream (SSE, `event:` named, data JSON
 * with `type`), https://docs.cohere.com/reference/embed, https://docs.cohere.com/reference/rerank (`Authorization: Bearer`).
 */
import { Mistral } from '@mistralai/mistralai';
import { HTTPClient } from '@mistralai/mistralai/lib/http.js';
import { CohereClientV2 } from 'cohere-ai';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondChunks, sseEvents, assert } from './harness.mjs';

describe('official SDKs: @mistralai/mistralai, cohere-ai', function () {
  let suite;
  before(async function () {
    suite = await startSuite({ mistral: '', cohere: '' });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  describe('@mistralai/mistralai', function () {
    const model = 'mistral-small-latest';
    const bearer = ['Authorization', `Bearer ${serverKey('mistral')}`];
    let client;
    before(function () {
      client = new Mistral({ apiKey: CLIENT_KEY, serverURL: suite.base('mistral'), httpClient: new HTTPClient({ fetcher: suite.fetch }), retryConfig: { strategy: 'none' } });
    });

    it('chat.complete', async function () {
      suite.upstream.on(/chat\/completions/, respondJson(200, { id: 'c1', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 } }));
      const answer = await client.chat.complete({ model, messages: [{ role: 'user', content: 'Hi' }] });
      assert.equal(answer.choices[0].message.content, 'Hello from the fake');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/chat/completions', header: bearer });
    });

    it('chat.stream (SSE)', async function () {
      const chunk = (content) => ({ id: 'c1', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: { content }, finish_reason: null }] });
      suite.upstream.on(/chat\/completions/, respondChunks(sseEvents([chunk('Hel'), chunk('lo')])));
      const stream = await client.chat.stream({ model, messages: [{ role: 'user', content: 'Hi' }] });
      let text = '';
      for await (const event of stream) text += event.data.choices[0]?.delta?.content ?? '';
      assert.equal(text, 'Hello');
      const request = only(suite.upstream);
      assertUpstream(request, { method: 'POST', path: '/v1/chat/completions', header: bearer });
      assert.equal(JSON.parse(request.body.toString()).stream, true);
    });

    it('embeddings.create', async function () {
      suite.upstream.on(/embeddings/, respondJson(200, { id: 'e1', object: 'list', model: 'mistral-embed', data: [{ object: 'embedding', index: 0, embedding: [0.5, -0.25] }], usage: { prompt_tokens: 1, total_tokens: 1 } }));
      const answer = await client.embeddings.create({ model: 'mistral-embed', inputs: ['Hi'] });
      assert.deepEqual(answer.data[0].embedding, [0.5, -0.25]);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/embeddings', header: bearer });
    });
  });

  describe('cohere-ai (CohereClientV2)', function () {
    const bearer = ['Authorization', `Bearer ${serverKey('cohere')}`];
    let client;
    before(function () {
      client = new CohereClientV2({ token: CLIENT_KEY, environment: suite.base('cohere'), headers: suite.headers, maxRetries: 0 });
    });

    it('chat', async function () {
      suite.upstream.on(/\/v2\/chat/, respondJson(200, { id: 'c1', finish_reason: 'COMPLETE', message: { role: 'assistant', content: [{ type: 'text', text: 'Hello from the fake' }] }, usage: { billed_units: { input_tokens: 1, output_tokens: 4 } } }));
      const answer = await client.chat({ model: 'command-a-03-2025', messages: [{ role: 'user', content: 'Hi' }] });
      assert.equal(answer.message.content[0].text, 'Hello from the fake');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v2/chat', header: bearer });
    });

    it('chatStream (SSE)', async function () {
      const events = [
        { type: 'message-start', id: 'c1', delta: { message: { role: 'assistant', content: [] } } },
        { type: 'content-start', index: 0, delta: { message: { content: { type: 'text', text: '' } } } },
        { type: 'content-delta', index: 0, delta: { message: { content: { text: 'Hel' } } } },
        { type: 'content-delta', index: 0, delta: { message: { content: { text: 'lo' } } } },
        { type: 'content-end', index: 0 },
        { type: 'message-end', delta: { finish_reason: 'COMPLETE' } },
      ];
      suite.upstream.on(/\/v2\/chat/, respondChunks(sseEvents(events, { eventNames: events.map((event) => event.type) })));
      const stream = await client.chatStream({ model: 'command-a-03-2025', messages: [{ role: 'user', content: 'Hi' }] });
      let text = '';
      for await (const event of stream) if (event.type === 'content-delta') text += event.delta.message.content.text;
      assert.equal(text, 'Hello');
      const request = only(suite.upstream);
      assertUpstream(request, { method: 'POST', path: '/v2/chat', header: bearer });
      assert.equal(JSON.parse(request.body.toString()).stream, true);
    });

    it('embed', async function () {
      suite.upstream.on(/\/v2\/embed/, respondJson(200, { id: 'e1', response_type: 'embeddings_by_type', embeddings: { float: [[0.5, -0.25]] }, texts: ['Hi'] }));
      const answer = await client.embed({ model: 'embed-v4.0', texts: ['Hi'], inputType: 'search_document', embeddingTypes: ['float'] });
      assert.deepEqual(answer.embeddings.float[0], [0.5, -0.25]);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v2/embed', header: bearer });
    });

    it('rerank', async function () {
      suite.upstream.on(/\/v2\/rerank/, respondJson(200, { id: 'r1', results: [{ index: 1, relevance_score: 0.9 }, { index: 0, relevance_score: 0.1 }] }));
      const answer = await client.rerank({ model: 'rerank-v3.5', query: 'Hi', documents: ['a', 'b'] });
      assert.equal(answer.results[0].index, 1);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v2/rerank', header: bearer });
    });
  });
});
