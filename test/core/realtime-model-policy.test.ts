/**
 * The app's model policy inside realtime sessions, through a real gateway to a fake provider socket on loopback. The
 * frames are the providers' documented client events:
 * - OpenAI Realtime (https://platform.openai.com/docs/api-reference/realtime-client-events): the URL's `?model=`
 *   (https://platform.openai.com/docs/guides/realtime-websocket), `session.update` with `session.model` and
 *   `session.max_output_tokens`, `response.create` with `response.max_output_tokens`, `input_audio_buffer.append`;
 * - Gemini Live (https://ai.google.dev/api/live): the first message `setup` with `model` (`models/{model}`) and
 *   `generationConfig.maxOutputTokens`;
 * - the model in the URL of Deepgram (https://developers.deepgram.com/reference/speech-to-text/listen-streaming,
 *   `model`), ElevenLabs (https://elevenlabs.io/docs/api-reference/text-to-speech/v-1-text-to-speech-voice-id-stream-input,
 *   `model_id`) and Cartesia STT (https://docs.cartesia.ai/api-reference/stt/stt, `model`), and in Cartesia's TTS
 *   generation requests (https://docs.cartesia.ai/api-reference/tts/websocket, `model_id`).
 * What crossed the wire is asserted: the upstream handshake's URL, the frames the fake provider read (or that it read
 * none), the close code and reason the client got, the request-log row.
 */
import { expect } from 'chai';
import { WebSocket } from 'ws';
import { TestGateway, type Provisioned } from '../support/gateway';
import { FakeRealtimeUpstream, eventually } from '../support/fake-realtime';

const OPERATOR_KEY = 'sk-operator-realtime-policy-0123456789';
/** The gateway's frame cap in this test (TOLLGATE_REALTIME_MAX_FRAME_BYTES). */
const FRAME_CAP = 64 * 1024;

const OPENAI_POLICY = { openai: { allow: ['gpt-realtime', 'gpt-4o-mini-transcribe'], aliases: { voice: 'gpt-realtime' }, maxOutputTokens: 300 } };
const GEMINI_POLICY = { gemini: { allow: ['gemini-live-2.5-flash-preview'], aliases: { live: 'gemini-live-2.5-flash-preview' }, maxOutputTokens: 200 } };

function connect(url: string, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers, perMessageDeflate: false });
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => reject(Object.assign(new Error(`refused ${response.statusCode}`), { status: response.statusCode ?? 0, body })));
    });
    socket.once('error', reject);
  });
}

