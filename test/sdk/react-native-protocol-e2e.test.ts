/**
 * React Native SDK through a real gateway: the official `openai` npm package streaming through the SDK's `fetch`
 * (https://github.com/openai/openai-node, `fetch` client option; chat streaming format:
 * https://platform.openai.com/docs/api-reference/chat-streaming), a realtime session against a fake provider socket
 * (protocol.md "Realtime sessions"; OpenAI's realtime WebSocket: https://platform.openai.com/docs/guides/realtime-websocket),
 * and `me()` (`GET /v1/me`).
 *
 * The realtime and `/v1/me` cases need the gateway's realtime relay and its `/v1/me` route; they are written against
 * the protocol as specified.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { WebSocket, WebSocketServer } from 'ws';
import { FakeUpstream, sseEvents } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { createTollgateClient, TollgateError, type TollgateClient, type WebSocketConstructor } from '../../sdk/react-native/src';

const SECRET = 'sk-rn-protocol-0123456789abcdef';
const providerSdks = createRequire(path.resolve(__dirname, '..', '..', '..', 'test', 'provider-sdks', 'package.json'));

interface ChatChunk {
  choices: Array<{ delta: { content?: string } }>;
}
interface OpenAIClient {
  chat: { completions: { create(body: Record<string, unknown>): Promise<AsyncIterable<ChatChunk>> } };
}
type OpenAIConstructor = new (options: Record<string, unknown>) => OpenAIClient;

async function rejection(promise: Promise<unknown>): Promise<TollgateError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(TollgateError);
    return error as TollgateError;
  }
  throw new Error('expected a rejection');
}

describe('react-native SDK: provider SDKs, realtime and /v1/me through a real gateway', () => {
  let upstream: FakeUpstream;
  let provider: { url: string; frames: string[]; headers: http.IncomingHttpHeaders[]; close(): Promise<void> };
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    // The provider's realtime socket on the same fake host as its HTTP API (as api.openai.com serves both): OpenAI's
    // event shapes, echoing each client event as a server event.
    const frames: string[] = [];
    const headers: http.IncomingHttpHeaders[] = [];
    const server = (upstream as unknown as { server: http.Server }).server;
    const wss = new WebSocketServer({ server });
    wss.on('connection', (socket, request) => {
      headers.push(request.headers);
      socket.send(JSON.stringify({ type: 'session.created', session: { id: 'sess_1' } }));
      socket.on('message', (data, isBinary) => {
        frames.push(isBinary ? `binary:${(data as Buffer).toString('hex')}` : data.toString());
        if (isBinary) socket.send(data as Buffer, { binary: true });
        else socket.send(JSON.stringify({ type: 'response.output_text.delta', delta: `echo ${data.toString()}` }));
      });
    });
    provider = {
      url: upstream.url,
      frames,
      headers,
      close: async () => {
        for (const client of wss.clients) client.terminate();
        wss.close();
      },
    };
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    await gateway?.close();
    await provider?.close();
    await upstream?.close();
  });

  async function clientForNewApp(): Promise<{ client: TollgateClient; appId: string; deviceId: string }> {
    const { appId, appToken } = await gateway.createApp();
    await gateway.setSecret(appId, 'openai', SECRET);
    const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(appId);
    const deviceId = `sim-${randomBytes(4).toString('hex')}`;
    const client = createTollgateClient({
      appToken,
      gatewayUrl: gateway.url,
      development: { token: developmentToken, deviceId },
      isDevelopmentBuild: true,
      nativeModule: null,
      warmUp: false,
    });
    return { client, appId, deviceId };
  }

  it('the openai package streams a chat completion through the Tollgate fetch, token by token, with the key injected by the gateway', async () => {
    const chunks = sseEvents(['Hel', 'lo', '!'].map((content) => ({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content } }] })));
    // The provider holds the rest of the answer until the app has seen the first token: a client that buffers the
    // response would wait for the end that never comes, and the test would time out.
    let firstSeen: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => (firstSeen = resolve));
    upstream.on(/chat\/completions/, async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.flushHeaders();
      response.write(chunks[0]);
      await seen;
      for (const chunk of chunks.slice(1)) response.write(chunk);
      response.end();
    });
    const { client } = await clientForNewApp();
    const openaiModule = providerSdks('openai') as { default?: OpenAIConstructor; OpenAI?: OpenAIConstructor };
    const OpenAI = (openaiModule.OpenAI ?? openaiModule.default)!;
    const openai = new OpenAI({ apiKey: 'unused-the-gateway-holds-the-key', baseURL: client.providerBaseUrl('openai/v1'), fetch: client.fetch, maxRetries: 0 });
    const stream = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], stream: true });
    const tokens: string[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta.content;
      if (delta) tokens.push(delta);
      firstSeen();
    }
    expect(tokens).to.deep.equal(['Hel', 'lo', '!']);
    const request = upstream.last();
    expect(request.url).to.equal('/v1/chat/completions');
    expect(request.headers.authorization).to.equal(`Bearer ${SECRET}`);
    expect(Object.keys(request.headers).filter((name) => name.startsWith('tollgate-'))).to.deep.equal([]);
    expect(JSON.parse(request.body.toString()).stream).to.equal(true);
  });

  it('the openai package gets the gateway refusal as an HTTP error carrying Tollgate-Error', async () => {
    const { client, appId, deviceId } = await clientForNewApp();
    await client.request({ endpoint: 'openai/v1/models', method: 'GET' });
    await gateway.gateway.management.revokeDevice(appId, deviceId);
    const openaiModule = providerSdks('openai') as { default?: OpenAIConstructor; OpenAI?: OpenAIConstructor };
    const OpenAI = (openaiModule.OpenAI ?? openaiModule.default)!;
    const openai = new OpenAI({ apiKey: 'unused', baseURL: client.providerBaseUrl('openai/v1'), fetch: client.fetch, maxRetries: 0 });
    const failure = (await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }).then(
      () => null,
      (error: unknown) => error,
    )) as { status?: number; headers?: Headers | Record<string, string> } | null;
    expect(failure?.status).to.equal(403);
    const headers = failure!.headers!;
    const type = typeof (headers as Headers).get === 'function' ? (headers as Headers).get('tollgate-error') : (headers as Record<string, string>)['tollgate-error'];
    expect(type).to.equal('attestationFailed');
  });

  // Needs the gateway's realtime relay (protocol.md, "Realtime sessions").
  it('realtime: frames both ways through the gateway, a refused upgrade as attestationFailed, a revocation closing 4403 without a re-key', async () => {
    const { client, appId, deviceId } = await clientForNewApp();
    const session = await client.realtime({ endpoint: 'openai/v1/realtime?model=gpt-realtime', WebSocket: WebSocket as unknown as WebSocketConstructor });
    const messages = session[Symbol.asyncIterator]();
    expect(JSON.parse((((await messages.next()).value) as { text: string }).text).type).to.equal('session.created');
    session.sendJson({ type: 'response.create' });
    expect(JSON.parse((((await messages.next()).value) as { text: string }).text).delta).to.equal('echo {"type":"response.create"}');
    session.send(new Uint8Array([7, 8, 9]));
    const binary = (await messages.next()).value as { type: string; bytes: Uint8Array };
    expect([binary.type, [...binary.bytes]]).to.deep.equal(['binary', [7, 8, 9]]);
    expect(provider.frames).to.deep.equal(['{"type":"response.create"}', 'binary:070809']);
    const upstreamHeaders = provider.headers[provider.headers.length - 1]!;
    expect(upstreamHeaders.authorization).to.equal(`Bearer ${SECRET}`);
    expect(Object.keys(upstreamHeaders).filter((name) => name.startsWith('tollgate-'))).to.deep.equal([]);

    await gateway.gateway.management.revokeDevice(appId, deviceId);
    const closed = await rejection(messages.next());
    expect([closed.kind, closed.reason, closed.closeCode]).to.deep.equal(['attestationFailed', 'device_revoked', 4403]);
    expect(client.deviceTokens.attestationCount, 'no re-key').to.equal(1);

    // A device revoked while its token is still cached: the gateway refuses the upgrade itself (HTTP 403).
    const other = await clientForNewApp();
    await other.client.warmUp();
    await gateway.gateway.management.revokeDevice(other.appId, other.deviceId);
    const sessionsBefore = provider.headers.length;
    const refused = await rejection(other.client.realtime({ endpoint: 'openai/v1/realtime', WebSocket: WebSocket as unknown as WebSocketConstructor }));
    expect([refused.kind, refused.status, refused.reason]).to.deep.equal(['attestationFailed', 403, 'device_revoked']);
    expect(provider.headers.length, 'nothing reached the provider').to.equal(sessionsBefore);
    expect(other.client.deviceTokens.attestationCount, 'no re-key after the refusal').to.equal(1);
  });

  // Needs the gateway's GET /v1/me.
  it("me() returns the gateway's figures for this device", async () => {
    const { client } = await clientForNewApp();
    const me = await client.me();
    expect(me.deviceId).to.be.a('string');
    expect(me.signedIn).to.equal(false);
    expect(me.limits).to.be.an('array');
    for (const limit of me.limits) expect(limit.remaining).to.be.at.most(limit.limit);
  });
});
