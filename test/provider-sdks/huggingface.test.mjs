/**
 * Official Hugging Face client (`@huggingface/inference`) through the gateway: chat (router, OpenAI-compatible), streamed
 * chat, embeddings (featureExtraction) and textToImage on HF Inference and on a partner provider.
 * The client builds `https://router.huggingface.co/…` itself; the app's `fetch` sends those URLs to the gateway's
 * `huggingface/v1-root` (the router root). Model-to-provider lookups on the Hub (huggingface.co/api/models, public data,
 * no key needed) are answered by that fetch from a fixed mapping here, so nothing leaves loopback.
 * Wire formats: https://huggingface.co/docs/inference-providers/tasks/chat-completion,
 * https://huggingface.co/docs/inference-providers/tasks/feature-extraction,
 * https://huggingface.co/docs/inference-providers/tasks/text-to-image (`Authorization: Bearer <hf token>`).
 */
import { InferenceClient } from '@huggingface/inference';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondChunks, sseEvents, respondBytes, assert } from './harness.mjs';

const ROUTER = 'https://router.huggingface.co';
const MAPPING = {
  'sentence-transformers/all-MiniLM-L6-v2': { 'hf-inference': { status: 'live', providerId: 'sentence-transformers/all-MiniLM-L6-v2', task: 'feature-extraction' } },
  'BAAI/bge-multilingual-gemma2': { scaleway: { status: 'live', providerId: 'bge-multilingual-gemma2', task: 'feature-extraction' } },
  'black-forest-labs/FLUX.1-schnell': {
    'hf-inference': { status: 'live', providerId: 'black-forest-labs/FLUX.1-schnell', task: 'text-to-image' },
    together: { status: 'live', providerId: 'black-forest-labs/FLUX.1-schnell-Free', task: 'text-to-image' },
  },
  'meta-llama/Llama-3.1-8B-Instruct': { 'hf-inference': { status: 'live', providerId: 'meta-llama/Llama-3.1-8B-Instruct', task: 'conversational' } },
};

describe('official SDK: @huggingface/inference', function () {
  let suite;
  let client;
  const bearer = ['Authorization', `Bearer ${serverKey('huggingface')}`];
  before(async function () {
    suite = await startSuite({ huggingface: '' });
    const root = suite.base('huggingface', 'v1-root');
    const appFetch = async (input, init = {}) => {
      const url = String(input instanceof Request ? input.url : input);
      const hub = /^https:\/\/huggingface\.co\/api\/models\/(.+)\?expand\[\]=inferenceProviderMapping$/.exec(url);
      if (hub) return Response.json({ _id: 'x', id: hub[1], inferenceProviderMapping: MAPPING[hub[1]] });
      assert.ok(url.startsWith(ROUTER), `unexpected URL ${url}`);
      return suite.fetch(`${root}${url.slice(ROUTER.length)}`, init);
    };
    // An `hf_` token makes the client route through the router (a provider's own key would call the provider directly).
    client = new InferenceClient(`hf_${CLIENT_KEY}`, { fetch: appFetch });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  it('chatCompletion (router, OpenAI-compatible)', async function () {
    suite.upstream.on(/chat\/completions/, respondJson(200, { id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 }, system_fingerprint: 'fp' }));
    const answer = await client.chatCompletion({ model: 'meta-llama/Llama-3.1-8B-Instruct', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.choices[0].message.content, 'Hello from the fake');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/chat/completions', header: bearer });
  });

  it('chatCompletionStream (SSE)', async function () {
    const chunk = (content) => ({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    suite.upstream.on(/chat\/completions/, respondChunks(sseEvents([chunk('Hel'), chunk('lo')])));
    let text = '';
    for await (const part of client.chatCompletionStream({ model: 'meta-llama/Llama-3.1-8B-Instruct', messages: [{ role: 'user', content: 'Hi' }] })) text += part.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/chat/completions', header: bearer });
  });

  it('featureExtraction on HF Inference (hf-inference/models/{model}/pipeline/feature-extraction)', async function () {
    suite.upstream.on(/feature-extraction/, respondJson(200, [0.5, -0.25]));
    const vector = await client.featureExtraction({ provider: 'hf-inference', model: 'sentence-transformers/all-MiniLM-L6-v2', inputs: 'Hi' });
    assert.deepEqual(vector, [0.5, -0.25]);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/hf-inference/models/sentence-transformers/all-MiniLM-L6-v2/pipeline/feature-extraction', header: bearer });
  });

  it('featureExtraction on a partner (scaleway/v1/embeddings)', async function () {
    suite.upstream.on(/embeddings/, respondJson(200, { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5, -0.25] }], model: 'bge-multilingual-gemma2' }));
    const vector = await client.featureExtraction({ provider: 'scaleway', model: 'BAAI/bge-multilingual-gemma2', inputs: 'Hi' });
    assert.deepEqual(vector.flat(), [0.5, -0.25]);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/scaleway/v1/embeddings', header: bearer });
  });

  it('textToImage on HF Inference (image bytes)', async function () {
    const png = Buffer.from('\x89PNGfake');
    suite.upstream.on(/hf-inference\/models/, respondBytes(png, 'image/png'));
    const image = await client.textToImage({ provider: 'hf-inference', model: 'black-forest-labs/FLUX.1-schnell', inputs: 'A lighthouse' });
    assert.deepEqual(Buffer.from(await image.arrayBuffer()), png);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/hf-inference/models/black-forest-labs/FLUX.1-schnell', header: bearer });
  });

  it('textToImage on a partner (together/v1/images/generations)', async function () {
    suite.upstream.on(/images\/generations/, respondJson(200, { data: [{ b64_json: Buffer.from('\x89PNGfake').toString('base64') }] }));
    const image = await client.textToImage({ provider: 'together', model: 'black-forest-labs/FLUX.1-schnell', inputs: 'A lighthouse' });
    assert.ok(image.size > 0);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/together/v1/images/generations', header: bearer });
  });
});
