/**
 * Official SDKs through the gateway: `replicate` (run with Prefer: wait, predictions.create + get), `@fal-ai/client`
 * (run on fal.run, subscribe on the queue host), `@tavily/core` (search, extract), `exa-js` (search, getContents,
 * answer), `@perplexity-ai/perplexity_ai` (chat, streamed chat, search) and `@cartesia/cartesia-js` (tts bytes, tts SSE).
 * Wire formats: https://replicate.com/docs/reference/http#models.predictions.create (POST
 * /v1/models/{owner}/{name}/predictions, `Prefer: wait`), https://replicate.com/docs/reference/http#predictions.get;
 * https://docs.fal.ai/model-apis/model-endpoints/queue (POST https://queue.fal.run/{app}, GET
 * …/requests/{id}/status, GET …/requests/{id}), https://docs.fal.ai/model-apis/model-endpoints/synchronous-requests
 * (https://fal.run/{app}), `Authorization: Key <key>`; https://docs.tavily.com/documentation/api-reference/endpoint/search,
 * https://docs.tavily.com/documentation/api-reference/endpoint/extract (`Authorization: Bearer`);
 * https://docs.exa.ai/reference/search, https://docs.exa.ai/reference/get-contents, https://docs.exa.ai/reference/answer
 * (`x-api-key`); https://docs.perplexity.ai/api-reference/chat-completions-post,
 * https://docs.perplexity.ai/api-reference/search-post (`Authorization: Bearer`);
 * https://docs.cartesia.ai/api-reference/tts/bytes, https://docs.cartesia.ai/api-reference/tts/sse,
 * https://docs.cartesia.ai/use-the-api/api-conventions (`Authorization: Bearer`, `Cartesia-Version`).
 */
import Replicate from 'replicate';
import { createFalClient } from '@fal-ai/client';
import { tavily } from '@tavily/core';
import axios from 'axios';
import Exa from 'exa-js';
import Perplexity from '@perplexity-ai/perplexity_ai';
import Cartesia from '@cartesia/cartesia-js';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondChunks, sseEvents, respondBytes, assert } from './harness.mjs';

