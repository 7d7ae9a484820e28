/**
 * The React Native SDK end to end: a real gateway in-process, a fake provider, and the SDK attesting with development
 * attestation as it does on a simulator. Each case checks what reached the provider (the gateway's injected key, no
 * Tollgate header) and the error kind the app sees.
 *
 * The "native module" cases run the SDK over a scripted TollgateNative module that behaves as the iOS and Android
 * modules do (token kept in a Keychain that outlives the module, refreshed only when due, reportError by the shared
 * reason-action rule, no new key after device_revoked), attesting with a development token against the real gateway.
 * A counting front on loopback records every request that reaches the gateway, so attestation calls are counted where
 * they arrive.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeUpstream, respondChunks, respondJson, sseEvents, type RecordedRequest } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import {
  createTollgateClient,
  reasonAction,
  refreshDue,
  Tollgate,
  TollgateError,
  type StreamEvent,
  type TollgateClient,
  type TollgateNativeModule,
  type TollgateOptions,
} from '../../sdk/react-native/src';

/** What survives a cold start on a phone: the Keychain / Keystore entries of the native module. */
interface Keychain {
  stored: { deviceToken: string; expiresAtMs: number; receivedAtMs: number; deviceId: string } | null;
  /** Device keys created (App Attest generateKey / KeyPairGenerator): a new device at the gateway each time. */
  keysCreated: number;
}

/** A TollgateNative module as the native sides implement it, one instance per app launch. */
function scriptedNative(keychain: Keychain, launch: { gatewayUrl: string; deviceId: string }) {
  const calls: Array<[string, unknown]> = [];
  let settings: { appToken: string; gatewayUrl: string; developmentToken: string | null } | null = null;
  let revoked = false;
  const fail = (code: string, reason: string, message: string) => Object.assign(new Error(message), { code, userInfo: { reason } });
  async function attest(): Promise<void> {
    if (!settings?.developmentToken) throw fail('attestationFailed', 'no_attestation', 'no development token');
    // Without a stored token (first launch, or after clear()) the module creates and attests a new key.
    if (keychain.stored === null) keychain.keysCreated += 1;
    const received = Date.now();
    const response = await fetch(`${settings.gatewayUrl}/v1/attest/development`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Tollgate-App-Token': settings.appToken },
      body: JSON.stringify({ developmentToken: settings.developmentToken, deviceId: launch.deviceId }),
    });
    const body = (await response.json()) as { deviceToken?: string; expiresAt?: string; deviceId?: string; error?: { reason?: string } };
    if (response.status !== 200) {
      if (body.error?.reason === 'device_revoked') revoked = true;
      throw fail('attestationFailed', body.error?.reason ?? 'attestation_failed', 'refused');
    }
    keychain.stored = { deviceToken: body.deviceToken!, expiresAtMs: Date.parse(body.expiresAt!), receivedAtMs: received, deviceId: body.deviceId! };
  }
  const native: TollgateNativeModule = {
    async getConfiguration() {
      calls.push(['getConfiguration', null]);
      return { gatewayUrl: launch.gatewayUrl };
    },
    async configure(options) {
      calls.push(['configure', options]);
      settings = options;
      return null;
    },
    async deviceToken(options) {
      calls.push(['deviceToken', options]);
      if (revoked) throw fail('attestationFailed', 'device_revoked', 'This device has been revoked.');
      const stored = keychain.stored;
      if (options.forceRefresh || !stored || refreshDue(stored.receivedAtMs, stored.expiresAtMs, Date.now())) await attest();
      const { deviceToken, expiresAtMs, deviceId } = keychain.stored!;
      return { deviceToken, expiresAtMs, deviceId };
    },
    async reportError(options) {
      calls.push(['reportError', options]);
      const { action } = reasonAction('attestationFailed', options.reason);
      if (action === 'stop') revoked = true;
      return { action };
    },
    async assertion(options) {
      calls.push(['assertion', options]);
      return { assertion: null };
    },
    async clear() {
      calls.push(['clear', null]);
      keychain.stored = null;
      return null;
    },
  };
  return { native, calls };
}

