/**
 * Official SDKs' realtime clients through the gateway's WebSocket sessions, against a fake provider socket on loopback
 * speaking each provider's documented events:
 * - `openai` `OpenAIRealtimeWS` (`openai/realtime/ws`): https://platform.openai.com/docs/guides/realtime-websocket and
 *   https://platform.openai.com/docs/api-reference/realtime-server-events (`session.created`, `response.done` with
 *   `response.usage`). The SDK always dials `wss:`, so the gateway is reached through a TLS front on loopback
 *   (a certificate made by `openssl` for 127.0.0.1, trusted by this client only).
 * - `@google/genai` `live.connect`: https://ai.google.dev/api/live (`setup` → `setupComplete`, `clientContent`,
 *   `serverContent`, `usageMetadata`). The SDK writes `/ws/…` after its base URL, so the base is the provider's root
 *   version (`/v1/proxy/gemini/v1-root`).
 * Under an app's model policy, the OpenAI client's model alias reaches the provider as its model, its `response.create`
 * carries the capped `response.max_output_tokens`, and a `session.update` naming another model closes with 4400.
 * What crossed the wire is asserted: frames byte for byte both ways, the operator's key upstream and no client key or
 * Tollgate header, the usage charged equal to the usage sent.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { GoogleGenAI } from '@google/genai';
import { CLIENT_KEY, serverKey, assert } from './harness.mjs';

const require = createRequire(import.meta.url);
const { TestGateway } = require('../../dist/test/support/gateway.js');
const { FakeRealtimeUpstream, eventually } = require('../../dist/test/support/fake-realtime.js');

/** The upstream handshake carries the operator's key where documented, and no Tollgate header or client key. */
function assertHandshake(handshake, [header, value]) {
  assert.equal(handshake.headers[header], value, `credential header ${header}`);
  for (let index = 0; index < handshake.rawHeaders.length; index += 2) {
    assert.ok(!handshake.rawHeaders[index].toLowerCase().startsWith('tollgate-'), `a Tollgate header reached the provider: ${handshake.rawHeaders[index]}`);
    assert.ok(!handshake.rawHeaders[index + 1].includes(CLIENT_KEY), `the client's key reached the provider in ${handshake.rawHeaders[index]}`);
  }
  assert.ok(!handshake.url.includes(CLIENT_KEY), "the client's key reached the provider in the URL");
}

