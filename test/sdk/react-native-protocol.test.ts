/**
 * React Native SDK: the protocol parts added with realtime sessions and signed-in users, and the platform defects of
 * the SDK's transport, each against fakes that record what crossed the wire:
 * - realtime(endpoint) against a loopback WebSocket server (the `ws` package, RFC 6455): headers on the upgrade, frames
 *   both ways, a refused upgrade, 44xx/45xx closes;
 * - expiry from `expiresIn` and `Tollgate-Request-Time` from the gateway's `Date` (RFC 9110 section 6.6.1) on a phone
 *   whose clock runs an hour ahead;
 * - FormData bodies as multipart/form-data (RFC 7578) with the digest over the bytes sent;
 * - streaming through the native module's transport by default, never a silent fallback to a buffered body, and no
 *   redirect followed with the Tollgate tokens.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  createTollgateClient,
  Tollgate,
  TollgateError,
  type NativeHttpModule,
  type StreamEvent,
  type TollgateClient,
  type TollgateNativeModule,
  type WebSocketConstructor,
} from '../../sdk/react-native/src';

const APP_TOKEN = 'at_0123456789abcdefghijABCDEFGHIJkl';

function jws(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'EdDSA' })}.${part(claims)}.c2ln`;
}

async function rejection(promise: Promise<unknown>): Promise<TollgateError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(TollgateError);
    return error as TollgateError;
  }
  throw new Error('expected a rejection');
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

/** A loopback WebSocket "gateway": checks the upgrade with `verify`, then runs `session` on each socket. */
async function loopbackGateway(
  verify: (request: http.IncomingMessage) => { status: number; headers?: Record<string, string>; body?: string } | null,
  session: (socket: WebSocket, request: http.IncomingMessage) => void,
): Promise<{ url: string; upgrades: http.IncomingMessage[]; close(): Promise<void> }> {
  const upgrades: http.IncomingMessage[] = [];
  const server = http.createServer((_request, response) => response.writeHead(426).end());
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    upgrades.push(request);
    const refusal = verify(request);
    if (refusal) {
      const body = refusal.body ?? '';
      const lines = [`HTTP/1.1 ${refusal.status} Refused`, `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close'];
      for (const [name, value] of Object.entries(refusal.headers ?? {})) lines.push(`${name}: ${value}`);
      socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => session(ws, request));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    upgrades,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A development-attested client whose attestation goes to a fake fetch (counted); realtime uses the `ws` package. */
function realtimeClient(gatewayUrl: string): { client: TollgateClient; attestations: () => number } {
  let attestations = 0;
  const client = createTollgateClient({
    appToken: APP_TOKEN,
    gatewayUrl,
    development: { token: 'dt_x', deviceId: 'sim-1' },
    isDevelopmentBuild: true,
    nativeModule: null,
    warmUp: false,
    fetch: async (url: string) => {
      if (!url.includes('/v1/attest/')) throw new Error(`unexpected ${url}`);
      attestations += 1;
      return json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600, n: attestations }), expiresIn: 3600 });
    },
  });
  return { client, attestations: () => attestations };
}

const WS = WebSocket as unknown as WebSocketConstructor;

describe('react-native SDK: realtime sessions (loopback WebSocket server)', () => {
  it('sends the Tollgate headers on the upgrade and carries text and binary frames both ways, in order', async () => {
    const gateway = await loopbackGateway(
      () => null,
      (socket) => {
        socket.on('message', (data, isBinary) => {
          if (isBinary) socket.send(Buffer.concat([Buffer.from([0xff]), data as Buffer]), { binary: true });
          else socket.send(`echo:${data.toString()}`);
        });
        socket.send('{"type":"session.created"}');
      },
    );
    try {
      const { client } = realtimeClient(gateway.url);
      client.setUserTokenProvider(() => jws({ sub: 'u1', exp: Math.floor(Date.now() / 1000) + 3600 }));
      const session = await client.realtime({ endpoint: 'openai/v1/realtime?model=gpt-realtime', WebSocket: WS });
      const upgrade = gateway.upgrades[0]!;
      expect(upgrade.url).to.equal('/v1/proxy/openai/v1/realtime?model=gpt-realtime');
      expect(upgrade.headers['tollgate-app-token']).to.equal(APP_TOKEN);
      expect(upgrade.headers['tollgate-device-token']).to.match(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(upgrade.headers['tollgate-user-token']).to.match(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(upgrade.headers['tollgate-sdk']).to.equal('react-native/1.2.0');
      expect(Number(upgrade.headers['tollgate-request-time'])).to.be.closeTo(Date.now(), 60_000);
      expect(upgrade.headers['sec-websocket-protocol'], 'no subprotocol in headers mode').to.equal(undefined);
      const messages = session[Symbol.asyncIterator]();
      expect((await messages.next()).value).to.deep.equal({ type: 'text', text: '{"type":"session.created"}' });
      session.send('hello');
      session.send(new Uint8Array([1, 2, 3]));
      expect((await messages.next()).value).to.deep.equal({ type: 'text', text: 'echo:hello' });
      const binary = (await messages.next()).value as { type: string; bytes: Uint8Array };
      expect([binary.type, [...binary.bytes]]).to.deep.equal(['binary', [0xff, 1, 2, 3]]);
      session.close();
      expect(await messages.next()).to.deep.equal({ done: true, value: undefined });
      expect((await session.closed).code).to.equal(1000);
    } finally {
      await gateway.close();
    }
  });

  it('maps a refused upgrade to the gateway error (attestationFailed with its reason); nothing opens', async () => {
    const refusal = { error: { type: 'attestationFailed', reason: 'attestation_rejected', message: 'No.', requestId: 'req_9' } };
    const gateway = await loopbackGateway(
      () => ({ status: 403, headers: { 'Tollgate-Error': 'attestationFailed', 'Content-Type': 'application/json' }, body: JSON.stringify(refusal) }),
      () => {
        throw new Error('no session may open');
      },
    );
    try {
      const { client } = realtimeClient(gateway.url);
      const error = await rejection(client.realtime({ endpoint: 'openai/v1/realtime', WebSocket: WS }));
      expect([error.kind, error.reason, error.status, error.requestId]).to.deep.equal(['attestationFailed', 'attestation_rejected', 403, 'req_9']);
    } finally {
      await gateway.close();
    }
  });

  it('fails the message stream with rateLimited and the reason on a 4429 close', async () => {
    const gateway = await loopbackGateway(
      () => null,
      (socket) => {
        socket.send('one');
        socket.close(4429, 'token_budget');
      },
    );
    try {
      const { client } = realtimeClient(gateway.url);
      const session = await client.realtime({ endpoint: 'openai/v1/realtime', WebSocket: WS });
      const received: string[] = [];
      const error = await rejection(
        (async () => {
          for await (const message of session) if (message.type === 'text') received.push(message.text);
        })(),
      );
      expect(received).to.deep.equal(['one']);
      expect([error.kind, error.reason, error.closeCode, error.mayReconnect]).to.deep.equal(['rateLimited', 'token_budget', 4429, false]);
    } finally {
      await gateway.close();
    }
  });

  it('on a 4403 close neither attests a new key nor refreshes; device_revoked stops later calls', async () => {
    const gateway = await loopbackGateway(
      () => null,
      (socket, request) => socket.close(4403, new URL(request.url!, 'http://x').searchParams.get('reason') ?? ''),
    );
    try {
      const { client, attestations } = realtimeClient(gateway.url);
      const blocked = await client.realtime({ endpoint: 'openai/v1/realtime?reason=user_blocked', WebSocket: WS });
      const first = await rejection(blocked.next());
      expect([first.kind, first.reason, first.closeCode]).to.deep.equal(['attestationFailed', 'user_blocked', 4403]);
      expect(attestations(), 'one attestation, no re-key').to.equal(1);
      expect(client.deviceTokens.isStopped).to.equal(false);
      const revoked = await client.realtime({ endpoint: 'openai/v1/realtime?reason=device_revoked', WebSocket: WS });
      const second = await rejection(revoked.next());
      expect([second.kind, second.reason]).to.deep.equal(['attestationFailed', 'device_revoked']);
      expect(attestations(), 'still no new attestation').to.equal(1);
      expect(client.deviceTokens.isStopped).to.equal(true);
      const later = await rejection(client.realtime({ endpoint: 'openai/v1/realtime', WebSocket: WS }));
      expect(later.reason).to.equal('device_revoked');
      expect(attestations()).to.equal(1);
      expect(gateway.upgrades.length, 'nothing sent after the revocation').to.equal(2);
    } finally {
      await gateway.close();
    }
  });

  it('tells the app it may reconnect on 4503 draining', async () => {
    const gateway = await loopbackGateway(
      () => null,
      (socket) => socket.close(4503, 'draining'),
    );
    try {
      const { client } = realtimeClient(gateway.url);
      const session = await client.realtime({ endpoint: 'openai/v1/realtime', WebSocket: WS });
      const error = await rejection(session.next());
      expect([error.kind, error.reason, error.mayReconnect]).to.deep.equal(['networkError', 'draining', true]);
    } finally {
      await gateway.close();
    }
  });

  it('sends the tokens as subprotocols in subprotocols mode and fails instead of buffering without bound', async () => {
    const gateway = await loopbackGateway(
      () => null,
      (socket) => {
        for (let index = 0; index < 8; index += 1) socket.send(`m${index}`);
      },
    );
    try {
      const { client } = realtimeClient(gateway.url);
      const session = await client.realtime({ endpoint: 'openai/v1/realtime', WebSocket: WS, mode: 'subprotocols', protocols: ['realtime'], maxBufferedMessages: 3 });
      const offered = String(gateway.upgrades[0]!.headers['sec-websocket-protocol']).split(/,\s*/);
      expect(offered[0]).to.equal('tollgate.v1');
      expect(offered[1]).to.equal(`tollgate-app.${APP_TOKEN}`);
      expect(offered[2]).to.match(/^tollgate-device\./);
      expect(offered.slice(3)).to.deep.equal(['realtime']);
      expect(gateway.upgrades[0]!.headers['tollgate-app-token']).to.equal(undefined);
      await session.closed;
      const received: string[] = [];
      const error = await rejection(
        (async () => {
          for await (const message of session) if (message.type === 'text') received.push(message.text);
        })(),
      );
      expect(received).to.deep.equal(['m0', 'm1', 'm2']);
      expect(error.reason).to.equal('buffer_full');
    } finally {
      await gateway.close();
    }
  });
});

describe('react-native SDK: clocks, bodies and transport', () => {
  it('on a phone whose clock runs an hour ahead: expiry from expiresIn (one attestation) and request time from the gateway Date', async () => {
    const ahead = 3_600_000;
    const sent: Array<Record<string, string>> = [];
    let attestations = 0;
    const client = createTollgateClient({
      appToken: APP_TOKEN,
      gatewayUrl: 'https://gateway.example.com',
      development: { token: 'dt_x', deviceId: 'sim-1' },
      isDevelopmentBuild: true,
      nativeModule: null,
      warmUp: false,
      clock: () => Date.now() + ahead,
      fetch: async (url: string, init: { headers: Record<string, string> }) => {
        const date = new Date().toUTCString();
        if (url.includes('/v1/attest/')) {
          attestations += 1;
          const exp = Math.floor(Date.now() / 1000) + 600;
          return json(200, { deviceToken: jws({ exp }), expiresAt: new Date(exp * 1000).toISOString(), expiresIn: 600 }, { date });
        }
        sent.push(init.headers);
        return json(200, {}, { date });
      },
    });
    await client.request({ endpoint: 'openai/v1/models', method: 'GET' });
    await client.request({ endpoint: 'openai/v1/models', method: 'GET' });
    expect(attestations, 'the token is not taken for expired').to.equal(1);
    for (const headers of sent) expect(Number(headers['Tollgate-Request-Time'])).to.be.closeTo(Date.now(), 5_000);
  });

  it('sends a FormData body as multipart/form-data, files included, with the digest over those bytes', async () => {
    let body: Uint8Array | string | undefined;
    let headers: Record<string, string> = {};
    const client = createTollgateClient({
      appToken: APP_TOKEN,
      gatewayUrl: 'https://gateway.example.com',
      development: { token: 'dt_x', deviceId: 'sim-1' },
      isDevelopmentBuild: true,
      nativeModule: null,
      warmUp: false,
      fetch: async (url: string, init: { headers: Record<string, string>; body?: Uint8Array | string }) => {
        if (url.includes('/v1/attest/')) return json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600 }), expiresIn: 3600 });
        body = init.body;
        headers = init.headers;
        return json(200, { text: 'hi' });
      },
    });
    const form = new FormData();
    form.append('model', 'whisper-1');
    form.append('file', new Blob([new Uint8Array([0, 1, 2, 0xff])], { type: 'audio/mp4' }), 'clip.m4a');
    await client.request({ endpoint: 'openai/v1/audio/transcriptions', body: form });
    const contentType = headers['Content-Type']!;
    expect(contentType).to.match(/^multipart\/form-data; boundary=/);
    // Parsed back by the platform's own multipart reader (undici's Response.formData).
    const parsed = await new Response(body as Uint8Array, { headers: { 'content-type': contentType } }).formData();
    expect(parsed.get('model')).to.equal('whisper-1');
    const file = parsed.get('file') as File;
    expect([file.name, file.type, [...new Uint8Array(await file.arrayBuffer())]]).to.deep.equal(['clip.m4a', 'audio/mp4', [0, 1, 2, 0xff]]);
  });

  it('never hands a stream over whole behind the app’s back: a fetch that cannot stream is refused unless bufferedStreams', async () => {
    const wholeBodyFetch = async (url: string) => {
      const real = url.includes('/v1/attest/')
        ? json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600 }) })
        : new Response('data: a\n\n', { headers: { 'content-type': 'text/event-stream' } });
      return { status: real.status, headers: real.headers, body: null, arrayBuffer: () => real.arrayBuffer(), text: () => real.text() };
    };
    const options = { appToken: APP_TOKEN, gatewayUrl: 'https://gateway.example.com', development: { token: 'dt_x', deviceId: 'sim-1' }, isDevelopmentBuild: true, nativeModule: null, warmUp: false, fetch: wholeBodyFetch };
    const refused = await rejection(createTollgateClient(options).stream({ endpoint: 'openai/v1/chat/completions', body: {} }).forEach(() => undefined));
    expect([refused.kind, refused.reason]).to.deep.equal(['invalidRequest', 'streaming_unavailable']);
    const events: StreamEvent[] = [];
    await createTollgateClient({ ...options, bufferedStreams: true }).stream({ endpoint: 'openai/v1/chat/completions', body: {} }).forEach((event) => void events.push(event));
    expect(events.length).to.equal(1);
  });

  it("streams through the native module's transport by default, chunk by chunk, and never follows a redirect", async () => {
    const log: string[] = [];
    const chunks = ['data: {"n":1}\n\n', 'data: {"n":2}\n\n'];
    let reads = 0;
    const exp = Math.floor(Date.now() / 1000) + 3600;
    const http: NativeHttpModule = {
      async httpStart(request) {
        log.push(`start ${request.method} ${request.url}`);
        const headers: Record<string, string> = {};
        for (let index = 0; index < request.headerPairs.length; index += 2) headers[request.headerPairs[index]!] = request.headerPairs[index + 1]!;
        expect(headers['Tollgate-App-Token']).to.equal(APP_TOKEN);
        if (request.url.endsWith('/moved')) return { id: 'r2', status: 307, headerPairs: ['Location', 'https://elsewhere.example.net/steal', 'Content-Length', '0'] };
        return { id: 'r1', status: 200, headerPairs: ['Content-Type', 'text/event-stream'] };
      },
      async httpRead({ id }) {
        log.push(`read ${id}`);
        if (id === 'r2') return { chunkBase64: null };
        const chunk = chunks[reads++];
        return { chunkBase64: chunk === undefined ? null : Buffer.from(chunk).toString('base64') };
      },
      async httpCancel({ id }) {
        log.push(`cancel ${id}`);
        return null;
      },
    };
    const native: TollgateNativeModule & NativeHttpModule = {
      ...http,
      getConfiguration: async () => ({ gatewayUrl: 'https://gateway.example.com' }),
      configure: async () => null,
      deviceToken: async () => ({ deviceToken: jws({ exp }), expiresAtMs: exp * 1000, deviceId: 'native-device' }),
      reportError: async () => ({ action: 'none' }),
      assertion: async () => ({ assertion: null }),
      clear: async () => null,
    };
    // No fetch given: the SDK picks the native transport over the global fetch.
    const client = createTollgateClient({ appToken: APP_TOKEN, gatewayUrl: 'https://gateway.example.com', nativeModule: native, warmUp: false });
    const events: string[] = [];
    for await (const event of client.stream({ endpoint: 'openai/v1/chat/completions', body: { stream: true } })) {
      events.push((event as { data: string }).data);
      log.push(`event ${(event as { data: string }).data}`);
    }
    expect(events).to.deep.equal(['{"n":1}', '{"n":2}']);
    // Each event is delivered after the read that brought it, before the next read: token by token.
    expect(log).to.deep.equal([
      'start POST https://gateway.example.com/v1/proxy/openai/v1/chat/completions',
      'read r1',
      'event {"n":1}',
      'read r1',
      'event {"n":2}',
      'read r1',
    ]);
    const redirect = await rejection(client.request({ endpoint: 'openai/v1/moved', method: 'GET' }));
    expect([redirect.kind, redirect.status]).to.deep.equal(['providerError', 307]);
    expect(log.filter((line) => line.includes('elsewhere')), 'nothing sent to the redirect target').to.deep.equal([]);
  });
});

describe('react-native SDK: index.js under Metro', () => {
  afterEach(() => Tollgate.reset());

  it('lets index.js call initialize without top-level await: a call made meanwhile waits for it', async () => {
    let sent = 0;
    const initialized = Tollgate.initialize({
      appToken: APP_TOKEN,
      gatewayUrl: 'https://gateway.example.com',
      development: { token: 'dt_x', deviceId: 'sim-1' },
      isDevelopmentBuild: true,
      nativeModule: null,
      warmUp: false,
      fetch: async (url: string) => {
        if (url.includes('/v1/attest/')) return json(200, { deviceToken: jws({ exp: Math.floor(Date.now() / 1000) + 3600 }), expiresIn: 3600 });
        sent += 1;
        return json(200, { ok: true });
      },
    });
    // The first screen calls at once, before initialize settled.
    const reply = await Tollgate.request<{ ok: boolean }>({ endpoint: 'openai/v1/models', method: 'GET' });
    await initialized;
    expect(reply).to.deep.equal({ ok: true });
    expect(sent).to.equal(1);
  });

  it("shows an index.js without top-level await in the README (Metro does not support it)", () => {
    const readme = readFileSync(path.resolve(__dirname, '..', '..', '..', 'sdk', 'react-native', 'README.md'), 'utf8');
    const indexBlock = /## Initialize before the app renders[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(indexBlock).to.contain('Tollgate.initialize(');
    expect(indexBlock).to.not.match(/^\s*await /m);
  });
});