/** A loopback front that forwards to the gateway (streaming, unbuffered) and records `METHOD /path` of each request. */
async function countingFront(target: string): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const { hostname, port } = new URL(target);
  const server = http.createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    const forward = http.request({ host: hostname, port, path: request.url, method: request.method, headers: request.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    forward.on('error', () => response.destroy());
    response.on('close', () => forward.destroy());
    request.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const SECRET = 'sk-rn-e2e-0123456789abcdef';
const CHAT = 'openai/v1/chat/completions';
const CHAT_BODY = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] };

interface TestApp {
  readonly appId: string;
  readonly appToken: string;
  readonly developmentToken: string;
  readonly deviceId: string;
}

async function rejection(promise: Promise<unknown>): Promise<TollgateError> {
  try {
    await promise;
  } catch (error) {
    expect(error, 'a TollgateError').to.be.instanceOf(TollgateError);
    return error as TollgateError;
  }
  throw new Error('expected the call to fail');
}

/** The provider saw the gateway's key and nothing of Tollgate. */
function expectCleanUpstreamRequest(request: RecordedRequest): void {
  expect(request.headers.authorization).to.equal(`Bearer ${SECRET}`);
  expect(Object.keys(request.headers).filter((name) => name.toLowerCase().startsWith('tollgate-')), 'tollgate-* headers upstream').to.deep.equal([]);
  const raw = request.rawHeaders.filter((_, index) => index % 2 === 0).map((name) => name.toLowerCase());
  expect(raw.filter((name) => name.startsWith('tollgate-'))).to.deep.equal([]);
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('react-native SDK: end to end through a real gateway', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  /** The gateway's clock: real time plus an offset, or frozen (for the rate-limit retry case). */
  let offsetMs = 0;
  let frozenAt: number | null = null;
  const gatewayClock = () => frozenAt ?? Date.now() + offsetMs;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, clock: gatewayClock });
  });
  beforeEach(() => {
    upstream.reset();
    Tollgate.reset();
  });
  after(async () => {
    Tollgate.reset();
    await gateway?.close();
    await upstream?.close();
  });

  /** An app allowing development attestation, with the OpenAI secret unless `secret` is false, and a development token. */
  async function createApp(settings: Record<string, unknown> = {}, secret = true): Promise<TestApp> {
    const { appId, appToken } = await gateway.createApp(settings);
    if (secret) await gateway.setSecret(appId, 'openai', SECRET);
    const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(appId);
    return { appId, appToken, developmentToken, deviceId: `sim-${randomBytes(4).toString('hex')}` };
  }

  function options(app: TestApp, extra: Partial<TollgateOptions> = {}): TollgateOptions {
    return {
      appToken: app.appToken,
      baseUrl: gateway.url,
      development: { token: app.developmentToken, deviceId: app.deviceId },
      isDevelopmentBuild: true,
      warmUp: false,
      ...extra,
    };
  }

  const clientFor = (app: TestApp, extra: Partial<TollgateOptions> = {}): TollgateClient => createTollgateClient(options(app, extra));

  it('makes a chat call through Tollgate.initialize and Tollgate.request, with the key injected by the gateway', async () => {
    const app = await createApp();
    const answer = { id: 'chatcmpl-1', choices: [{ message: { role: 'assistant', content: 'Hi there' } }] };
    upstream.on(/^\/v1\/chat\/completions$/, respondJson(200, answer));
    await Tollgate.initialize(options(app, { warmUp: true }));
    const response = await Tollgate.request({ endpoint: CHAT, method: 'POST', body: CHAT_BODY });
    expect(response).to.deep.equal(answer);

    expect(upstream.requests).to.have.length(1);
    const sent = upstream.last();
    expect(sent.method).to.equal('POST');
    expect(sent.url).to.equal('/v1/chat/completions');
    expect(JSON.parse(sent.body.toString('utf8'))).to.deep.equal(CHAT_BODY);
    expect(sent.headers['content-type']).to.equal('application/json');
    expectCleanUpstreamRequest(sent);
    expect(Tollgate.client.deviceTokens.attestationCount, 'the warm-up attestation is reused').to.equal(1);
  });

  it('streams SSE events parsed as they arrive', async () => {
    const app = await createApp();
    const deltas = [{ choices: [{ delta: { content: 'Hel' } }] }, { choices: [{ delta: { content: 'lo' } }] }];
    upstream.on(/chat\/completions/, respondChunks(sseEvents(deltas), { intervalMs: 5 }));
    await Tollgate.initialize(options(app));
    const events: StreamEvent[] = [];
    for await (const event of Tollgate.stream({ endpoint: CHAT, method: 'POST', body: { ...CHAT_BODY, stream: true } })) events.push(event);
    expect(events).to.deep.equal([
      { type: 'sse', event: 'message', data: JSON.stringify(deltas[0]), id: null, retry: null },
      { type: 'sse', event: 'message', data: JSON.stringify(deltas[1]), id: null, retry: null },
      { type: 'sse', event: 'message', data: '[DONE]', id: null, retry: null },
    ]);
    expect(JSON.parse(upstream.last().body.toString('utf8'))).to.deep.equal({ ...CHAT_BODY, stream: true });
    expectCleanUpstreamRequest(upstream.last());
  });

  it('refuses every call before Tollgate.initialize with invalidRequest, sending nothing', async () => {
    const error = await rejection(Tollgate.request({ endpoint: CHAT, method: 'POST', body: CHAT_BODY }));
    expect(error.kind).to.equal('invalidRequest');
    expect(error.reason).to.equal('not_initialized');
    expect(error.message).to.contain('Tollgate.initialize');

    const streamError = await rejection(
      (async () => {
        for await (const event of Tollgate.stream({ endpoint: CHAT, body: CHAT_BODY })) void event;
      })(),
    );
    expect(streamError.kind).to.equal('invalidRequest');
    expect(upstream.requests).to.have.length(0);
  });

  it('reports a wrong app token as unauthorized', async () => {
    const app = await createApp();
    const client = createTollgateClient(options({ ...app, appToken: `at_${'Z'.repeat(32)}` }));
    const error = await rejection(client.request({ endpoint: CHAT, body: CHAT_BODY }));
    expect(error.kind).to.equal('unauthorized');
    expect(error.status).to.equal(401);
    expect(error.errorType).to.equal('unauthorized');
    expect(upstream.requests).to.have.length(0);
  });

  it('reports a revoked device as attestationFailed device_revoked and attests nothing more (pure-JS development session)', async () => {
    const app = await createApp();
    const client = clientFor(app);
    await client.request({ endpoint: CHAT, body: CHAT_BODY });
    expect(client.deviceTokens.attestationCount).to.equal(1);
    await gateway.gateway.management.revokeDevice(app.appId, app.deviceId);

    const error = await rejection(client.request({ endpoint: CHAT, body: CHAT_BODY }));
    expect(error.kind).to.equal('attestationFailed');
    expect(error.status).to.equal(403);
    expect(error.reason).to.equal('device_revoked');
    const again = await rejection(client.request({ endpoint: CHAT, body: CHAT_BODY }));
    expect([again.kind, again.reason]).to.deep.equal(['attestationFailed', 'device_revoked']);
    expect(client.deviceTokens.attestationCount, 'no attestation after the revocation').to.equal(1);
    expect(upstream.requests, 'only the call before the revocation reached the provider').to.have.length(1);
  });

  it('reports the gateway limit as rateLimited with retryAfter, without waiting beyond the retry budget', async () => {
    const app = await createApp({ deviceLimitPerMinute: 1 });
    const client = clientFor(app, { retry: { maxRetries: 0 } });
    await client.request({ endpoint: CHAT, body: CHAT_BODY });
    const error = await rejection(client.request({ endpoint: CHAT, body: CHAT_BODY }));
    expect(error.kind).to.equal('rateLimited');
    expect(error.status).to.equal(429);
    expect(error.retryAfter).to.be.a('number').greaterThan(0);

    // A budget shorter than Retry-After (about 60 s here) fails at once instead of waiting in vain.
    const budgeted = clientFor(app, { retry: { maxRetries: 3, maxWaitSeconds: 5 } });
    const started = Date.now();
    const again = await rejection(budgeted.request({ endpoint: CHAT, body: CHAT_BODY }));
    expect(again.kind).to.equal('rateLimited');
    expect(Date.now() - started).to.be.lessThan(2000);
    expect(upstream.requests).to.have.length(1);
  });

  it('retries a rateLimited call after Retry-After when the retry budget allows it', async function () {
    this.timeout(30_000);
    const app = await createApp({ deviceLimitPerMinute: 60 });
    const retries: Array<{ attempt: number; delaySeconds: number; kind: string }> = [];
    const client = clientFor(app, {
      retry: { maxRetries: 2, maxWaitSeconds: 5, onRetry: ({ attempt, delaySeconds, error }) => retries.push({ attempt, delaySeconds, kind: error.kind }) },
    });
    await client.warmUp();
    // The gateway's clock stands still while the device spends its burst of 60, so the next call is due 1 s later.
    frozenAt = Date.now() + offsetMs;
    try {
      for (let index = 0; index < 60; index += 1) await client.request({ endpoint: CHAT, body: CHAT_BODY, retry: { maxRetries: 0 } });
    } finally {
      offsetMs = frozenAt - Date.now();
      frozenAt = null;
    }
    expect(retries).to.deep.equal([]);
    const started = Date.now();
    const answer = await client.request({ endpoint: CHAT, body: CHAT_BODY });
    const elapsed = Date.now() - started;
    expect(answer).to.deep.include({ ok: true, method: 'POST' });
    expect(retries).to.deep.equal([{ attempt: 1, delaySeconds: 1, kind: 'rateLimited' }]);
    expect(elapsed, 'waited Retry-After').to.be.at.least(950);
    expect(upstream.requests).to.have.length(61);
  });

  it('reports a provider without a secret as secretNotFound', async () => {
    const app = await createApp({}, false);
    const error = await rejection(clientFor(app).request({ endpoint: CHAT, body: CHAT_BODY }));
    expect(error.kind).to.equal('secretNotFound');
    expect(error.status).to.equal(424);
    expect(upstream.requests).to.have.length(0);
  });

  it('reports an unreachable gateway as networkError', async () => {
    const app = await createApp();
    const client = clientFor(app, { baseUrl: `http://127.0.0.1:${await closedPort()}` });
    const error = await rejection(client.request({ endpoint: CHAT, body: CHAT_BODY }));
    expect(error.kind).to.equal('networkError');
    expect(error.reason).to.equal('unreachable');
    expect(error.status).to.equal(undefined);
  });

  it("passes the provider's own error through as providerError with status and body", async () => {
    const app = await createApp();
    const failure = { error: { message: 'The server had an error while processing your request.', type: 'server_error' } };
    upstream.on(/chat\/completions/, respondJson(500, failure));
    const error = await rejection(clientFor(app).request({ endpoint: CHAT, body: CHAT_BODY }));
    expect(error.kind).to.equal('providerError');
    expect(error.status).to.equal(500);
    expect(JSON.parse(error.body!)).to.deep.equal(failure);
    expect(error.errorType).to.equal(undefined);
    expectCleanUpstreamRequest(upstream.last());
  });

  it('cancels a stream mid-way with an AbortSignal, which aborts the provider request', async () => {
    const app = await createApp();
    upstream.on(/chat\/completions/, respondChunks(sseEvents([{ n: 1 }], { done: false }), { holdOpen: true }));
    const controller = new AbortController();
    const events: StreamEvent[] = [];
    const error = await rejection(
      (async () => {
        for await (const event of clientFor(app).stream({ endpoint: CHAT, body: { ...CHAT_BODY, stream: true }, signal: controller.signal })) {
          events.push(event);
          controller.abort();
        }
      })(),
    );
    expect(events).to.have.length(1);
    expect(error.kind).to.equal('networkError');
    expect(error.reason).to.equal('aborted');
    const sent = upstream.last();
    await sent.closed;
    expect(sent.aborted, 'the gateway aborted the provider request').to.equal(true);
    expectCleanUpstreamRequest(sent);
  });

  it('closes the connection when the app leaves the loop early', async () => {
    const app = await createApp();
    upstream.on(/chat\/completions/, respondChunks(sseEvents([{ n: 1 }, { n: 2 }], { done: false }), { holdOpen: true }));
    for await (const event of clientFor(app).stream({ endpoint: CHAT, body: { ...CHAT_BODY, stream: true } })) {
      expect(event).to.deep.include({ type: 'sse', data: '{"n":1}' });
      break;
    }
    const sent = upstream.last();
    await sent.closed;
    expect(sent.aborted).to.equal(true);
  });

  it('rejects a call whose signal is already aborted without sending it', async () => {
    const app = await createApp();
    const controller = new AbortController();
    controller.abort();
    const error = await rejection(clientFor(app).request({ endpoint: CHAT, body: CHAT_BODY, signal: controller.signal }));
    expect(error.kind).to.equal('networkError');
    expect(error.reason).to.equal('aborted');
    expect(upstream.requests).to.have.length(0);
  });

  it('shares one attestation between concurrent first calls', async () => {
    const app = await createApp();
    const client = clientFor(app);
    const answers = await Promise.all(Array.from({ length: 5 }, () => client.request({ endpoint: CHAT, body: CHAT_BODY })));
    expect(answers).to.have.length(5);
    expect(client.deviceTokens.attestationCount).to.equal(1);
    expect(upstream.requests).to.have.length(5);
  });

  it('refuses development attestation in a release build', async () => {
    const app = await createApp();
    const client = clientFor(app, { isDevelopmentBuild: false });
    expect(client.attestationKind).to.equal('none');
    const error = await rejection(client.request({ endpoint: CHAT, body: CHAT_BODY }));
    expect(error.kind).to.equal('attestationFailed');
    expect(error.reason).to.equal('no_attestation');
    expect(upstream.requests).to.have.length(0);
  });

  it('refuses an unsafe endpoint before anything is sent', async () => {
    const app = await createApp();
    const client = clientFor(app);
    const error = await rejection(client.request({ endpoint: 'openai/v1/%2e%2e/admin', body: CHAT_BODY }));
    expect(error.kind).to.equal('invalidRequest');
    expect(client.deviceTokens.attestationCount, 'not even an attestation').to.equal(0);
    expect(upstream.requests).to.have.length(0);
  });
});

