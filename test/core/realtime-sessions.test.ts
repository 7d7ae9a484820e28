/**
 * Realtime sessions through a real gateway to a fake provider socket on loopback that speaks OpenAI Realtime's
 * documented events (https://platform.openai.com/docs/api-reference/realtime-server-events: `session.created`,
 * `response.done` with `response.usage`). What crossed the wire is asserted: frames byte for byte both ways, the
 * operator's credential upstream and no client credential or Tollgate header; refusals that never reach the provider;
 * the gateway's close codes for a spent budget, a revocation, an idle session and a shutdown.
 */
import { expect } from 'chai';
import { WebSocket } from 'ws';
import { TestGateway, type Provisioned } from '../support/gateway';
import { FakeRealtimeUpstream, eventually, type FakeSession } from '../support/fake-realtime';
import { scrapeMetrics, metricSample } from '../support/metrics';
import { FakeSignInProvider, signingKey } from '../support/sign-in-provider';

const OPERATOR_KEY = 'sk-operator-realtime-0123456789';
const CLIENT_KEY = 'sk-client-key-must-not-reach-upstream';

interface Refusal {
  status: number;
  body: string;
}

/** Opens a client socket; rejects with the HTTP answer when the upgrade is refused. */
function connect(url: string, headers: Record<string, string>, protocols: string[] = []): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, protocols, { headers, perMessageDeflate: false });
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => reject(Object.assign(new Error(`refused ${response.statusCode}`), { status: response.statusCode ?? 0, body })));
    });
    socket.once('error', (error) => reject(error));
  });
}