describe('official SDKs: realtime sessions', function () {
  this.timeout(60_000);
  let fake;
  let gateway;
  let device;
  let front;
  let certificate;
  let directory;

  before(async function () {
    fake = await FakeRealtimeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: fake.url, gemini: fake.url } });
    device = await gateway.provision({ openai: serverKey('openai'), gemini: serverKey('gemini') }, { deviceDailyTokens: 1_000_000 });
    // A TLS front for the OpenAI SDK, which dials wss: only.
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-rt-tls-'));
    const key = path.join(directory, 'key.pem');
    const cert = path.join(directory, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    certificate = readFileSync(cert);
    const target = new URL(gateway.url);
    front = tls.createServer({ key: readFileSync(key), cert: certificate }, (socket) => {
      const inner = net.connect(Number(target.port), target.hostname);
      socket.pipe(inner).pipe(socket);
      socket.on('error', () => inner.destroy());
      inner.on('error', () => socket.destroy());
    });
    await new Promise((resolve) => front.listen(0, '127.0.0.1', resolve));
  });

  after(async function () {
    front?.close();
    await gateway?.close();
    await fake?.close();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it('openai OpenAIRealtimeWS: events byte for byte both ways, operator key upstream, response.done usage charged', async function () {
    const since = Date.now();
    const usage = { total_tokens: 345, input_tokens: 300, output_tokens: 45, input_token_details: { cached_tokens: 64, text_tokens: 100, audio_tokens: 200 }, output_token_details: { text_tokens: 5, audio_tokens: 40 } };
    const created = JSON.stringify({ type: 'session.created', event_id: 'event_1', session: { id: 'sess_1', object: 'realtime.session', type: 'realtime', model: 'gpt-realtime' } });
    const done = JSON.stringify({ type: 'response.done', event_id: 'event_2', response: { id: 'resp_1', object: 'realtime.response', status: 'completed', output: [], usage } });
    fake.onSession = (session) => {
      session.socket.send(created);
      session.socket.on('message', (data) => {
        if (JSON.parse(data.toString()).type === 'response.create') session.socket.send(done);
      });
    };
    const opened = fake.nextSession();
    const client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `https://127.0.0.1:${front.address().port}/v1/proxy/openai/v1`, defaultHeaders: device.headers });
    const realtime = new OpenAIRealtimeWS({ model: 'gpt-realtime', options: { ca: certificate } }, client);
    const received = [];
    realtime.socket.on('message', (data) => received.push(Buffer.from(data).toString()));
    const responseDone = new Promise((resolve, reject) => {
      realtime.on('response.done', resolve);
      realtime.on('error', reject);
    });
    await new Promise((resolve, reject) => {
      realtime.socket.once('open', resolve);
      realtime.socket.once('error', reject);
    });
    realtime.send({ type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.' } });
    realtime.send({ type: 'response.create' });
    const event = await responseDone;
    assert.deepEqual(event.response.usage, usage);
    const upstream = await opened;
    assert.equal(upstream.handshake.url, '/v1/realtime?model=gpt-realtime');
    assertHandshake(upstream.handshake, ['authorization', `Bearer ${serverKey('openai')}`]);
    // Client → provider byte for byte (what the SDK wrote is what the fake read), provider → client likewise.
    await eventually(() => upstream.messages.length === 2);
    assert.deepEqual(upstream.messages.map((message) => [message.binary, message.data.toString()]), [
      [false, JSON.stringify({ type: 'session.update', session: { type: 'realtime', instructions: 'Be brief.' } })],
      [false, JSON.stringify({ type: 'response.create' })],
    ]);
    assert.deepEqual(received, [created, done]);
    realtime.close({ code: 1000, reason: 'bye' });
    const recorded = await gateway.recordedEvent(device.appId, since, (candidate) => candidate.status === 101 && candidate.provider === 'openai');
    assert.equal(recorded.inputTokens, 300);
    assert.equal(recorded.outputTokens, 45);
    assert.equal(recorded.cachedTokens, 64);
    assert.equal(recorded.session.framesIn, 2);
    assert.equal(recorded.session.framesOut, 2);
  });

  it('openai OpenAIRealtimeWS under a model policy: an alias is dialled as its model, output clamped, another model closed with 4400', async function () {
    const policed = await gateway.provision({ openai: serverKey('openai') }, { modelPolicy: { openai: { allow: ['gpt-realtime'], aliases: { voice: 'gpt-realtime' }, maxOutputTokens: 500 } } });
    fake.onSession = () => undefined;
    const opened = fake.nextSession();
    const client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `https://127.0.0.1:${front.address().port}/v1/proxy/openai/v1`, defaultHeaders: policed.headers });
    const realtime = new OpenAIRealtimeWS({ model: 'voice', options: { ca: certificate } }, client);
    realtime.on('error', () => undefined);
    await new Promise((resolve, reject) => {
      realtime.socket.once('open', resolve);
      realtime.socket.once('error', reject);
    });
    const upstream = await opened;
    assert.equal(upstream.handshake.url, '/v1/realtime?model=gpt-realtime');
    realtime.send({ type: 'response.create' });
    await eventually(() => upstream.messages.length === 1);
    assert.deepEqual(JSON.parse(upstream.messages[0].data.toString()), { type: 'response.create', response: { max_output_tokens: 500 } });
    const closed = new Promise((resolve) => realtime.socket.once('close', (code, reason) => resolve([code, reason.toString()])));
    realtime.send({ type: 'session.update', session: { type: 'realtime', model: 'gpt-4o-realtime-preview' } });
    assert.deepEqual(await closed, [4400, 'model_not_allowed']);
    assert.equal(upstream.messages.length, 1, 'the refused session.update never reached the provider');
  });

  it('@google/genai live.connect: setup, content and usageMetadata through the gateway with the operator key', async function () {
    const since = Date.now();
    const answer = JSON.stringify({ serverContent: { modelTurn: { parts: [{ text: 'Hi there' }] }, turnComplete: true }, usageMetadata: { promptTokenCount: 17, responseTokenCount: 4, totalTokenCount: 21 } });
    fake.onSession = (session) => {
      session.socket.on('message', (data) => {
        const message = JSON.parse(data.toString());
        if (message.setup) session.socket.send(JSON.stringify({ setupComplete: {} }));
        if (message.clientContent) session.socket.send(answer);
      });
    };
    const opened = fake.nextSession();
    const ai = new GoogleGenAI({ apiKey: CLIENT_KEY, httpOptions: { baseUrl: `${gateway.url}/v1/proxy/gemini/v1-root`, apiVersion: 'v1beta', headers: device.headers } });
    const messages = [];
    let turnDone;
    const turn = new Promise((resolve) => (turnDone = resolve));
    const session = await ai.live.connect({
      model: 'gemini-live-2.5-flash-preview',
      config: { responseModalities: ['TEXT'] },
      callbacks: {
        onmessage: (message) => {
          messages.push(message);
          if (message.usageMetadata) turnDone();
        },
        onerror: () => undefined,
        onclose: () => undefined,
      },
    });
    session.sendClientContent({ turns: 'Hello', turnComplete: true });
    await turn;
    const upstream = await opened;
    assert.equal(new URL(upstream.handshake.url, 'ws://x').pathname, '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent');
    assertHandshake(upstream.handshake, ['x-goog-api-key', serverKey('gemini')]);
    assert.equal(new URL(upstream.handshake.url, 'ws://x').searchParams.get('key'), null, 'the SDK\'s ?key= does not go upstream');
    assert.equal(messages.at(-1).usageMetadata.promptTokenCount, 17);
    // What the SDK sent arrived unchanged: its setup first, then the content.
    assert.ok(JSON.parse(upstream.messages[0].data.toString()).setup);
    assert.ok(JSON.parse(upstream.messages[1].data.toString()).clientContent);
    session.close();
    const recorded = await gateway.recordedEvent(device.appId, since, (candidate) => candidate.status === 101 && candidate.provider === 'gemini');
    assert.equal(recorded.inputTokens, 17);
    assert.equal(recorded.outputTokens, 4);
  });
});