describe('react-native SDK: native module, persistent tokens and real streaming, through a real gateway', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let front: Awaited<ReturnType<typeof countingFront>>;
  const attestCalls = () => front.seen.filter((line) => line.startsWith('POST /v1/attest/'));

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    front = await countingFront(gateway.url);
  });
  beforeEach(() => {
    upstream.reset();
    front.seen.length = 0;
    Tollgate.reset();
  });
  after(async () => {
    Tollgate.reset();
    await front?.close();
    await gateway?.close();
    await upstream?.close();
  });

  async function createApp(): Promise<{ appId: string; appToken: string; developmentToken: string; deviceId: string }> {
    const { appId, appToken } = await gateway.createApp();
    await gateway.setSecret(appId, 'openai', SECRET);
    const { developmentToken } = await gateway.gateway.management.createDevelopmentToken(appId);
    return { appId, appToken, developmentToken, deviceId: `phone-${randomBytes(4).toString('hex')}` };
  }

  /** One app launch: a fresh native module over the same Keychain, then `await Tollgate.initialize({ appToken })`. */
  async function launch(app: { appToken: string; developmentToken: string; deviceId: string }, keychain: Keychain) {
    const scripted = scriptedNative(keychain, { gatewayUrl: front.url, deviceId: app.deviceId });
    await Tollgate.initialize({ appToken: app.appToken, nativeModule: scripted.native, development: { token: app.developmentToken }, isDevelopmentBuild: true, warmUp: false });
    return scripted;
  }

  it('initializes with the app token only (address from the native configuration) and makes no attestation call on a cold start with a stored token', async () => {
    const app = await createApp();
    const keychain: Keychain = { stored: null, keysCreated: 0 };
    const first = await launch(app, keychain);
    expect(first.calls[0]).to.deep.equal(['getConfiguration', null]);
    expect(first.calls[1]).to.deep.equal(['configure', { appToken: app.appToken, gatewayUrl: front.url, developmentToken: app.developmentToken }]);
    expect(await Tollgate.request({ endpoint: CHAT, body: CHAT_BODY })).to.deep.include({ ok: true });
    expect(attestCalls(), 'the first launch attests once').to.deep.equal(['POST /v1/attest/development']);
    expect(keychain.stored).to.not.equal(null);

    // Cold start: the JS state and the module are gone, the Keychain is not.
    Tollgate.reset();
    front.seen.length = 0;
    const second = await launch(app, keychain);
    expect(await Tollgate.request({ endpoint: CHAT, body: CHAT_BODY })).to.deep.include({ ok: true });
    expect(await Tollgate.request({ endpoint: CHAT, body: CHAT_BODY })).to.deep.include({ ok: true });
    expect(attestCalls(), 'no attestation call after the cold start').to.deep.equal([]);
    expect(front.seen, 'only proxy calls reached the gateway').to.deep.equal(Array(2).fill('POST /v1/proxy/openai/v1/chat/completions'));
    expect(second.calls.filter(([name]) => name === 'deviceToken')).to.deep.equal([['deviceToken', { forceRefresh: false }]]);
    expect(keychain.keysCreated).to.equal(1);
    expect(upstream.requests).to.have.length(3);
    expectCleanUpstreamRequest(upstream.last());
  });

  it('after the operator revokes the device: device_revoked, reportError, and no new key or attestation afterwards', async () => {
    const app = await createApp();
    const keychain: Keychain = { stored: null, keysCreated: 0 };
    const scripted = await launch(app, keychain);
    await Tollgate.request({ endpoint: CHAT, body: CHAT_BODY });
    expect(attestCalls()).to.have.length(1);
    await gateway.gateway.management.revokeDevice(app.appId, app.deviceId);

    const error = await rejection(Tollgate.request({ endpoint: CHAT, body: CHAT_BODY }));
    expect([error.kind, error.status, error.reason]).to.deep.equal(['attestationFailed', 403, 'device_revoked']);
    const reports = scripted.calls.filter(([name]) => name === 'reportError');
    expect(reports).to.deep.equal([['reportError', { deviceToken: keychain.stored!.deviceToken, reason: 'device_revoked' }]]);

    for (let attempt = 0; attempt < 3; attempt += 1) {
      const again = await rejection(Tollgate.request({ endpoint: CHAT, body: CHAT_BODY }));
      expect([again.kind, again.reason]).to.deep.equal(['attestationFailed', 'device_revoked']);
    }
    await rejection(Tollgate.warmUp());
    expect(attestCalls(), 'no attestation after the revocation').to.have.length(1);
    expect(keychain.keysCreated, 'no new key').to.equal(1);
    expect(scripted.calls.filter(([name, options]) => name === 'deviceToken' && (options as { forceRefresh: boolean }).forceRefresh), 'no forced refresh').to.deep.equal([]);
    expect(front.seen.filter((line) => line.startsWith('POST /v1/proxy/')), 'nothing sent after the refusal').to.have.length(2);
    expect(upstream.requests).to.have.length(1);
  });

  it('yields the first event of a streaming fetch before the upstream finishes (body read with getReader only)', async () => {
    const app = await createApp();
    let releaseUpstream: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (releaseUpstream = resolve));
    let upstreamFinished = false;
    upstream.on(/chat\/completions/, async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: {"n":1}\n\n');
      await released;
      response.write('data: {"n":2}\n\ndata: [DONE]\n\n');
      upstreamFinished = true;
      response.end();
    });
    // A streaming fetch as expo/fetch is one: Response.body.getReader(), and no Symbol.asyncIterator on the body.
    const streamingFetch = async (url: string, init: RequestInit) => {
      const real = await fetch(url, init);
      const body = real.body;
      return {
        status: real.status,
        url: real.url,
        redirected: real.redirected,
        headers: real.headers,
        body: body ? { getReader: () => body.getReader() } : null,
        arrayBuffer: () => real.arrayBuffer(),
        text: () => real.text(),
      };
    };
    await Tollgate.initialize({
      appToken: app.appToken,
      gatewayUrl: front.url,
      nativeModule: null,
      development: { token: app.developmentToken, deviceId: app.deviceId },
      isDevelopmentBuild: true,
      fetch: streamingFetch,
    });
    const order: string[] = [];
    await Tollgate.stream({ endpoint: CHAT, body: { ...CHAT_BODY, stream: true } }).forEach((event) => {
      order.push(`${event.type === 'sse' ? event.data : '?'} (upstream ${upstreamFinished ? 'finished' : 'open'})`);
      if (order.length === 1) releaseUpstream();
    });
    expect(order).to.deep.equal(['{"n":1} (upstream open)', '{"n":2} (upstream finished)', '[DONE] (upstream finished)']);
  });
});