function closeOf(socket: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

function messages(socket: WebSocket): Array<{ data: Buffer; binary: boolean }> {
  const received: Array<{ data: Buffer; binary: boolean }> = [];
  socket.on('message', (data: Buffer, binary: boolean) => received.push({ data: Buffer.from(data), binary }));
  return received;
}

describe('realtime sessions (WebSocket upgrades on the proxy route)', function () {
  this.timeout(30_000);
  let fake: FakeRealtimeUpstream;
  let gateway: TestGateway;
  let socketBase: string;

  before(async () => {
    fake = await FakeRealtimeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: fake.url }, env: { TOLLGATE_SHUTDOWN_GRACE_MS: '300' } });
    socketBase = gateway.url.replace(/^http/, 'ws');
  });

  after(async () => {
    await gateway.close();
    await fake.close();
  });

  const provision = (settings: Record<string, unknown> = {}): Promise<Provisioned> => gateway.provision({ openai: OPERATOR_KEY }, settings);
  const realtimeUrl = () => `${socketBase}/v1/proxy/openai/v1/realtime?model=gpt-realtime`;

  it('relays text and binary frames byte for byte both ways, with the operator key upstream and no client credential', async () => {
    const device = await provision();
    const opened = fake.nextSession();
    const client = await connect(realtimeUrl(), { ...device.headers, Authorization: `Bearer ${CLIENT_KEY}`, Cookie: 'session=secret' });
    const received = messages(client);
    const upstream = await opened;
    // The handshake the provider saw.
    expect(upstream.handshake.url).to.equal('/v1/realtime?model=gpt-realtime');
    expect(upstream.handshake.headers.authorization).to.equal(`Bearer ${OPERATOR_KEY}`);
    expect(upstream.handshake.headers.cookie).to.equal(undefined);
    for (let index = 0; index < upstream.handshake.rawHeaders.length; index += 2) {
      expect(upstream.handshake.rawHeaders[index]!.toLowerCase()).not.to.match(/^tollgate-/);
      expect(upstream.handshake.rawHeaders[index + 1]).not.to.contain(CLIENT_KEY);
    }
    // Client → provider: a JSON event (with odd spacing, kept as sent), a binary audio frame, an invalid-looking text.
    const event = Buffer.from('{"type":"session.update",  "session":{"instructions":"héllo"}}');
    const audio = Buffer.from(Array.from({ length: 960 }, (_, index) => index % 256));
    client.send(event, { binary: false });
    client.send(audio, { binary: true });
    await eventually(() => upstream.messages.length === 2, 5000, 'two frames upstream');
    expect(upstream.messages[0]!.binary).to.equal(false);
    expect(upstream.messages[0]!.data.equals(event)).to.equal(true);
    expect(upstream.messages[1]!.binary).to.equal(true);
    expect(upstream.messages[1]!.data.equals(audio)).to.equal(true);
    // Provider → client, in order.
    const created = Buffer.from('{"type":"session.created","event_id":"event_1","session":{"id":"sess_1"}}');
    const delta = Buffer.from([0, 1, 2, 253, 254, 255]);
    upstream.socket.send(created, { binary: false });
    upstream.socket.send(delta, { binary: true });
    await eventually(() => received.length === 2, 5000, 'two frames downstream');
    expect(received[0]!.binary).to.equal(false);
    expect(received[0]!.data.equals(created)).to.equal(true);
    expect(received[1]!.binary).to.equal(true);
    expect(received[1]!.data.equals(delta)).to.equal(true);
    // The provider's close code reaches the client.
    const closed = closeOf(client);
    upstream.socket.close(4000, 'provider says bye');
    expect(await closed).to.deep.equal({ code: 4000, reason: 'provider says bye' });
  });

  it('charges the usage of response.done as it arrives and writes one request-log row per session', async () => {
    const device = await provision({ deviceDailyTokens: 1_000_000 });
    const since = Date.now();
    const opened = fake.nextSession();
    const client = await connect(realtimeUrl(), device.headers);
    const upstream = await opened;
    const done = (input: number, output: number, cached: number) =>
      JSON.stringify({ type: 'response.done', event_id: 'event_9', response: { id: 'resp_1', status: 'completed', usage: { total_tokens: input + output, input_tokens: input, output_tokens: output, input_token_details: { cached_tokens: cached, text_tokens: input - cached, audio_tokens: 0 }, output_token_details: { text_tokens: 0, audio_tokens: output } } } });
    upstream.socket.send(done(120, 80, 20));
    upstream.socket.send(done(30, 10, 0));
    client.send('{"type":"input_audio_buffer.commit"}');
    await eventually(() => upstream.messages.length === 1);
    const closed = closeOf(client);
    client.close(1000, 'done');
    expect((await closed).code).to.equal(1000);
    const event = await gateway.recordedEvent(device.appId, since, (candidate) => candidate.status === 101);
    expect(event.inputTokens).to.equal(150);
    expect(event.outputTokens).to.equal(90);
    expect(event.cachedTokens).to.equal(20);
    expect(event.session).to.include({ framesIn: 1, framesOut: 2, closeCode: 1000, closeReason: 'done', closedBy: 'client' });
    // The request log shows the session.
    const log = await gateway.gateway.management.requestLog({ appId: device.appId, limit: 10 });
    expect(log.requests.find((entry) => entry.status === 101)?.session).to.include({ closeCode: 1000, framesIn: 1, framesOut: 2 });
    // The provider's socket was closed with the client's code.
    expect((await upstream.closed).code).to.equal(1000);
  });

  it('accepts the tokens as subprotocols and sends none of Tollgate\'s upstream', async () => {
    const device = await provision();
    const opened = fake.nextSession();
    const client = await connect(realtimeUrl(), {}, ['tollgate.v1', `tollgate-app.${device.appToken}`, `tollgate-device.${device.deviceToken}`, `openai-insecure-api-key.${CLIENT_KEY}`, 'realtime']);
    const upstream = await opened;
    expect(upstream.handshake.protocols).to.deep.equal(['realtime']);
    expect(client.protocol).to.equal('realtime');
    expect(upstream.handshake.headers.authorization).to.equal(`Bearer ${OPERATOR_KEY}`);
    client.close();
  });

  it('refuses an upgrade with the usual HTTP error and never reaches the provider', async () => {
    const device = await provision();
    const before = fake.sessions.length;
    const refusals: Refusal[] = [];
    for (const [url, headers] of [
      [realtimeUrl(), { 'Tollgate-App-Token': 'at_00000000000000000000000000000000', 'Tollgate-Device-Token': device.deviceToken }],
      [realtimeUrl(), { 'Tollgate-App-Token': device.appToken }],
      [`${socketBase}/v1/proxy/openai/v1/chat/completions`, device.headers],
      [`${realtimeUrl()}&tollgate-app-token=${device.appToken}`, {}],
    ] as const) {
      refusals.push(await connect(url, headers as Record<string, string>).then(
        () => ({ status: 101, body: '' }),
        (error: Refusal) => error,
      ));
    }
    expect(refusals.map((refusal) => refusal.status)).to.deep.equal([401, 403, 400, 401]);
    expect(JSON.parse(refusals[2]!.body).error.reason).to.equal('route_not_allowed');
    expect(JSON.parse(refusals[0]!.body).error.type).to.equal('unauthorized');
    expect(fake.sessions.length).to.equal(before);
  });

  it('closes with 4429 token_budget once a usage frame spends the device budget', async () => {
    const device = await provision({ deviceDailyTokens: 100 });
    const opened = fake.nextSession();
    const client = await connect(realtimeUrl(), device.headers);
    const upstream = await opened;
    const closed = closeOf(client);
    upstream.socket.send(JSON.stringify({ type: 'response.done', response: { usage: { input_tokens: 90, output_tokens: 60 } } }));
    expect(await closed).to.deep.equal({ code: 4429, reason: 'token_budget' });
    // The next upgrade is refused before it reaches the provider.
    const before = fake.sessions.length;
    const refusal = await connect(realtimeUrl(), device.headers).then(() => ({ status: 101, body: '' }), (error: Refusal) => error);
    expect(refusal.status).to.equal(429);
    expect(JSON.parse(refusal.body).error.reason).to.equal('token_budget');
    expect(fake.sessions.length).to.equal(before);
  });

  it('closes with 4403 device_revoked when the device is revoked', async () => {
    const device = await provision();
    const opened = fake.nextSession();
    const client = await connect(realtimeUrl(), device.headers);
    const upstream: FakeSession = await opened;
    const closed = closeOf(client);
    await gateway.gateway.management.revokeDevice(device.appId, device.deviceId);
    expect(await closed).to.deep.equal({ code: 4403, reason: 'device_revoked' });
    expect((await upstream.closed).code).to.equal(1000);
  });

  it('closes with 4403 user_blocked when the operator blocks the signed-in user of an open session', async () => {
    const signIn = await FakeSignInProvider.start();
    try {
      const key = await signingKey('realtime-key');
      signIn.publish([key]);
      const device = await provision({ userAuth: { issuer: signIn.issuer, jwksUrl: signIn.jwksUrl('/.well-known/jwks.json'), audience: 'tollgate-test' }, userTokenMode: 'required' });
      const opened = fake.nextSession();
      const client = await connect(realtimeUrl(), { ...device.headers, 'Tollgate-User-Token': await signIn.token(key, 'gus') });
      const upstream: FakeSession = await opened;
      const closed = closeOf(client);
      const { adminKey } = await gateway.gateway.management.createAdminKey({ name: 'realtime-block' });
      const block = await fetch(`${gateway.url}/v1/admin/apps/${device.appId}/users/gus/block`, { method: 'POST', headers: { authorization: `Bearer ${adminKey}` } });
      expect(block.status).to.equal(200);
      expect(await closed).to.deep.equal({ code: 4403, reason: 'user_blocked' });
      expect((await upstream.closed).code).to.equal(1000);
    } finally {
      await signIn.close();
    }
  });

  it('closes with 4401 app_disabled when the app is disabled, and 4401 app_token_rotated when its token is rotated with no grace', async () => {
    const disabled = await provision();
    const first = await connect(realtimeUrl(), disabled.headers);
    const firstClosed = closeOf(first);
    await gateway.gateway.management.setAppStatus(disabled.appId, 'disabled');
    expect(await firstClosed).to.deep.equal({ code: 4401, reason: 'app_disabled' });
    const rotated = await provision();
    const second = await connect(realtimeUrl(), rotated.headers);
    const secondClosed = closeOf(second);
    await gateway.gateway.management.rotateAppToken(rotated.appId, 0);
    expect(await secondClosed).to.deep.equal({ code: 4401, reason: 'app_token_rotated' });
  });

  it('applies a settings change to open sessions (a shorter idle time)', async () => {
    const device = await provision({ sessionIdleSeconds: 3600 });
    const client = await connect(realtimeUrl(), device.headers);
    const closed = closeOf(client);
    await gateway.gateway.management.updateApp(device.appId, { sessionIdleSeconds: 1 });
    expect(await closed).to.deep.equal({ code: 4504, reason: 'session_idle' });
  });

  it('closes with 4504 session_idle after the app\'s idle time, and counts it in the metrics', async () => {
    const device = await provision({ sessionIdleSeconds: 1 });
    const client = await connect(realtimeUrl(), device.headers);
    expect(await closeOf(client)).to.deep.equal({ code: 4504, reason: 'session_idle' });
    const metrics = await scrapeMetrics(gateway);
    expect(metricSample(metrics, 'tollgate_realtime_closes_total{code="4504"}')).to.be.at.least(1);
  });

  it('closes with 4429 session_too_long at the app\'s maximum length', async () => {
    const device = await provision({ maxSessionSeconds: 1 });
    const client = await connect(realtimeUrl(), device.headers);
    expect(await closeOf(client)).to.deep.equal({ code: 4429, reason: 'session_too_long' });
  });

  it('closes the provider socket at once when the client vanishes', async () => {
    const device = await provision();
    const opened = fake.nextSession();
    const client = await connect(realtimeUrl(), device.headers);
    const upstream = await opened;
    client.terminate();
    expect((await upstream.closed).code).to.equal(1006);
  });

  it('passes a provider\'s refusal of the handshake on with its status and body', async () => {
    const device = await provision();
    fake.refuseWith = 401;
    fake.refuseBody = '{"error":{"type":"invalid_request_error","code":"invalid_api_key"}}';
    try {
      const refusal = await connect(realtimeUrl(), device.headers).then(() => ({ status: 101, body: '' }), (error: Refusal) => error);
      expect(refusal.status).to.equal(401);
      expect(JSON.parse(refusal.body).error.code).to.equal('invalid_api_key');
    } finally {
      fake.refuseWith = 0;
    }
  });
});

describe('realtime sessions at shutdown', function () {
  this.timeout(30_000);

  it('closes open sessions with 4503 draining after the grace period and refuses new upgrades', async () => {
    const fake = await FakeRealtimeUpstream.start();
    const gateway = await TestGateway.start({ upstreams: { openai: fake.url }, env: { TOLLGATE_SHUTDOWN_GRACE_MS: '300' } });
    try {
      const device = await gateway.provision({ openai: OPERATOR_KEY });
      const client = await connect(`${gateway.url.replace(/^http/, 'ws')}/v1/proxy/openai/v1/realtime?model=gpt-realtime`, device.headers);
      const closed = closeOf(client);
      const stopping = gateway.close();
      expect(await closed).to.deep.equal({ code: 4503, reason: 'draining' });
      await stopping;
    } finally {
      await fake.close();
    }
  });
});
