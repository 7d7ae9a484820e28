/**
 * Every declared realtime route of the six voice providers, through a real gateway to a fake provider socket on
 * loopback, with `ws` as the client: the socket lands on the provider's documented path (another host's prefix where it
 * has one), with the operator's credential where the provider documents it for servers, and the provider's usage
 * frame (in its documented shape) is charged. And the credential-minting routes: closed by default (nothing reaches
 * the provider), opened per app with the lifetime clamped to `credentialTtlSeconds`.
 */
import { expect } from 'chai';
import { WebSocket } from 'ws';
import { TestGateway } from '../support/gateway';
import { FakeRealtimeUpstream, eventually } from '../support/fake-realtime';
import { FakeUpstream, respondJson } from '../support/fake-upstream';

interface Case {
  readonly slug: string;
  readonly path: string;
  /** Where the provider's socket is (path and query), as its documentation gives it. */
  readonly upstream: string;
  readonly credential: [header: string, value: (key: string) => string];
  /** A usage frame in the provider's documented shape, and what the request log must show for it. */
  readonly usage?: { frame: unknown; inputTokens?: number; outputTokens?: number; audioSeconds?: number };
}

const CASES: readonly Case[] = [
  // https://ai.google.dev/api/live (BidiGenerateContentServerMessage.usageMetadata)
  {
    slug: 'gemini',
    path: 'v1beta/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent',
    upstream: '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent',
    credential: ['x-goog-api-key', (key) => key],
    usage: { frame: { serverContent: { turnComplete: true }, usageMetadata: { promptTokenCount: 40, responseTokenCount: 12, totalTokenCount: 52 } }, inputTokens: 40, outputTokens: 12 },
  },
  // https://developers.deepgram.com/reference/speech-to-text/listen-streaming ("Metadata" holds duration)
  {
    slug: 'deepgram',
    path: 'v1/listen?model=nova-3&encoding=linear16&sample_rate=16000',
    upstream: '/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000',
    credential: ['authorization', (key) => `Token ${key}`],
    usage: { frame: { type: 'Metadata', transaction_key: 'deprecated', request_id: 'a1', sha256: 'x', created: '2026-11-28T00:00:00Z', duration: 12.5, channels: 1 }, audioSeconds: 12.5 },
  },
  // https://developers.deepgram.com/reference/text-to-speech/speak-streaming
  { slug: 'deepgram', path: 'v1/speak?model=aura-2-thalia-en', upstream: '/v1/speak?model=aura-2-thalia-en', credential: ['authorization', (key) => `Token ${key}`] },
  // https://elevenlabs.io/docs/api-reference/text-to-speech/v-1-text-to-speech-voice-id-stream-input
  { slug: 'elevenlabs', path: 'v1/text-to-speech/voice123/stream-input?model_id=eleven_flash_v2_5', upstream: '/v1/text-to-speech/voice123/stream-input?model_id=eleven_flash_v2_5', credential: ['xi-api-key', (key) => key] },
  { slug: 'elevenlabs', path: 'v1/text-to-speech/voice123/multi-stream-input', upstream: '/v1/text-to-speech/voice123/multi-stream-input', credential: ['xi-api-key', (key) => key] },
  // https://elevenlabs.io/docs/api-reference/speech-to-text/v-1-speech-to-text-realtime
  { slug: 'elevenlabs', path: 'v1/speech-to-text/realtime?model_id=scribe_v2_realtime', upstream: '/v1/speech-to-text/realtime?model_id=scribe_v2_realtime', credential: ['xi-api-key', (key) => key] },
  // https://docs.cartesia.ai/api-reference/tts/websocket and /stt/stt
  { slug: 'cartesia', path: 'v1/tts/websocket', upstream: '/tts/websocket', credential: ['authorization', (key) => `Bearer ${key}`] },
  { slug: 'cartesia', path: 'v1/stt/websocket?model=ink-whisper', upstream: '/stt/websocket?model=ink-whisper', credential: ['authorization', (key) => `Bearer ${key}`] },
  // https://www.assemblyai.com/docs/api-reference/streaming-api/streaming-api ("Termination")
  {
    slug: 'assemblyai',
    path: 'v3/ws?sample_rate=16000&format_turns=true',
    upstream: '/v3/ws?sample_rate=16000&format_turns=true',
    credential: ['authorization', (key) => key],
    usage: { frame: { type: 'Termination', audio_duration_seconds: 31, session_duration_seconds: 33 }, audioSeconds: 31 },
  },
];

const key = (slug: string) => `operator-${slug}-0123456789abcdef`;

