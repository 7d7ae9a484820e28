/**
 * Provider plugins beyond the conformance suite: per-tenant and second-host selection, per-app provider policy, external
 * plugins from TOLLGATE_PLUGINS, providers discovered at run time, computed credentials, and the official Anthropic and
 * OpenAI clients through the gateway.
 */
import { expect } from 'chai';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createPublicKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { serviceAccountKey } from '../../providers/vertex-ai/test/fixture';
import os from 'node:os';
import path from 'node:path';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import { DEFAULT_APP_SETTINGS, ProxyContext, SecretValue, TollgateError, type ProviderManifest } from '../../core/contract';
import { loadConfiguration } from '../../core/configuration/configuration';
import { InjectKeyStage } from '../../core/pipeline/inject-key';
import { ProviderRegistry } from '../../core/registry/provider-registry';
import { BUILT_IN_PROVIDERS_DIRECTORY, discoverProviderFolders } from '../../core/server/plugin-loader';
import { startGateway } from '../../core/server/gateway';
import { FakeUpstream, respondChunks, respondJson, sseEvents } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { rawRequest } from '../support/http';

const FIXTURES = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures');

describe('provider plugins', () => {
  describe('upstream selection without operator overrides', () => {
    const registry = new ProviderRegistry(discoverProviderFolders(BUILT_IN_PROVIDERS_DIRECTORY), loadConfiguration({}, '/tmp'));
    const stage = new InjectKeyStage(registry, loadConfiguration({}, '/tmp'));

    function upstreamFor(slug: string, version: string, providerPath: string, secret: string, baseUrl?: string) {
      const manifest = registry.find(slug)!.manifest;
      const request = { method: 'POST', headers: {} } as never;
      const context = new ProxyContext('id', request, {} as never, { slug, version, providerPath, query: '' }, manifest, 0);
      context.set('app', { id: 'app', name: 'app', settings: DEFAULT_APP_SETTINGS, devicesRevokedBefore: 0 });
      context.set('secret', { provider: slug, value: new SecretValue(secret), baseUrl });
      void stage.run(context);
      return context.get('upstream');
    }

    it('sends Replicate streams to its second host', () => {
      expect(upstreamFor('replicate', 'v1', 'predictions', 'r8_x')).to.deep.include({ origin: 'https://api.replicate.com', path: '/v1/predictions' });
      expect(upstreamFor('replicate', 'v1-stream', 'predictions/abc', 'r8_x')).to.deep.include({ origin: 'https://streaming.api.replicate.com', path: '/v1/predictions/abc' });
    });

    it('sends ElevenLabs to the data-residency host set on the secret (https://elevenlabs.io/docs/product-guides/administration/data-residency)', () => {
      expect(upstreamFor('elevenlabs', 'v1', 'text-to-speech/v1', 'k')).to.deep.include({ origin: 'https://api.elevenlabs.io', path: '/v1/text-to-speech/v1' });
      for (const host of ['api.us.elevenlabs.io', 'api.eu.residency.elevenlabs.io', 'api.in.residency.elevenlabs.io', 'api.sg.residency.elevenlabs.io']) {
        expect(upstreamFor('elevenlabs', 'v2', 'voices', 'k', `https://${host}`)).to.deep.include({ origin: `https://${host}`, path: '/v2/voices' });
      }
    });

    it('picks the DeepL Free host for keys ending in :fx, Pro otherwise', () => {
      expect(upstreamFor('deepl', 'v2', 'translate', 'abc:fx').origin).to.equal('https://api-free.deepl.com');
      expect(upstreamFor('deepl', 'v2', 'translate', 'abc').origin).to.equal('https://api.deepl.com');
      expect(upstreamFor('deepl', 'v2', 'translate', 'abc:fx').headers.authorization).to.equal('DeepL-Auth-Key abc:fx');
    });

    it('uses the tenant host from the secret record (Azure, AssemblyAI EU) and the queue host of fal', () => {
      const azure = upstreamFor('azure-openai', 'v1-deployments', 'deployments/gpt4o/chat/completions', 'k', 'https://contoso.openai.azure.com/openai');
      expect(azure).to.deep.include({ origin: 'https://contoso.openai.azure.com', path: '/openai/deployments/gpt4o/chat/completions' });
      expect(azure.headers['api-key']).to.equal('k');
      expect(upstreamFor('assemblyai', 'v2', 'transcript', 'k', 'https://api.eu.assemblyai.com').origin).to.equal('https://api.eu.assemblyai.com');
      expect(upstreamFor('assemblyai', 'v2', 'transcript', 'k').origin).to.equal('https://api.assemblyai.com');
      expect(upstreamFor('fal', 'v1-queue', 'fal-ai/flux/dev', 'k')).to.deep.include({ origin: 'https://queue.fal.run', path: '/fal-ai/flux/dev' });
      expect(upstreamFor('groq', 'v1', 'chat/completions', 'k').path).to.equal('/openai/v1/chat/completions');
      expect(upstreamFor('perplexity', 'v1', 'chat/completions', 'k').path).to.equal('/chat/completions');
    });
  });

  describe('tenant base URLs are validated when they are set', () => {
    let gateway: TestGateway;
    let appId: string;
    before(async () => {
      gateway = await TestGateway.start({ allowPrivateUpstreams: false });
      ({ appId } = await gateway.createApp());
    });
    after(() => gateway.close());

    it('accepts a declared host and refuses every other', async () => {
      await gateway.setSecret(appId, 'azure-openai', 'azure-key-0123456789', 'https://contoso.openai.azure.com/openai');
      for (const bad of ['http://contoso.openai.azure.com/openai', 'https://evil.example/openai', 'https://contoso.openai.azure.com.evil.example/openai', 'https://contoso.openai.azure.com/other', 'https://user:pw@contoso.openai.azure.com/openai', 'https://127.0.0.1/openai']) {
        try {
          await gateway.setSecret(appId, 'azure-openai', 'azure-key-0123456789', bad);
          expect.fail(`accepted ${bad}`);
        } catch (error) {
          expect(error, bad).to.be.instanceOf(TollgateError);
          expect((error as TollgateError).code).to.equal('TG_ERR_VALIDATION');
        }
      }
      const listed = await gateway.gateway.management.listSecrets(appId);
      expect(listed.find((secret) => secret.provider === 'azure-openai')!.baseUrl).to.equal('https://contoso.openai.azure.com/openai');
      try {
        await gateway.setSecret(appId, 'openai', 'sk-0123456789abcdef', 'https://api.openai.com');
        expect.fail('a fixed-host provider accepted a base URL');
      } catch (error) {
        expect((error as TollgateError).code).to.equal('TG_ERR_VALIDATION');
      }
    });
  });

  describe('per-app provider policy', () => {
    let upstream: FakeUpstream;
    let gateway: TestGateway;
    before(async () => {
      upstream = await FakeUpstream.start();
      gateway = await TestGateway.start({ upstreams: { openai: upstream.url, anthropic: upstream.url } });
    });
    after(async () => {
      await gateway.close();
      await upstream.close();
    });

    it('calls only providers with a secret, narrowed by allowedProviders and allowedRoutes, refusing the rest as invalidRequest', async () => {
      const device = await gateway.provision({ openai: 'sk-policy-0123456789abcdef', anthropic: 'sk-ant-policy-0123456789' }, { allowedProviders: ['openai'], allowedRoutes: ['openai/chat/completions'] });
      const call = (route: string) => rawRequest(gateway.url, { method: 'POST', path: `/v1/proxy/${route}`, headers: device.headers, body: '{}' });
      expect((await call('openai/v1/chat/completions')).status).to.equal(200);
      upstream.reset();
      for (const route of ['anthropic/v1/messages', 'openai/v1/embeddings']) {
        const response = await call(route);
        expect(response.status, route).to.equal(400);
        expect(response.headers['tollgate-error']).to.equal('invalidRequest');
      }
      const missing = await call('gemini/v1beta/models/x:generateContent');
      expect(missing.headers['tollgate-error']).to.equal('invalidRequest');
      expect(upstream.requests).to.have.length(0);
    });

    it('names each refusal (provider_not_allowed, route_not_allowed_for_app, secret_not_found) and matches allowedRoutes by whole segments of the decoded path', async () => {
      const device = await gateway.provision(
        { openai: 'sk-policy-0123456789abcdef', anthropic: 'sk-ant-policy-0123456789' },
        { allowedProviders: ['openai', 'anthropic', 'gemini'], allowedRoutes: ['openai/chat/completions', 'anthropic', 'gemini/models/'] },
      );
      const call = async (route: string) => {
        const response = await rawRequest(gateway.url, { method: 'POST', path: `/v1/proxy/${route}`, headers: device.headers, body: '{}' });
        return `${response.status} ${(JSON.parse(response.body.toString() || '{}') as { error?: { reason?: string } }).error?.reason ?? ''}`.trim();
      };
      upstream.reset();
      // A slug alone allows every route of that provider; a path entry, that path and what is below it.
      expect(await call('anthropic/v1/messages')).to.equal('200');
      expect(await call('openai/v1/chat/completions')).to.equal('200');
      expect(upstream.requests).to.have.length(2);
      upstream.reset();
      // Not a whole segment, another route, or a path that does not decode: refused, nothing forwarded.
      expect(await call('openai/v1/chat/completionsx')).to.equal('400 route_not_allowed_for_app');
      expect(await call('openai/v1/embeddings')).to.equal('400 route_not_allowed_for_app');
      expect(await call('openai/v1/chat/completions%E0%A4%A')).to.match(/^400 /);
      // An entry names its provider: gemini/models/ allows nothing of openai's.
      expect(await call('openai/v1/models/gpt-4o')).to.equal('400 route_not_allowed_for_app');
      // Allowed by the lists, but the app has no secret for it.
      expect(await call('gemini/v1beta/models/x:generateContent')).to.equal('424 secret_not_found');
      expect(upstream.requests).to.have.length(0);
      const narrowed = await gateway.provision({ openai: 'sk-policy-0123456789abcdef', anthropic: 'sk-ant-policy-0123456789' }, { allowedProviders: ['anthropic'] });
      const refused = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: narrowed.headers, body: '{}' });
      expect(refused.status).to.equal(400);
      expect((JSON.parse(refused.body.toString()) as { error: { reason: string } }).error.reason).to.equal('provider_not_allowed');
      expect(upstream.requests).to.have.length(0);
      // The entry is matched on the decoded path, as the provider reads it.
      expect(await call('openai/v1/chat%2Fcompletions')).to.equal('200');
      expect(upstream.requests).to.have.length(1);
    });
  });

  describe('external and run-time providers', () => {
    let upstream: FakeUpstream;
    let extraDirectory: string;
    before(async () => {
      upstream = await FakeUpstream.start();
      extraDirectory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-providers-'));
    });
    after(async () => {
      await upstream.close();
      rmSync(extraDirectory, { recursive: true, force: true });
    });

    it('loads a provider package named in TOLLGATE_PLUGINS and proxies to it', async () => {
      const gateway = await TestGateway.start({ env: { TOLLGATE_PLUGINS: path.join(FIXTURES, 'tollgate-provider-example') }, upstreams: { 'example-external': upstream.url } });
      try {
        const catalog = (await (await fetch(`${gateway.url}/v1/providers`)).json()) as { providers: Array<{ slug: string }> };
        expect(catalog.providers.map((provider) => provider.slug)).to.include('example-external');
        const device = await gateway.provision({ 'example-external': 'example-key-0123456789' });
        const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/example-external/v1/chat', headers: { ...device.headers, 'x-example-key': 'client' }, body: '{}' });
        expect(response.status).to.equal(200);
        expect(upstream.last().headers['x-example-key']).to.equal('example-key-0123456789');
      } finally {
        await gateway.close();
      }
    });

    it('refuses at boot a plugin built for another contract version, naming it', async () => {
      const dataDirectory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-future-'));
      try {
        await startGateway({ env: { TOLLGATE_DATA_DIR: dataDirectory, TOLLGATE_PORT: '0', TOLLGATE_PLUGINS: path.join(FIXTURES, 'tollgate-provider-future'), TOLLGATE_LOG_LEVEL: 'silent' } });
        expect.fail('the gateway started with an incompatible plugin');
      } catch (error) {
        expect(error).to.be.instanceOf(TollgateError);
        expect((error as TollgateError).code).to.equal('TG_ERR_PLUGIN_CONTRACT_VERSION');
        expect((error as Error).message).to.include('tollgate-provider-future').and.include('contract 2');
      } finally {
        rmSync(dataDirectory, { recursive: true, force: true });
      }
    });

    it('discovers a provider folder added at run time, touching no other file', async () => {
      mkdirSync(path.join(extraDirectory, 'acme-ai'));
      writeFileSync(
        path.join(extraDirectory, 'acme-ai', 'index.js'),
        `exports.manifest = { contractVersion: 1, slug: 'acme-ai', name: 'Acme AI', baseUrl: 'https://api.acme.invalid', versions: { v1: '/v1' },
          auth: { kind: 'header', header: 'Authorization', scheme: 'Bearer' }, capabilities: ['chat'], streaming: ['sse'] };`,
      );
      const gateway = await TestGateway.start({ providerDirectories: [BUILT_IN_PROVIDERS_DIRECTORY, extraDirectory], upstreams: { 'acme-ai': upstream.url } });
      try {
        expect(gateway.gateway.registry.find('acme-ai')).to.not.equal(undefined);
        expect(gateway.gateway.registry.list().length).to.be.greaterThan(30);
        const device = await gateway.provision({ 'acme-ai': 'acme-key-0123456789abcdef' });
        const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/acme-ai/v1/chat/completions', headers: device.headers, body: '{}' });
        expect(response.status).to.equal(200);
        expect(upstream.last().headers.authorization).to.equal('Bearer acme-key-0123456789abcdef');
      } finally {
        await gateway.close();
      }
    });
  });

  describe('Vertex AI computed credentials', () => {
    let upstream: FakeUpstream;
    let gateway: TestGateway;
    let previous: string | undefined;
    before(async () => {
      upstream = await FakeUpstream.start();
      previous = process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL;
      process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL = `${upstream.url}/oauth2/token`;
      gateway = await TestGateway.start({ upstreams: { 'vertex-ai': upstream.url } });
    });
    after(async () => {
      if (previous === undefined) delete process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL;
      else process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL = previous;
      await gateway.close();
      await upstream.close();
    });

    it('signs a service-account assertion, mints one access token and reuses it; the key file cannot redirect the token request', async () => {
      const key = serviceAccountKey();
      const { private_key: privateKey, client_email: email } = JSON.parse(key) as { private_key: string; client_email: string };
      const publicPem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString();
      upstream.on((request) => request.url === '/oauth2/token', respondJson(200, { access_token: 'ya29.minted-once', expires_in: 3599, token_type: 'Bearer' }));
      const device = await gateway.provision({}, {});
      await gateway.setSecret(device.appId, 'vertex-ai', key);
      const path = '/v1/proxy/vertex-ai/v1/projects/demo-project/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent';
      for (let index = 0; index < 3; index += 1) {
        const response = await rawRequest(gateway.url, { method: 'POST', path, headers: device.headers, body: '{}' });
        expect(response.status).to.equal(200);
      }
      const tokenRequests = upstream.requests.filter((request) => request.url === '/oauth2/token');
      expect(tokenRequests).to.have.length(1);
      const form = new URLSearchParams(tokenRequests[0]!.body.toString());
      expect(form.get('grant_type')).to.equal('urn:ietf:params:oauth:grant-type:jwt-bearer');
      const assertion = form.get('assertion')!;
      expect(decodeProtectedHeader(assertion).alg).to.equal('RS256');
      const { payload } = await jwtVerify(assertion, await importSPKI(publicPem, 'RS256'), { issuer: email, audience: `${upstream.url}/oauth2/token` });
      expect(payload.scope).to.equal('https://www.googleapis.com/auth/cloud-platform');
      expect(decodeJwt(assertion).sub).to.equal(email);
      const modelCalls = upstream.requests.filter((request) => request.url !== '/oauth2/token');
      expect(modelCalls.map((request) => request.headers.authorization)).to.deep.equal(Array(3).fill('Bearer ya29.minted-once'));
    });
  });

  describe('official clients through the gateway', () => {
    let upstream: FakeUpstream;
    let gateway: TestGateway;
    before(async () => {
      upstream = await FakeUpstream.start();
      gateway = await TestGateway.start({ upstreams: { anthropic: upstream.url, groq: upstream.url } });
    });
    after(async () => {
      await gateway.close();
      await upstream.close();
    });

    it('@anthropic-ai/sdk streams a message', async () => {
      const device = await gateway.provision({ anthropic: 'sk-ant-real-0123456789abcdef' });
      upstream.respond(
        respondChunks(
          [
            'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test-model","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
            'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
            'event: ping\ndata: {"type":"ping"}\n\n',
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}\n\n',
            'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}}\n\n',
            'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
            'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}\n\n',
            'event: message_stop\ndata: {"type":"message_stop"}\n\n',
          ],
          { intervalMs: 3 },
        ),
      );
      const client = new Anthropic({ apiKey: 'placeholder-not-a-key', baseURL: `${gateway.url}/v1/proxy/anthropic`, defaultHeaders: device.headers, maxRetries: 0 });
      let text = '';
      const stream = client.messages.stream({ model: 'claude-test-model', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
      stream.on('text', (delta) => (text += delta));
      const final = await stream.finalMessage();
      expect(text).to.equal('Hello there');
      expect(final.stop_reason).to.equal('end_turn');
      const received = upstream.last();
      expect(received.url).to.equal('/v1/messages');
      expect(received.headers['x-api-key']).to.equal('sk-ant-real-0123456789abcdef');
      expect(JSON.stringify(received.rawHeaders)).not.to.include('placeholder-not-a-key');
      expect(received.headers['anthropic-version']).to.be.a('string');
    });

    it('openai streams through an OpenAI-compatible provider other than openai (groq)', async () => {
      const device = await gateway.provision({ groq: 'gsk_real_0123456789abcdef' });
      const chunk = (content: string, finish: string | null = null) => ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'llama-3.1-8b-instant', choices: [{ index: 0, delta: { content }, finish_reason: finish }] });
      upstream.respond(respondChunks(sseEvents([chunk('Hi'), chunk(' from groq', 'stop')]), { intervalMs: 3 }));
      const client = new OpenAI({ apiKey: 'placeholder', baseURL: `${gateway.url}/v1/proxy/groq/v1`, defaultHeaders: device.headers, maxRetries: 0 });
      let text = '';
      for await (const part of await client.chat.completions.create({ model: 'llama-3.1-8b-instant', messages: [{ role: 'user', content: 'Hi' }], stream: true })) {
        text += part.choices[0]?.delta?.content ?? '';
      }
      expect(text).to.equal('Hi from groq');
      // The operator override replaces the whole base URL (here the fake upstream), so the path is the version's: groq's
      // v1 maps to /openai/v1 on the host root (groq-sdk needs the root, see providers/groq/index.ts).
      expect(upstream.last().url).to.equal('/openai/v1/chat/completions');
      expect(upstream.last().headers.authorization).to.equal('Bearer gsk_real_0123456789abcdef');
    });
  });

  it('GET /v1/providers lists every provider with versions, capabilities and streaming formats, and no secret or base URL override', async () => {
    const gateway = await TestGateway.start({ upstreams: { openai: 'http://127.0.0.1:1' } });
    try {
      const body = (await (await fetch(`${gateway.url}/v1/providers`)).json()) as { providers: Array<Record<string, unknown>> };
      expect(body.providers.length).to.equal(gateway.gateway.registry.list().length).and.to.be.at.least(30);
      for (const provider of body.providers) {
        expect(provider).to.include.keys('slug', 'name', 'versions', 'capabilities', 'streaming');
        expect(provider.versions).to.be.an('array').that.is.not.empty;
      }
      expect(JSON.stringify(body)).not.to.include('127.0.0.1');
    } finally {
      await gateway.close();
    }
  });
});

// Keep the type import used (manifests are plain data the registry validates).
export type { ProviderManifest };
