/**
 * Official Groq SDK (`groq-sdk`) through the gateway: chat, streamed chat, transcription, translation, speech.
 * The SDK's base URL is `https://api.groq.com` and it writes `/openai/v1/…` into every path, so it uses the gateway
 * version `v1-root` (the host root). Wire format: https://console.groq.com/docs/api-reference (POST
 * /openai/v1/chat/completions, /openai/v1/audio/transcriptions, /openai/v1/audio/translations, /openai/v1/audio/speech;
 * `Authorization: Bearer`).
 */
import Groq, { toFile } from 'groq-sdk';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondChunks, sseEvents, respondBytes, assert } from './harness.mjs';

const completion = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'llama-3.1-8b-instant', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 } };
const chunk = (content) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'llama-3.1-8b-instant', choices: [{ index: 0, delta: { content }, finish_reason: null }] });

describe('official SDK: groq-sdk', function () {
  let suite;
  let client;
  const bearer = ['Authorization', `Bearer ${serverKey('groq')}`];
  before(async function () {
    suite = await startSuite({ groq: '' });
    client = new Groq({ apiKey: CLIENT_KEY, baseURL: suite.base('groq', 'v1-root'), defaultHeaders: suite.headers, maxRetries: 0 });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  it('chat.completions.create', async function () {
    suite.upstream.on(/chat\/completions/, respondJson(200, completion));
    const answer = await client.chat.completions.create({ model: 'llama-3.1-8b-instant', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.choices[0].message.content, 'Hello from the fake');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/openai/v1/chat/completions', header: bearer });
  });

  it('chat.completions.create with stream: true (SSE)', async function () {
    suite.upstream.on(/chat\/completions/, respondChunks(sseEvents([chunk('Hel'), chunk('lo')])));
    const stream = await client.chat.completions.create({ model: 'llama-3.1-8b-instant', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    let text = '';
    for await (const part of stream) text += part.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/openai/v1/chat/completions', header: bearer });
  });

  it('audio.transcriptions.create (multipart)', async function () {
    suite.upstream.on(/audio\/transcriptions/, respondJson(200, { text: 'transcribed' }));
    const answer = await client.audio.transcriptions.create({ model: 'whisper-large-v3-turbo', file: await toFile(Buffer.from('RIFFfake'), 'a.wav') });
    assert.equal(answer.text, 'transcribed');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: '/openai/v1/audio/transcriptions', header: bearer });
    assert.ok(request.body.includes('RIFFfake'));
  });

  it('audio.translations.create (multipart)', async function () {
    suite.upstream.on(/audio\/translations/, respondJson(200, { text: 'translated' }));
    const answer = await client.audio.translations.create({ model: 'whisper-large-v3', file: await toFile(Buffer.from('RIFFfake'), 'a.wav') });
    assert.equal(answer.text, 'translated');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/openai/v1/audio/translations', header: bearer });
  });

  it('with the plain base URL (<gateway>/v1/proxy/groq): chat and a multipart upload (audio.transcriptions.create)', async function () {
    // groq-sdk writes `/openai/v1/…` itself: the first segment, `openai`, is the gateway version mapped to `/openai`.
    const plain = new Groq({ apiKey: CLIENT_KEY, baseURL: suite.base('groq'), defaultHeaders: suite.headers, maxRetries: 0 });
    suite.upstream.on(/chat\/completions/, respondJson(200, completion));
    suite.upstream.on(/audio\/transcriptions/, respondJson(200, { text: 'transcribed' }));
    const answer = await plain.chat.completions.create({ model: 'llama-3.1-8b-instant', messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(answer.choices[0].message.content, 'Hello from the fake');
    const transcript = await plain.audio.transcriptions.create({ model: 'whisper-large-v3-turbo', file: await toFile(Buffer.from('RIFFplain'), 'a.wav') });
    assert.equal(transcript.text, 'transcribed');
    const [chat, upload] = suite.upstream.requests;
    assertUpstream(chat, { method: 'POST', path: '/openai/v1/chat/completions', header: bearer });
    assertUpstream(upload, { method: 'POST', path: '/openai/v1/audio/transcriptions', header: bearer });
    assert.ok(upload.body.includes('RIFFplain'));
  });

  it('audio.speech.create (audio bytes)', async function () {
    const audio = Buffer.from('RIFFfake-wav-bytes');
    suite.upstream.on(/audio\/speech/, respondBytes(audio, 'audio/wav'));
    const answer = await client.audio.speech.create({ model: 'playai-tts', voice: 'Fritz-PlayAI', input: 'Hi', response_format: 'wav' });
    assert.deepEqual(Buffer.from(await answer.arrayBuffer()), audio);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/openai/v1/audio/speech', header: bearer });
  });
});