describe('realtime routes of the voice providers', function () {
  this.timeout(30_000);
  let fake: FakeRealtimeUpstream;
  let gateway: TestGateway;

  before(async () => {
    fake = await FakeRealtimeUpstream.start();
    const slugs = [...new Set(CASES.map((entry) => entry.slug))];
    gateway = await TestGateway.start({ upstreams: Object.fromEntries(slugs.map((slug) => [slug, fake.url])) });
  });

  after(async () => {
    await gateway.close();
    await fake.close();
  });

  for (const entry of CASES) {
    it(`${entry.slug} ${entry.path.split('?')[0]}: documented socket path, operator credential, usage charged`, async () => {
      const device = await gateway.provision({ [entry.slug]: key(entry.slug) });
      const since = Date.now();
      const opened = fake.nextSession();
      const client = new WebSocket(`${gateway.url.replace(/^http/, 'ws')}/v1/proxy/${entry.slug}/${entry.path}`, { headers: { ...device.headers, 'xi-api-key': 'client-key', Authorization: 'Token client-key' } });
      await new Promise((resolve, reject) => {
        client.once('open', resolve);
        client.once('error', reject);
      });
      const upstream = await opened;
      expect(upstream.handshake.url).to.equal(entry.upstream);
      expect(upstream.handshake.headers[entry.credential[0]]).to.equal(entry.credential[1](key(entry.slug)));
      expect(JSON.stringify(upstream.handshake.headers)).not.to.contain('client-key');
      expect(Object.keys(upstream.handshake.headers).filter((name) => name.startsWith('tollgate'))).to.deep.equal([]);
      if (entry.usage) upstream.socket.send(JSON.stringify(entry.usage.frame));
      await eventually(() => upstream.socket.readyState === upstream.socket.OPEN);
      const closed = new Promise((resolve) => client.once('close', resolve));
      upstream.socket.close(1000);
      await closed;
      const event = await gateway.recordedEvent(device.appId, since, (candidate) => candidate.status === 101);
      if (entry.usage?.inputTokens !== undefined) expect(event.inputTokens).to.equal(entry.usage.inputTokens);
      if (entry.usage?.outputTokens !== undefined) expect(event.outputTokens).to.equal(entry.usage.outputTokens);
      if (entry.usage?.audioSeconds !== undefined) expect(event.session?.audioSeconds).to.equal(entry.usage.audioSeconds);
      expect(event.session?.closeCode).to.equal(1000);
    });
  }
});

/** Every credential-minting route, with a body the provider documents. */
const CREDENTIAL_ROUTES: ReadonlyArray<{ slug: string; method: 'GET' | 'POST'; path: string; body?: unknown; upstreamPath: string }> = [
  { slug: 'openai', method: 'POST', path: 'v1/realtime/client_secrets', body: { expires_after: { anchor: 'created_at', seconds: 3600 }, session: { type: 'realtime', model: 'gpt-realtime' } }, upstreamPath: '/v1/realtime/client_secrets' },
  { slug: 'openai', method: 'POST', path: 'v1/realtime/sessions', body: { model: 'gpt-realtime' }, upstreamPath: '/v1/realtime/sessions' },
  { slug: 'openai', method: 'POST', path: 'v1/realtime/transcription_sessions', body: {}, upstreamPath: '/v1/realtime/transcription_sessions' },
  { slug: 'gemini', method: 'POST', path: 'v1alpha/auth_tokens', body: { uses: 1, expireTime: '2099-01-01T00:00:00Z' }, upstreamPath: '/v1alpha/auth_tokens' },
  { slug: 'deepgram', method: 'POST', path: 'v1/auth/grant', body: { ttl_seconds: 3600 }, upstreamPath: '/v1/auth/grant' },
  { slug: 'elevenlabs', method: 'POST', path: 'v1/single-use-token/realtime_scribe', upstreamPath: '/v1/single-use-token/realtime_scribe' },
  { slug: 'assemblyai', method: 'GET', path: 'v3/token?expires_in_seconds=600', upstreamPath: '/v3/token' },
  { slug: 'cartesia', method: 'POST', path: 'v1/access-token', body: { grants: { tts: true }, expires_in: 3600 }, upstreamPath: '/access-token' },
];

describe('credential-minting routes', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  const slugs = [...new Set(CREDENTIAL_ROUTES.map((route) => route.slug))];

  before(async () => {
    upstream = (await FakeUpstream.start()).respond(respondJson(200, { value: "minted" }));
    gateway = await TestGateway.start({ upstreams: Object.fromEntries(slugs.map((slug) => [slug, upstream.url])) });
  });

  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const call = (headers: Record<string, string>, route: (typeof CREDENTIAL_ROUTES)[number]) =>
    fetch(`${gateway.url}/v1/proxy/${route.slug}/${route.path}`, {
      method: route.method,
      headers: { ...headers, ...(route.body ? { 'content-type': 'application/json' } : {}) },
      ...(route.body ? { body: JSON.stringify(route.body) } : {}),
    });

  it('answers route_not_allowed on every credential route with default settings, and nothing reaches the provider', async () => {
    const device = await gateway.provision(Object.fromEntries(slugs.map((slug) => [slug, key(slug)])));
    const before = upstream.requests.length;
    for (const route of CREDENTIAL_ROUTES) {
      const response = await call(device.headers, route);
      expect(response.status, `${route.slug} ${route.path}`).to.equal(400);
      expect(((await response.json()) as { error: { reason: string } }).error.reason).to.equal('route_not_allowed');
    }
    expect(upstream.requests.length).to.equal(before);
  });

  it('forwards them once the app opens the provider, with the lifetime clamped to credentialTtlSeconds', async () => {
    const device = await gateway.provision(Object.fromEntries(slugs.map((slug) => [slug, key(slug)])), { openCredentialRoutes: slugs, credentialTtlSeconds: 45 });
    for (const route of CREDENTIAL_ROUTES) {
      const before = upstream.requests.length;
      const response = await call(device.headers, route);
      expect(response.status, `${route.slug} ${route.path}`).to.equal(200);
      const recorded = upstream.requests[before]!;
      expect(new URL(recorded.url, 'http://x').pathname).to.equal(route.upstreamPath);
      const body = recorded.body.length ? (JSON.parse(recorded.body.toString()) as Record<string, any>) : {};
      if (route.path === 'v1/realtime/client_secrets') expect(body.expires_after.seconds).to.equal(45);
      if (route.slug === 'deepgram') expect(body.ttl_seconds).to.equal(45);
      if (route.slug === 'cartesia') expect(body.expires_in).to.equal(45);
      if (route.slug === 'assemblyai') expect(new URL(recorded.url, 'http://x').searchParams.get('expires_in_seconds')).to.equal('45');
      if (route.slug === 'gemini') expect(Date.parse(body.expireTime) - Date.now()).to.be.within(0, 46_000);
    }
  });
});