function closeOf(socket: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

describe('realtime sessions under the app\'s model policy', function () {
  this.timeout(30_000);
  let fake: FakeRealtimeUpstream;
  let gateway: TestGateway;
  let socketBase: string;

  before(async () => {
    fake = await FakeRealtimeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: fake.url, gemini: fake.url, deepgram: fake.url, elevenlabs: fake.url, cartesia: fake.url }, env: { TOLLGATE_REALTIME_MAX_FRAME_BYTES: String(FRAME_CAP) } });
    socketBase = gateway.url.replace(/^http/, 'ws');
  });

  after(async () => {
    await gateway.close();
    await fake.close();
  });

  const provision = (settings: Record<string, unknown> = {}): Promise<Provisioned> => gateway.provision({ openai: OPERATOR_KEY, gemini: OPERATOR_KEY, deepgram: OPERATOR_KEY, elevenlabs: OPERATOR_KEY, cartesia: OPERATOR_KEY }, settings);
  const openai = (model: string) => `${socketBase}/v1/proxy/openai/v1/realtime?model=${encodeURIComponent(model)}`;
  const gemini = () => `${socketBase}/v1/proxy/gemini/v1beta/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent`;

  /** Opens a session and waits for the provider's side of it. */
  async function open(url: string, device: Provisioned) {
    const opened = fake.nextSession();
    const client = await connect(url, device.headers);
    return { client, upstream: await opened };
  }

  it('refuses an upgrade whose URL names a model outside the allow-list, before any connection to the provider', async () => {
    const device = await provision({ modelPolicy: OPENAI_POLICY });
    const before = fake.sessions.length;
    const refusal = await connect(openai('gpt-4o-realtime-preview'), device.headers).then(
      () => ({ status: 101, body: '' }),
      (error: { status: number; body: string }) => error,
    );
    expect(refusal.status).to.equal(400);
    expect(JSON.parse(refusal.body).error).to.include({ type: 'invalidRequest', reason: 'model_not_allowed' });
    // A second `model` parameter cannot slip another model past the check either.
    const doubled = await connect(`${openai('gpt-realtime')}&model=gpt-4o-realtime-preview`, device.headers).then(
      () => ({ status: 101, body: '' }),
      (error: { status: number; body: string }) => error,
    );
    expect(doubled.status).to.equal(400);
    expect(fake.sessions.length).to.equal(before);
  });

  it('replaces a model alias in the URL the provider is dialled with', async () => {
    const device = await provision({ modelPolicy: OPENAI_POLICY });
    const { client, upstream } = await open(`${openai('voice')}&x=a%20b`, device);
    expect(upstream.handshake.url).to.equal('/v1/realtime?model=gpt-realtime&x=a%20b');
    client.close();
  });

  it('closes with 4400 model_not_allowed on a session.update naming another model; the provider never reads it', async () => {
    const device = await provision({ modelPolicy: OPENAI_POLICY });
    const since = Date.now();
    const { client, upstream } = await open(openai('gpt-realtime'), device);
    const closed = closeOf(client);
    client.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', model: 'gpt-4o-realtime-preview', instructions: 'Be brief.' } }));
    expect(await closed).to.deep.equal({ code: 4400, reason: 'model_not_allowed' });
    expect((await upstream.closed).code).to.equal(1000);
    expect(upstream.messages).to.deep.equal([]);
    const event = await gateway.recordedEvent(device.appId, since, (candidate) => candidate.status === 101);
    expect(event.session).to.include({ closeCode: 4400, closeReason: 'model_not_allowed', closedBy: 'gateway' });
  });

  it('reads an escaped event type as the provider would: session\\u002eupdate is refused too', async () => {
    const device = await provision({ modelPolicy: OPENAI_POLICY });
    const { client, upstream } = await open(openai('gpt-realtime'), device);
    const closed = closeOf(client);
    client.send('{"type":"session\\u002eupdate","session":{"type":"realtime","model":"gpt-4o-realtime-preview"}}');
    expect(await closed).to.deep.equal({ code: 4400, reason: 'model_not_allowed' });
    expect(upstream.messages).to.deep.equal([]);
  });

  it('closes with 4400 frame_not_json on a text frame that may name a model and is not a JSON object', async () => {
    const device = await provision({ modelPolicy: OPENAI_POLICY });
    const { client, upstream } = await open(openai('gpt-realtime'), device);
    const closed = closeOf(client);
    client.send('{"type":"session.update","session":{"model":"gpt-4o-realtime-preview"}');
    expect(await closed).to.deep.equal({ code: 4400, reason: 'frame_not_json' });
    expect(upstream.messages).to.deep.equal([]);
  });

  it('rewrites an alias and clamps the output limits in the frames the provider reads; other frames pass byte for byte', async () => {
    const device = await provision({ modelPolicy: OPENAI_POLICY });
    const { client, upstream } = await open(openai('gpt-realtime'), device);
    const audio = Buffer.from(JSON.stringify({ type: 'input_audio_buffer.append', audio: Buffer.alloc(3000, 7).toString('base64') }));
    const pcm = Buffer.from(Array.from({ length: 512 }, (_, index) => index % 256));
    client.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', model: 'voice', max_output_tokens: 'inf', audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } } } } }));
    client.send(audio, { binary: false });
    client.send(pcm, { binary: true });
    client.send(JSON.stringify({ type: 'response.create' }));
    client.send(JSON.stringify({ type: 'response.create', response: { max_output_tokens: 100, instructions: 'Short.' } }));
    await eventually(() => upstream.messages.length === 5, 5000, 'five frames upstream');
    const read = upstream.messages.map((message) => message.data);
    expect(JSON.parse(read[0]!.toString())).to.deep.equal({ type: 'session.update', session: { type: 'realtime', model: 'gpt-realtime', max_output_tokens: 300, audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } } } } });
    expect(read[1]!.equals(audio)).to.equal(true);
    expect(upstream.messages[1]!.binary).to.equal(false);
    expect(read[2]!.equals(pcm)).to.equal(true);
    expect(upstream.messages[2]!.binary).to.equal(true);
    expect(JSON.parse(read[3]!.toString())).to.deep.equal({ type: 'response.create', response: { max_output_tokens: 300 } });
    expect(JSON.parse(read[4]!.toString())).to.deep.equal({ type: 'response.create', response: { max_output_tokens: 100, instructions: 'Short.' } });
    // The input transcription's model is under the allow-list too.
    const closed = closeOf(client);
    client.send(JSON.stringify({ type: 'session.update', session: { type: 'realtime', audio: { input: { transcription: { model: 'whisper-1' } } } } }));
    expect(await closed).to.deep.equal({ code: 4400, reason: 'model_not_allowed' });
    expect(upstream.messages.length).to.equal(5);
  });

  it('without a policy for the provider, frames naming any model arrive byte for byte', async () => {
    const device = await provision({ modelPolicy: GEMINI_POLICY });
    const { client, upstream } = await open(openai('gpt-4o-realtime-preview'), device);
    expect(upstream.handshake.url).to.equal('/v1/realtime?model=gpt-4o-realtime-preview');
    const update = Buffer.from('{"type":"session.update",  "session":{"model":"gpt-4o-realtime-preview","max_output_tokens":"inf","instructions":"h\\u00e9llo"}}');
    client.send(update, { binary: false });
    await eventually(() => upstream.messages.length === 1);
    expect(upstream.messages[0]!.data.equals(update)).to.equal(true);
    client.close();
  });

  it('closes with 4400 frame_too_large on a client message over the frame cap; the provider never reads it', async () => {
    const device = await provision();
    const since = Date.now();
    const { client, upstream } = await open(openai('gpt-realtime'), device);
    const closed = closeOf(client);
    client.send(Buffer.alloc(FRAME_CAP - 100, 1), { binary: true });
    await eventually(() => upstream.messages.length === 1, 5000, 'the frame under the cap');
    client.send(Buffer.alloc(FRAME_CAP + 1, 2), { binary: true });
    expect(await closed).to.deep.equal({ code: 4400, reason: 'frame_too_large' });
    expect((await upstream.closed).code).to.equal(1000);
    expect(upstream.messages.length).to.equal(1);
    const event = await gateway.recordedEvent(device.appId, since, (candidate) => candidate.status === 101);
    expect(event.session).to.include({ closeCode: 4400, closeReason: 'frame_too_large', closedBy: 'gateway' });
  });

  it('gemini: the setup message\'s model alias is replaced (as a models/ resource name) and its output limit clamped', async () => {
    const device = await provision({ modelPolicy: GEMINI_POLICY });
    const { client, upstream } = await open(gemini(), device);
    client.send(JSON.stringify({ setup: { model: 'models/live', generationConfig: { responseModalities: ['AUDIO'], maxOutputTokens: 8192 } } }));
    const content = JSON.stringify({ clientContent: { turns: [{ role: 'user', parts: [{ text: 'Hello' }] }], turnComplete: true } });
    client.send(content);
    await eventually(() => upstream.messages.length === 2);
    expect(JSON.parse(upstream.messages[0]!.data.toString())).to.deep.equal({ setup: { model: 'models/gemini-live-2.5-flash-preview', generationConfig: { responseModalities: ['AUDIO'], maxOutputTokens: 200 } } });
    expect(upstream.messages[1]!.data.toString()).to.equal(content);
    client.close();
  });

  it('gemini: a setup naming another model closes with 4400, in a text or a binary frame', async () => {
    const device = await provision({ modelPolicy: GEMINI_POLICY });
    for (const binary of [false, true]) {
      const { client, upstream } = await open(gemini(), device);
      const closed = closeOf(client);
      client.send(Buffer.from(JSON.stringify({ setup: { model: 'models/gemini-2.5-pro' } })), { binary });
      expect(await closed).to.deep.equal({ code: 4400, reason: 'model_not_allowed' });
      expect(upstream.messages).to.deep.equal([]);
    }
  });

  it('deepgram, elevenlabs and cartesia: the model in the URL is checked at the upgrade, Cartesia TTS\'s model_id in each request', async () => {
    const device = await provision({
      modelPolicy: {
        deepgram: { allow: ['nova-3'] },
        elevenlabs: { allow: ['eleven_flash_v2_5'] },
        cartesia: { allow: ['ink-whisper', 'sonic-2'], aliases: { fast: 'sonic-2' } },
      },
    });
    const before = fake.sessions.length;
    for (const [path, status] of [
      ['deepgram/v1/listen?model=nova-2&encoding=linear16', 400],
      ['elevenlabs/v1/text-to-speech/voice123/stream-input?model_id=eleven_multilingual_v2', 400],
      ['cartesia/v1/stt/websocket?model=some-other', 400],
    ] as const) {
      const refusal = await connect(`${socketBase}/v1/proxy/${path}`, device.headers).then(() => ({ status: 101, body: '' }), (error: { status: number; body: string }) => error);
      expect(refusal.status, path).to.equal(status);
      expect(JSON.parse(refusal.body).error.reason).to.equal('model_not_allowed');
    }
    expect(fake.sessions.length).to.equal(before);
    const listen = await open(`${socketBase}/v1/proxy/deepgram/v1/listen?model=nova-3&encoding=linear16`, device);
    expect(listen.upstream.handshake.url).to.equal('/v1/listen?model=nova-3&encoding=linear16');
    listen.client.close();
    const tts = await open(`${socketBase}/v1/proxy/cartesia/v1/tts/websocket`, device);
    tts.client.send(JSON.stringify({ model_id: 'fast', transcript: 'Hello', voice: { mode: 'id', id: 'voice-1' }, context_id: 'c1', continue: true }));
    await eventually(() => tts.upstream.messages.length === 1);
    expect(JSON.parse(tts.upstream.messages[0]!.data.toString())).to.include({ model_id: 'sonic-2', transcript: 'Hello' });
    const closed = closeOf(tts.client);
    tts.client.send(JSON.stringify({ model_id: 'sonic-english', transcript: 'Hi', voice: { mode: 'id', id: 'voice-1' }, context_id: 'c2' }));
    expect(await closed).to.deep.equal({ code: 4400, reason: 'model_not_allowed' });
    expect(tts.upstream.messages.length).to.equal(1);
  });
});
