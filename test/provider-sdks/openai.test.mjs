/**
 * Official OpenAI SDK (`openai`) through the gateway: chat, streamed chat, streamed responses, embeddings, images, speech,
 * transcription,
 * and `AzureOpenAI` with a deployment.
 * Wire formats: https://platform.openai.com/docs/api-reference (chat/create, chat-streaming, embeddings/create,
 * images/create, audio/createSpeech, audio/createTranscription, responses/create, responses-streaming); Azure:
 * https://learn.microsoft.com/azure/ai-foundry/openai/reference (POST /openai/deployments/{deployment-id}/chat/completions
 * ?api-version=…, `api-key` header).
 */
import OpenAI, { AzureOpenAI, toFile } from 'openai';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondChunks, sseEvents, respondBytes, assert } from './harness.mjs';

const completion = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 } };
const chunk = (content) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content }, finish_reason: null }] });

describe('official SDK: openai', function () {
  let suite;
  let client;
  const bearer = ['Authorization', `Bearer ${serverKey('openai')}`];

  before(async function () {
    suite = await startSuite({ openai: '', 'azure-openai': '/openai' }, { tenants: { 'azure-openai': 'https://my-resource.openai.azure.com/openai' } });
    client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: suite.base('openai', 'v1'), defaultHeaders: suite.headers, maxRetries: 0 });
  });
  after(async function () {
    await suite?.close();
  });
  beforeEach(function () {
    suite.upstream.reset();
  });

  it('chat.completions.create', async function () {
    suite.upstream.on(/chat\/completions/, respondJson(200, completion));
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.choices[0].message.content, 'Hello from the fake');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: '/v1/chat/completions', header: bearer });
    assert.equal(JSON.parse(request.body.toString()).model, 'gpt-4o-mini');
  });

  it('chat.completions.create with stream: true (SSE)', async function () {
    suite.upstream.on(/chat\/completions/, respondChunks(sseEvents([chunk('Hel'), chunk('lo')])));
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    let text = '';
    for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/chat/completions', header: bearer });
  });

  it('embeddings.create', async function () {
    suite.upstream.on(/embeddings/, respondJson(200, { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5, -0.25] }], model: 'text-embedding-3-small', usage: { prompt_tokens: 1, total_tokens: 1 } }));
    const answer = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'Hi', encoding_format: 'float' });
    assert.deepEqual(answer.data[0].embedding, [0.5, -0.25]);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/embeddings', header: bearer });
  });

  it('images.generate', async function () {
    suite.upstream.on(/images\/generations/, respondJson(200, { created: 1, data: [{ b64_json: 'iVBORw0KGgo=' }] }));
    const answer = await client.images.generate({ model: 'gpt-image-1', prompt: 'A lighthouse' });
    assert.equal(answer.data[0].b64_json, 'iVBORw0KGgo=');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/images/generations', header: bearer });
  });

  it('audio.speech.create (audio bytes)', async function () {
    const audio = Buffer.from('ID3fake-mp3-bytes');
    suite.upstream.on(/audio\/speech/, respondBytes(audio));
    const answer = await client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Hi' });
    assert.deepEqual(Buffer.from(await answer.arrayBuffer()), audio);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/audio/speech', header: bearer });
  });

  it('audio.transcriptions.create (multipart)', async function () {
    suite.upstream.on(/audio\/transcriptions/, respondJson(200, { text: 'transcribed' }));
    const answer = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(Buffer.from('RIFFfake'), 'a.wav') });
    assert.equal(answer.text, 'transcribed');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: '/v1/audio/transcriptions', header: bearer });
    assert.match(request.headers['content-type'], /^multipart\/form-data; boundary=/);
    assert.ok(request.body.includes('RIFFfake'));
  });

  it('responses.create, streamed (SSE with named events)', async function () {
    const response = { id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model: 'gpt-4o-mini', output: [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] }], usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 } };
    const events = [
      { type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress', output: [] } },
      { type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hel' },
      { type: 'response.output_text.delta', sequence_number: 2, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'lo' },
      { type: 'response.completed', sequence_number: 3, response },
    ];
    suite.upstream.on(/\/v1\/responses/, respondChunks(sseEvents(events, { done: false, eventNames: events.map((event) => event.type) })));
    const stream = await client.responses.create({ model: 'gpt-4o-mini', input: 'Hi', stream: true });
    let text = '';
    for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
    assert.equal(text, 'Hello');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/responses', header: bearer });
  });

  it('AzureOpenAI with a deployment: /openai/deployments/{deployment}/chat/completions?api-version=…, api-key', async function () {
    const azure = new AzureOpenAI({ apiKey: CLIENT_KEY, apiVersion: '2024-10-21', deployment: 'my-gpt', baseURL: suite.base('azure-openai', 'v1-deployments'), defaultHeaders: suite.headers, maxRetries: 0 });
    suite.upstream.on(/chat\/completions/, respondJson(200, completion));
    const answer = await azure.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.choices[0].message.content, 'Hello from the fake');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: '/openai/deployments/my-gpt/chat/completions', query: { 'api-version': '2024-10-21' }, header: ['api-key', serverKey('azure-openai')] });
    assert.equal(request.headers.authorization, undefined);
  });

  it('AzureOpenAI on the v1 API (/openai/v1/chat/completions, streamed)', async function () {
    const azure = new OpenAI({ apiKey: CLIENT_KEY, baseURL: suite.base('azure-openai', 'v1'), defaultHeaders: suite.headers, maxRetries: 0 });
    suite.upstream.on(/chat\/completions/, respondChunks(sseEvents([chunk('Hi')])));
    const stream = await azure.chat.completions.create({ model: 'my-gpt', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    let text = '';
    for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hi');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/openai/v1/chat/completions', header: ['api-key', serverKey('azure-openai')] });
  });
});
