/**
 * Official speech SDKs through the gateway: `@deepgram/sdk` (prerecorded transcription from bytes and from a URL, text to
 * speech) and `assemblyai` (upload, transcript create, poll).
 * Wire formats: https://developers.deepgram.com/reference/speech-to-text/listen-pre-recorded (POST /v1/listen, raw audio
 * body or {url}), https://developers.deepgram.com/reference/text-to-speech/speak-request (POST /v1/speak, audio bytes),
 * `Authorization: Token <key>`; https://www.assemblyai.com/docs/api-reference/files/upload (POST /v2/upload, raw bytes),
 * https://www.assemblyai.com/docs/api-reference/transcripts/submit (POST /v2/transcript),
 * https://www.assemblyai.com/docs/api-reference/transcripts/get (GET /v2/transcript/{id}), `Authorization: <key>`.
 */
import { DeepgramClient } from '@deepgram/sdk';
import { AssemblyAI } from 'assemblyai';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondBytes, collect, assert } from './harness.mjs';

const deepgramResult = { metadata: { request_id: 'r1', created: '2026-01-01T00:00:00Z', duration: 1, channels: 1, models: [], model_info: {} }, results: { channels: [{ alternatives: [{ transcript: 'hello world', confidence: 0.99, words: [] }] }] } };

describe('official SDKs: @deepgram/sdk, assemblyai', function () {
  let suite;
  before(async function () {
    suite = await startSuite({ deepgram: '', assemblyai: '' });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  describe('@deepgram/sdk', function () {
    const credential = ['Authorization', `Token ${serverKey('deepgram')}`];
    let client;
    before(function () {
      // The SDK writes /v1/… itself: its base URL is the provider root.
      client = new DeepgramClient({ apiKey: CLIENT_KEY, baseUrl: suite.base('deepgram'), headers: suite.headers, maxRetries: 0 });
    });

    it('listen.v1.media.transcribeFile (raw audio body)', async function () {
      suite.upstream.on(/\/v1\/listen/, respondJson(200, deepgramResult));
      const result = await client.listen.v1.media.transcribeFile(Buffer.from('RIFFfake'), { model: 'nova-3' });
      assert.equal(result.results.channels[0].alternatives[0].transcript, 'hello world');
      const request = only(suite.upstream);
      assertUpstream(request, { method: 'POST', path: '/v1/listen', query: { model: 'nova-3' }, header: credential });
      assert.equal(request.body.toString(), 'RIFFfake');
    });

    it('listen.v1.media.transcribeUrl', async function () {
      suite.upstream.on(/\/v1\/listen/, respondJson(200, deepgramResult));
      const result = await client.listen.v1.media.transcribeUrl({ url: 'https://dpgr.am/spacewalk.wav', model: 'nova-3' });
      assert.equal(result.results.channels[0].alternatives[0].transcript, 'hello world');
      const request = only(suite.upstream);
      assertUpstream(request, { method: 'POST', path: '/v1/listen', header: credential });
      assert.equal(JSON.parse(request.body.toString()).url, 'https://dpgr.am/spacewalk.wav');
    });

    it('speak.v1.audio.generate (audio bytes)', async function () {
      const audio = Buffer.from('ID3fake-mp3-bytes');
      suite.upstream.on(/\/v1\/speak/, respondBytes(audio));
      const answer = await client.speak.v1.audio.generate({ text: 'Hi', model: 'aura-2-thalia-en' });
      const bytes = answer.stream ? await collect(answer.stream()) : Buffer.from(await answer.arrayBuffer());
      assert.deepEqual(bytes, audio);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/speak', query: { model: 'aura-2-thalia-en' }, header: credential });
    });
  });

  describe('assemblyai', function () {
    const credential = ['Authorization', serverKey('assemblyai')];
    let client;
    const realFetch = globalThis.fetch;
    before(function () {
      // The SDK takes no custom headers or fetch: the app adds the Tollgate headers to its requests to the gateway.
      const gateway = suite.gateway.url;
      globalThis.fetch = (input, init = {}) => (String(input).startsWith(gateway) ? suite.fetch(input, init) : realFetch(input, init));
      client = new AssemblyAI({ apiKey: CLIENT_KEY, baseUrl: suite.base('assemblyai') });
    });
    after(function () {
      globalThis.fetch = realFetch;
    });

    it('transcripts.transcribe: upload, submit, poll', async function () {
      suite.upstream.on(/\/v2\/upload/, respondJson(200, { upload_url: 'https://cdn.assemblyai.com/upload/abc' }));
      suite.upstream.on((request) => request.method === 'POST' && /\/v2\/transcript$/.test(request.url), respondJson(200, { id: 't1', status: 'queued', audio_url: 'https://cdn.assemblyai.com/upload/abc' }));
      suite.upstream.on((request) => request.method === 'GET' && /\/v2\/transcript\/t1$/.test(request.url), respondJson(200, { id: 't1', status: 'completed', text: 'hello world', audio_url: 'https://cdn.assemblyai.com/upload/abc' }));
      const transcript = await client.transcripts.transcribe({ audio: Buffer.from('RIFFfake'), speech_model: 'universal' }, { pollingInterval: 10 });
      assert.equal(transcript.text, 'hello world');
      const [upload, submit, poll] = suite.upstream.requests;
      assertUpstream(upload, { method: 'POST', path: '/v2/upload', header: credential });
      assert.equal(upload.body.toString(), 'RIFFfake');
      assertUpstream(submit, { method: 'POST', path: '/v2/transcript', header: credential });
      assert.equal(JSON.parse(submit.body.toString()).audio_url, 'https://cdn.assemblyai.com/upload/abc');
      assertUpstream(poll, { method: 'GET', path: '/v2/transcript/t1', header: credential });
    });
  });
});
