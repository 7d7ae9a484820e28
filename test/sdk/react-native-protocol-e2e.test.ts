/**
 * React Native SDK through a real gateway: the official `openai` npm package streaming through the SDK's `fetch`
 * (https://github.com/openai/openai-node, `fetch` client option; chat streaming format:
 * https://platform.openai.com/docs/api-reference/chat-streaming), a realtime session against a fake provider socket
 * (protocol.md "Realtime sessions"; OpenAI's realtime WebSocket: https://platform.openai.com/docs/guides/realtime-websocket),
 * `me()` (`GET /v1/me`), and the user-token callback against a fake sign-in provider on loopback publishing its JSON Web
 * Key Set (RFC 7517) and signing RS256 ID tokens (RFC 7519), as Firebase or Auth0 do
 * (https://firebase.google.com/docs/auth/admin/verify-id-tokens).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { WebSocket, WebSocketServer } from 'ws';
import { FakeUpstream, sseEvents } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { FakeSignInProvider, signingKey, type SigningKey } from '../support/sign-in-provider';
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
  let signIn: FakeSignInProvider;
  let key: SigningKey;

  before(async () => {
    signIn = await FakeSignInProvider.start();
    key = await signingKey('k1');
    signIn.publish([key]);
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
    await signIn?.close();
  });

  async function clientForNewApp(settings: Record<string, unknown> = {}): Promise<{ client: TollgateClient; appId: string; deviceId: string }> {
    const { appId, appToken } = await gateway.createApp(settings);
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

  it('realtime: the gateway closing a session 4429 (its longest session reached) is rateLimited with the reason', async () => {
    const { client } = await clientForNewApp({ maxSessionSeconds: 1 });
    const session = await client.realtime({ endpoint: 'openai/v1/realtime?model=gpt-realtime', WebSocket: WebSocket as unknown as WebSocketConstructor });
    const messages = session[Symbol.asyncIterator]();
    expect(JSON.parse((((await messages.next()).value) as { text: string }).text).type).to.equal('session.created');
    // The gateway's sweep (once a second) closes the session once it is older than maxSessionSeconds.
    const closed = await rejection(messages.next());
    expect([closed.kind, closed.reason, closed.closeCode, closed.mayReconnect]).to.deep.equal(['rateLimited', 'session_too_long', 4429, false]);
    expect(client.deviceTokens.attestationCount, 'no re-key').to.equal(1);
  });

  it("me() returns the gateway's figures for this device", async () => {
    const { client, deviceId } = await clientForNewApp({ deviceDailyQuota: 5, deviceDailyTokens: 1000 });
    await client.request({ endpoint: 'openai/v1/models', method: 'GET' });
    const me = await client.me();
    expect(me.deviceId).to.equal(deviceId);
    expect([me.signedIn, me.userId]).to.deep.equal([false, null]);
    const requests = me.limits.find((limit) => limit.name === 'device-requests-day');
    expect(requests, JSON.stringify(me.limits)).to.deep.include({ scope: 'device', unit: 'requests', limit: 5, remaining: 4, window: 'day' });
    expect(requests!.resetsAtMs).to.be.within(Date.now(), Date.now() + 86_400_000 + 5_000);
    const tokens = me.limits.find((limit) => limit.name === 'device-tokens-day');
    expect(tokens, JSON.stringify(me.limits)).to.deep.include({ scope: 'device', unit: 'tokens', limit: 1000, window: 'day' });
    // me() itself charged nothing.
    const again = await client.me();
    expect(again.limits.find((limit) => limit.name === 'device-requests-day')!.remaining).to.equal(4);
  });

  it('the user-token callback is called again exactly once on user_token_expired; me() shows the signed-in user', async () => {
    const { client } = await clientForNewApp({ userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test' }, userTokenMode: 'required' });
    const expired = await signIn.token(key, 'user-1', {}, { expiresAt: Math.floor(Date.now() / 1000) - 600 });
    const fresh = await signIn.token(key, 'user-1');
    const calls: boolean[] = [];
    client.setUserTokenProvider(({ forceRefresh }) => {
      calls.push(forceRefresh);
      return forceRefresh ? fresh : expired;
    });
    const before = upstream.requests.length;
    await client.request({ endpoint: 'openai/v1/models', method: 'GET' });
    expect(calls, 'asked once, then once more forced').to.deep.equal([false, true]);
    expect(upstream.requests.length - before, 'one request reached the provider').to.equal(1);
    const me = await client.me();
    expect(me.signedIn).to.equal(true);
    expect(me.userId).to.be.a('string').and.to.include('user-1');
    expect(calls, 'the fresh token is reused while valid').to.have.length(2);

    // A callback that only ever has an expired token: exactly one more call, then the error surfaces.
    const { client: stale } = await clientForNewApp({ userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl(), audience: 'tollgate-test' }, userTokenMode: 'required' });
    const staleCalls: boolean[] = [];
    stale.setUserTokenProvider(({ forceRefresh }) => {
      staleCalls.push(forceRefresh);
      return expired;
    });
    const failure = await rejection(stale.request({ endpoint: 'openai/v1/models', method: 'GET' }));
    expect([failure.kind, failure.reason]).to.deep.equal(['unauthorized', 'user_token_expired']);
    expect(staleCalls).to.deep.equal([false, true]);
    expect(stale.deviceTokens.attestationCount, 'the device token is untouched').to.equal(1);
  });
});
