/**
 * The React Native SDK end to end: a real gateway in-process, a fake provider, and the SDK attesting with development
 * attestation as it does on a simulator. Each case checks what reached the provider (the gateway's injected key, no
 * Tollgate header) and the error kind the app sees.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeUpstream, respondChunks, respondJson, sseEvents, type RecordedRequest } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { createTollgateClient, Tollgate, TollgateError, type StreamEvent, type TollgateClient, type TollgateOptions } from '../../sdk/react-native/src';

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
