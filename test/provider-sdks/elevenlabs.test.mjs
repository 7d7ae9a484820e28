/**
 * Official ElevenLabs SDK (`@elevenlabs/elevenlabs-js`) through the gateway: text-to-speech (audio bytes and stream),
 * text-to-dialogue, speech-to-text (multipart), voices.search (`/v2/voices`); data-residency hosts are operator-only.
 * The SDK writes `/v1/…` and `/v2/…` itself, so its base URL is the provider root.
 * Wire formats: https://elevenlabs.io/docs/api-reference/text-to-speech/convert,
 * https://elevenlabs.io/docs/api-reference/text-to-speech/stream, https://elevenlabs.io/docs/api-reference/text-to-dialogue/convert,
 * https://elevenlabs.io/docs/api-reference/speech-to-text/convert, https://elevenlabs.io/docs/api-reference/voices/search
 * (`xi-api-key`), https://elevenlabs.io/docs/product-guides/administration/data-residency.
 */
import { ElevenLabsClient } from '@elevenlabs/elevenlabs-js';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondChunks, respondBytes, collect, assert } from './harness.mjs';

describe('official SDK: @elevenlabs/elevenlabs-js', function () {
  let suite;
  let client;
  const credential = ['xi-api-key', serverKey('elevenlabs')];
  const audio = Buffer.from('ID3fake-mp3-bytes');
  before(async function () {
    suite = await startSuite({ elevenlabs: '' });
    client = new ElevenLabsClient({ apiKey: CLIENT_KEY, baseUrl: suite.base('elevenlabs'), headers: suite.headers, maxRetries: 0 });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  it('textToSpeech.convert (audio bytes)', async function () {
    suite.upstream.on(/text-to-speech/, respondBytes(audio));
    const stream = await client.textToSpeech.convert('JBFqnCBsd6RMkjVDRZzb', { text: 'Hi', modelId: 'eleven_multilingual_v2' });
    assert.deepEqual(await collect(stream), audio);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb', header: credential });
  });

  it('textToSpeech.stream (chunked audio)', async function () {
    suite.upstream.on(/text-to-speech/, respondChunks([audio.subarray(0, 5), audio.subarray(5)], { contentType: 'audio/mpeg' }));
    const stream = await client.textToSpeech.stream('JBFqnCBsd6RMkjVDRZzb', { text: 'Hi', modelId: 'eleven_multilingual_v2' });
    assert.deepEqual(await collect(stream), audio);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb/stream', header: credential });
  });

  it('textToDialogue.convert (POST /v1/text-to-dialogue)', async function () {
    suite.upstream.on(/text-to-dialogue/, respondBytes(audio));
    const stream = await client.textToDialogue.convert({ inputs: [{ text: 'Hi', voiceId: 'JBFqnCBsd6RMkjVDRZzb' }, { text: 'Hello', voiceId: '21m00Tcm4TlvDq8ikWAM' }] });
    assert.deepEqual(await collect(stream), audio);
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1/text-to-dialogue', header: credential });
  });

  it('speechToText.convert (multipart)', async function () {
    suite.upstream.on(/speech-to-text/, respondJson(200, { language_code: 'en', language_probability: 0.98, text: 'transcribed', words: [] }));
    const result = await client.speechToText.convert({ file: new Blob([Buffer.from('RIFFfake')], { type: 'audio/wav' }), modelId: 'scribe_v1' });
    assert.equal(result.text, 'transcribed');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: '/v1/speech-to-text', header: credential });
    assert.ok(request.body.includes('RIFFfake'));
  });

  it('voices.search (GET /v2/voices)', async function () {
    suite.upstream.on(/\/v2\/voices/, respondJson(200, { voices: [{ voice_id: 'JBFqnCBsd6RMkjVDRZzb', name: 'George' }], has_more: false, total_count: 1 }));
    const result = await client.voices.search({ search: 'George' });
    assert.equal(result.voices[0].voiceId, 'JBFqnCBsd6RMkjVDRZzb');
    assertUpstream(only(suite.upstream), { method: 'GET', path: '/v2/voices', query: { search: 'George' }, header: credential });
  });

  it('data residency: the operator may set a declared residency host on the secret, never another host', async function () {
    const { appId } = await suite.gateway.createApp();
    await suite.gateway.setSecret(appId, 'elevenlabs', serverKey('elevenlabs'), 'https://api.eu.residency.elevenlabs.io');
    await assert.rejects(suite.gateway.setSecret(appId, 'elevenlabs', serverKey('elevenlabs'), 'https://api.elevenlabs.io.evil.example'));
  });
});
