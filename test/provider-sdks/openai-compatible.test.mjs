/**
 * Official SDKs of OpenAI-compatible providers through the gateway: `together-ai` (chat, stream, embeddings, images) and
 * `@cerebras/cerebras_cloud_sdk` (chat, stream).
 * Wire formats: https://docs.together.ai/reference/chat-completions-1, https://docs.together.ai/reference/embeddings-2,
 * https://docs.together.ai/reference/post-images-generations (base https://api.together.ai/v1, `Authorization: Bearer`);
 * https://inference-docs.cerebras.ai/api-reference/chat-completions (POST https://api.cerebras.ai/v1/chat/completions).
 */
import Together from 'together-ai';
import Cerebras from '@cerebras/cerebras_cloud_sdk';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondChunks, sseEvents, assert } from './harness.mjs';

const completion = (model) => ({ id: 'chatcmpl-1', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 } });
const chunk = (model, content) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: { content }, finish_reason: null }] });

describe('official SDKs: together-ai, @cerebras/cerebras_cloud_sdk', function () {
  let suite;
  before(async function () {
    suite = await startSuite({ together: '', cerebras: '' });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  describe('together-ai', function () {
    const model = 'meta-llama/Llama-3.3-70B-Instruct-Turbo';
    const bearer = ['Authorization', `Bearer ${serverKey('together')}`];
    let client;
    before(function () {
      client = new Together({ apiKey: CLIENT_KEY, baseURL: suite.base('together', 'v1'), defaultHeaders: suite.headers, maxRetries: 0 });
    });

    it('chat.completions.create', async function () {
      suite.upstream.on(/chat\/completions/, respondJson(200, completion(model)));
      const answer = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] });
      assert.equal(answer.choices[0].message.content, 'Hello from the fake');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/chat/completions', header: bearer });
    });

    it('chat.completions.create with stream: true (SSE)', async function () {
      suite.upstream.on(/chat\/completions/, respondChunks(sseEvents([chunk(model, 'Hel'), chunk(model, 'lo')])));
      const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], stream: true });
      let text = '';
      for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
      assert.equal(text, 'Hello');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/chat/completions', header: bearer });
    });

    it('embeddings.create', async function () {
      suite.upstream.on(/embeddings/, respondJson(200, { object: 'list', model: 'BAAI/bge-base-en-v1.5', data: [{ object: 'embedding', index: 0, embedding: [0.5, -0.25] }] }));
      const answer = await client.embeddings.create({ model: 'BAAI/bge-base-en-v1.5', input: 'Hi' });
      assert.deepEqual(answer.data[0].embedding, [0.5, -0.25]);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/embeddings', header: bearer });
    });

    it('images.generate', async function () {
      suite.upstream.on(/images\/generations/, respondJson(200, { id: 'img-1', model: 'black-forest-labs/FLUX.1-schnell', object: 'list', data: [{ index: 0, b64_json: 'iVBORw0KGgo=' }] }));
      const answer = await client.images.generate({ model: 'black-forest-labs/FLUX.1-schnell', prompt: 'A lighthouse', response_format: 'base64' });
      assert.equal(answer.data[0].b64_json, 'iVBORw0KGgo=');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/images/generations', header: bearer });
    });
  });

  describe('@cerebras/cerebras_cloud_sdk', function () {
    const model = 'llama3.1-8b';
    const bearer = ['Authorization', `Bearer ${serverKey('cerebras')}`];
    let client;
    before(function () {
      // The SDK writes /v1/chat/completions itself: its base URL is the provider root.
      client = new Cerebras({ apiKey: CLIENT_KEY, baseURL: suite.base('cerebras'), defaultHeaders: suite.headers, maxRetries: 0, warmTCPConnection: false });
    });

    it('chat.completions.create', async function () {
      suite.upstream.on(/chat\/completions/, respondJson(200, completion(model)));
      const answer = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] });
      assert.equal(answer.choices[0].message.content, 'Hello from the fake');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/chat/completions', header: bearer });
    });

    it('chat.completions.create with stream: true (SSE)', async function () {
      suite.upstream.on(/chat\/completions/, respondChunks(sseEvents([chunk(model, 'Hel'), chunk(model, 'lo')])));
      const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], stream: true });
      let text = '';
      for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
      assert.equal(text, 'Hello');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/chat/completions', header: bearer });
    });
  });
});