describe('official SDKs: replicate, @fal-ai/client, @tavily/core, exa-js, @perplexity-ai/perplexity_ai, @cartesia/cartesia-js', function () {
  let suite;
  before(async function () {
    suite = await startSuite({ replicate: '', fal: '', tavily: '', exa: '', perplexity: '', cartesia: '' });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  describe('replicate', function () {
    const bearer = ['Authorization', `Bearer ${serverKey('replicate')}`];
    const prediction = (status, output) => ({ id: 'p1', model: 'black-forest-labs/flux-schnell', version: 'v', input: { prompt: 'A lighthouse' }, status, output, error: null, logs: '', urls: { get: 'https://api.replicate.com/v1/predictions/p1', cancel: 'https://api.replicate.com/v1/predictions/p1/cancel' } });
    let client;
    before(function () {
      client = new Replicate({ auth: CLIENT_KEY, baseUrl: suite.base('replicate', 'v1'), fetch: suite.fetch, useFileOutput: false });
    });

    it('run (image model, Prefer: wait)', async function () {
      suite.upstream.on(/predictions/, respondJson(201, prediction('succeeded', ['https://replicate.delivery/out-0.webp'])));
      const output = await client.run('black-forest-labs/flux-schnell', { input: { prompt: 'A lighthouse' } });
      assert.deepEqual(output, ['https://replicate.delivery/out-0.webp']);
      const request = only(suite.upstream);
      assertUpstream(request, { method: 'POST', path: '/v1/models/black-forest-labs/flux-schnell/predictions', header: bearer });
      assert.match(String(request.headers.prefer), /^wait/);
    });

    it('predictions.create, then predictions.get', async function () {
      suite.upstream.on((request) => request.method === 'POST', respondJson(201, prediction('starting', null)));
      suite.upstream.on((request) => request.method === 'GET', respondJson(200, prediction('succeeded', 'done')));
      const created = await client.predictions.create({ version: '5599ed30703defd1d160a25a63321b4dec97101d98b4674bcc56e41f62f35637', input: { prompt: 'Hi' } });
      const fetched = await client.predictions.get(created.id);
      assert.equal(fetched.output, 'done');
      assertUpstream(suite.upstream.requests[0], { method: 'POST', path: '/v1/predictions', header: bearer });
      assertUpstream(suite.upstream.requests[1], { method: 'GET', path: '/v1/predictions/p1', header: bearer });
    });
  });

  describe('@fal-ai/client', function () {
    const credential = ['Authorization', `Key ${serverKey('fal')}`];
    let fal;
    before(function () {
      // The client builds https://fal.run/… and https://queue.fal.run/… itself; the app's fetch sends them to the gateway.
      const appFetch = (input, init = {}) => {
        const url = String(input instanceof Request ? input.url : input)
          .replace(/^https:\/\/queue\.fal\.run\//, `${suite.base('fal', 'v1-queue')}/`)
          .replace(/^https:\/\/fal\.run\//, `${suite.base('fal', 'v1')}/`);
        assert.ok(url.startsWith(suite.gateway.url), `unexpected URL ${url}`);
        return suite.fetch(url, init);
      };
      fal = createFalClient({ credentials: CLIENT_KEY, fetch: appFetch, suppressLocalCredentialsWarning: true });
    });

    it('run (fal.run, synchronous)', async function () {
      suite.upstream.on(/flux/, respondJson(200, { images: [{ url: 'https://v3.fal.media/files/out.jpg', width: 1024, height: 768, content_type: 'image/jpeg' }], seed: 1 }));
      const result = await fal.run('fal-ai/flux/schnell', { input: { prompt: 'A lighthouse' } });
      assert.equal(result.data.images[0].url, 'https://v3.fal.media/files/out.jpg');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/fal-ai/flux/schnell', header: credential });
    });

    it('subscribe (queue: submit, status, result)', async function () {
      const base = 'https://queue.fal.run/fal-ai/flux/requests/r1';
      suite.upstream.on((request) => request.method === 'POST', respondJson(200, { request_id: 'r1', status: 'IN_QUEUE', status_url: `${base}/status`, response_url: base, cancel_url: `${base}/cancel` }));
      suite.upstream.on(/\/requests\/r1\/status/, respondJson(200, { status: 'COMPLETED', request_id: 'r1', response_url: base }));
      suite.upstream.on((request) => request.method === 'GET' && /\/requests\/r1$/.test(request.url), respondJson(200, { images: [{ url: 'https://v3.fal.media/files/out.jpg' }] }));
      const result = await fal.subscribe('fal-ai/flux/schnell', { input: { prompt: 'A lighthouse' }, mode: 'polling', pollInterval: 10 });
      assert.equal(result.data.images[0].url, 'https://v3.fal.media/files/out.jpg');
      const [submit, ...rest] = suite.upstream.requests;
      assertUpstream(submit, { method: 'POST', path: '/fal-ai/flux/schnell', header: credential });
      for (const request of rest) assertUpstream(request, { method: 'GET', path: new URL(request.url, 'http://x').pathname, header: credential });
      assert.deepEqual(rest.map((request) => new URL(request.url, 'http://x').pathname).slice(-2), ['/fal-ai/flux/requests/r1/status', '/fal-ai/flux/requests/r1']);
    });
  });

  describe('@tavily/core', function () {
    const bearer = ['Authorization', `Bearer ${serverKey('tavily')}`];
    let client;
    const saved = {};
    before(function () {
      // The client posts with axios and takes no custom headers: the app sets the Tollgate headers on axios.
      for (const [name, value] of Object.entries(suite.headers)) {
        saved[name] = axios.defaults.headers.common[name];
        axios.defaults.headers.common[name] = value;
      }
      client = tavily({ apiKey: CLIENT_KEY, apiBaseURL: suite.base('tavily', 'v1') });
    });
    after(function () {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete axios.defaults.headers.common[name];
        else axios.defaults.headers.common[name] = value;
      }
    });

    it('search', async function () {
      suite.upstream.on(/\/search/, respondJson(200, { query: 'lighthouses', answer: null, images: [], results: [{ title: 'Lighthouse', url: 'https://example.com/l', content: 'A tower', score: 0.9 }], response_time: 0.5 }));
      const result = await client.search('lighthouses');
      assert.equal(result.results[0].url, 'https://example.com/l');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/search', header: bearer });
    });

    it('extract', async function () {
      suite.upstream.on(/\/extract/, respondJson(200, { results: [{ url: 'https://example.com/l', raw_content: 'A tower' }], failed_results: [], response_time: 0.2 }));
      const result = await client.extract(['https://example.com/l']);
      assert.equal(result.results[0].rawContent, 'A tower');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/extract', header: bearer });
    });
  });

  describe('exa-js', function () {
    const credential = ['x-api-key', serverKey('exa')];
    let exa;
    before(function () {
      exa = new Exa(CLIENT_KEY, suite.base('exa', 'v1'));
      for (const [name, value] of Object.entries(suite.headers)) exa.headers.set(name, value);
    });

    it('search', async function () {
      suite.upstream.on(/\/search/, respondJson(200, { requestId: 'q1', results: [{ id: 'https://example.com/l', url: 'https://example.com/l', title: 'Lighthouse' }] }));
      const result = await exa.search('lighthouses', { numResults: 1 });
      assert.equal(result.results[0].url, 'https://example.com/l');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/search', header: credential });
    });

    it('getContents', async function () {
      suite.upstream.on(/\/contents/, respondJson(200, { requestId: 'c1', results: [{ id: 'https://example.com/l', url: 'https://example.com/l', title: 'Lighthouse', text: 'A tower' }] }));
      const result = await exa.getContents(['https://example.com/l'], { text: true });
      assert.equal(result.results[0].text, 'A tower');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/contents', header: credential });
    });

    it('answer', async function () {
      suite.upstream.on(/\/answer/, respondJson(200, { requestId: 'a1', answer: 'A tower with a light.', citations: [] }));
      const result = await exa.answer('What is a lighthouse?');
      assert.equal(result.answer, 'A tower with a light.');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/answer', header: credential });
    });
  });

  describe('@perplexity-ai/perplexity_ai', function () {
    const bearer = ['Authorization', `Bearer ${serverKey('perplexity')}`];
    const chunk = (content) => ({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'sonar', choices: [{ index: 0, delta: { role: 'assistant', content }, finish_reason: null }] });
    let client;
    before(function () {
      client = new Perplexity({ apiKey: CLIENT_KEY, baseURL: suite.base('perplexity', 'v1'), defaultHeaders: suite.headers, maxRetries: 0 });
    });

    it('chat.completions.create', async function () {
      suite.upstream.on(/chat\/completions/, respondJson(200, { id: 'c1', object: 'chat.completion', created: 1, model: 'sonar', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 } }));
      const answer = await client.chat.completions.create({ model: 'sonar', messages: [{ role: 'user', content: 'Hi' }] });
      assert.equal(answer.choices[0].message.content, 'Hello from the fake');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/chat/completions', header: bearer });
    });

    it('chat.completions.create with stream: true (SSE framed with CRLF)', async function () {
      const frames = sseEvents([chunk('Hel'), chunk('lo')]).map((frame) => frame.replace(/\n/g, '\r\n'));
      suite.upstream.on(/chat\/completions/, respondChunks(frames));
      const stream = await client.chat.completions.create({ model: 'sonar', messages: [{ role: 'user', content: 'Hi' }], stream: true });
      let text = '';
      for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
      assert.equal(text, 'Hello');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/chat/completions', header: bearer });
    });

    it('search.create (POST /search)', async function () {
      suite.upstream.on(/\/search/, respondJson(200, { id: 's1', results: [{ title: 'Lighthouse', url: 'https://example.com/l', snippet: 'A tower', date: '2025-01-01' }] }));
      const result = await client.search.create({ query: 'lighthouses', max_results: 1 });
      assert.equal(result.results[0].url, 'https://example.com/l');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/search', header: bearer });
    });
  });

  describe('@cartesia/cartesia-js', function () {
    const bearer = ['Authorization', `Bearer ${serverKey('cartesia')}`];
    const body = { model_id: 'sonic-3', transcript: 'Hi', voice: { mode: 'id', id: 'e07c00bc-4134-4eae-9ea4-1a55fb45746b' }, output_format: { container: 'wav', encoding: 'pcm_f32le', sample_rate: 44100 } };
    let client;
    before(function () {
      client = new Cartesia({ apiKey: CLIENT_KEY, baseURL: suite.base('cartesia', 'v1'), defaultHeaders: suite.headers, maxRetries: 0 });
    });

    it('tts.generate (POST /tts/bytes, audio bytes)', async function () {
      const audio = Buffer.from('RIFFfake-wav-bytes');
      suite.upstream.on(/\/tts\/bytes/, respondBytes(audio, 'audio/wav'));
      const response = await client.tts.generate(body);
      assert.deepEqual(Buffer.from(await response.arrayBuffer()), audio);
      const request = only(suite.upstream);
      assertUpstream(request, { method: 'POST', path: '/tts/bytes', header: bearer });
      assert.match(request.headers['cartesia-version'], /^\d{4}-\d{2}-\d{2}$/);
      assert.equal(request.headers['x-api-key'], undefined);
    });

    it('tts.generateSSE (POST /tts/sse)', async function () {
      const events = [{ type: 'chunk', data: Buffer.from('RIFF').toString('base64'), done: false, status_code: 206, context_id: 'c' }, { type: 'done', done: true, status_code: 200, context_id: 'c' }];
      suite.upstream.on(/\/tts\/sse/, respondChunks(sseEvents(events, { done: false, eventNames: ['chunk', 'done'] })));
      const stream = await client.tts.generateSSE({ ...body, output_format: { container: 'raw', encoding: 'pcm_f32le', sample_rate: 44100 } });
      const types = [];
      for await (const event of stream) types.push(event.type);
      assert.ok(types.includes('chunk'), `events: ${types.join(',')}`);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/tts/sse', header: bearer });
    });

    it('a client without Cartesia-Version gets the gateway default', async function () {
      suite.upstream.on(/\/tts\/bytes/, respondBytes(Buffer.from('RIFF'), 'audio/wav'));
      const response = await fetch(`${suite.base('cartesia', 'v1')}/tts/bytes`, { method: 'POST', headers: { ...suite.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      assert.equal(response.status, 200);
      const request = only(suite.upstream);
      assertUpstream(request, { method: 'POST', path: '/tts/bytes', header: bearer });
      assert.equal(request.headers['cartesia-version'], '2026-08-14');
    });
  });
});
