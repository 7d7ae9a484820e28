/**
 * One conformance suite over every registered provider (style.md, lesson 5), fed by each provider's fixture
 * (`providers/<slug>/test/fixture.ts`: recorded response shapes with their provenance) and a fake upstream on loopback.
 * For each provider it proves that:
 * 1. the key is injected exactly as the manifest declares, and the client's own credentials never reach the upstream;
 * 2. the provider's answer comes back unchanged (status, content type, bytes);
 * 3. streams pass through chunk by chunk (the provider sends the rest only after the client saw the first chunk);
 * 4. the provider's own errors pass through unchanged, without `Tollgate-Error`;
 * 5. a client that goes away aborts the upstream request.
 * A new provider folder gets all of this without writing a test; a provider without a fixture fails the suite.
 */
import { expect } from 'chai';
import { existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { ProviderFixture, FixtureCall, FixtureResponse } from '../../providers/_shared/fixture';
import type { RegisteredProvider } from '../../core/registry/provider-registry';
import { BUILT_IN_PROVIDERS_DIRECTORY } from '../../core/server/plugin-loader';
import { FakeUpstream, respondJson, type RecordedRequest, type Responder } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

const CLIENT_CREDENTIALS: Record<string, string> = {
  authorization: 'Bearer client-own-credential-A',
  'x-api-key': 'client-own-credential-B',
  'api-key': 'client-own-credential-C',
  'x-goog-api-key': 'client-own-credential-D',
  'xi-api-key': 'client-own-credential-E',
  'x-subscription-token': 'client-own-credential-F',
  cookie: 'session=client-own-credential-G',
  'proxy-authorization': 'Basic client-own-credential-H',
  // AWS SigV4 parts: stripped before any signing (Bedrock declares the x-amz- prefix; it applies to every provider).
  'x-amz-security-token': 'client-own-credential-S',
  'x-amz-date': 'client-own-credential-T',
  'x-amz-content-sha256': 'client-own-credential-U',
  'tollgate-sdk': 'ios/1.2.0',
};

/** Query parameters that carry a key at many providers (`?key=` at Google, `?api_key=`…): dropped for every provider. */
const CLIENT_QUERY_CREDENTIALS = 'key=client-own-credential-K&api_key=client-own-credential-L&Api_Key=client-own-credential-M&access_token=client-own-credential-N';

function loadFixture(slug: string): ProviderFixture {
  const file = path.join(BUILT_IN_PROVIDERS_DIRECTORY, slug, 'test', 'fixture.js');
  if (!existsSync(file)) throw new Error(`provider "${slug}" has no conformance fixture (providers/${slug}/test/fixture.ts)`);
  return (require(file) as { fixture: ProviderFixture }).fixture;
}

function respondWith(response: FixtureResponse, options: { waitAfterFirst?: Promise<void>; holdOpen?: boolean } = {}): Responder {
  return async (_request, res) => {
    res.writeHead(response.status, { 'content-type': response.contentType, ...response.headers });
    res.flushHeaders();
    for (const [index, chunk] of response.chunks.entries()) {
      if (res.destroyed) return;
      res.write(chunk);
      if (index === 0 && options.waitAfterFirst) await options.waitAfterFirst;
    }
    if (!options.holdOpen) res.end();
  };
}

interface Exchange {
  status: number;
  headers: http.IncomingHttpHeaders;
  chunks: Buffer[];
  complete: boolean;
}

/** Sends a fixture call; `onChunk` sees each chunk as it arrives and may abort. */
function send(gatewayUrl: string, slug: string, call: FixtureCall, headers: Record<string, string>, onChunk?: (chunk: Buffer, request: http.ClientRequest) => void): Promise<Exchange> {
  const target = `/v1/proxy/${slug}/${call.version}/${call.path}${call.query ? `?${call.query}` : ''}`;
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${gatewayUrl}${target}`,
      { method: call.method, agent: false, headers: { ...headers, ...(call.contentType ? { 'content-type': call.contentType } : {}), ...call.headers } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          onChunk?.(chunk, request);
        });
        response.on('error', () => undefined);
        response.on('close', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, chunks, complete: response.complete }));
      },
    );
    request.on('error', (error) => (onChunk ? resolve({ status: 0, headers: {}, chunks: [], complete: false }) : reject(error)));
    if (call.body !== undefined) request.write(call.body);
    request.end();
  });
}

const joined = (chunks: readonly (string | Buffer)[]) => Buffer.concat(chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : chunk)));

describe('provider conformance (every registered provider)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let providers: RegisteredProvider[];
  const fixtures = new Map<string, ProviderFixture>();
  const secrets = new Map<string, string>();
  let headers: Record<string, string>;
  const savedEnvironment: Record<string, string | undefined> = {};

  before(async () => {
    upstream = await FakeUpstream.start();
    const discovered = readdirSync(BUILT_IN_PROVIDERS_DIRECTORY).filter((name) => !name.startsWith('_'));
    for (const slug of discovered) fixtures.set(slug, loadFixture(slug));
    // Operator settings some providers need in tests (e.g. a fake OAuth token endpoint); restored afterwards.
    for (const fixture of fixtures.values()) {
      for (const [name, value] of Object.entries(fixture.environment?.(upstream.url) ?? {})) {
        savedEnvironment[name] = process.env[name];
        process.env[name] = value;
      }
    }
    gateway = await TestGateway.start({
      upstreams: Object.fromEntries(discovered.map((slug) => [slug, upstream.url])),
      env: { TOLLGATE_LOG_LEVEL: 'info' },
    });
    providers = gateway.gateway.registry.list();
    const { appId, appToken } = await gateway.createApp({ deviceLimitPerMinute: 100_000, appLimitPerMinute: 100_000 });
    for (const provider of providers) {
      const fixture = fixtures.get(provider.manifest.slug)!;
      const secret = typeof fixture.secret === 'function' ? await fixture.secret() : fixture.secret;
      secrets.set(provider.manifest.slug, secret);
      await gateway.setSecret(appId, provider.manifest.slug, secret, fixture.baseUrl);
    }
    const deviceToken = await gateway.deviceToken(appId, appToken, 'conformance-device');
    headers = { 'tollgate-app-token': appToken, 'tollgate-device-token': deviceToken };
  });
  beforeEach(() => {
    upstream.reset();
    for (const fixture of fixtures.values()) {
      for (const [route, answer] of Object.entries(fixture.auxiliaryRoutes ?? {})) upstream.on((request) => request.url === route, respondJson(200, answer));
    }
  });
  after(async () => {
    for (const [name, value] of Object.entries(savedEnvironment)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await gateway?.close();
    await upstream?.close();
  });

  /** The request that reached the provider's route (not an auxiliary one such as a token endpoint). */
  function providerRequest(fixture: ProviderFixture): RecordedRequest {
    const auxiliary = new Set(Object.keys(fixture.auxiliaryRoutes ?? {}));
    const found = upstream.requests.filter((request) => !auxiliary.has(request.url)).at(-1);
    if (!found) throw new Error('the fake upstream received no provider request');
    return found;
  }

  it('registers at least 30 providers covering chat, streaming, image, tts, translation and search', () => {
    expect(providers.length).to.be.at.least(30);
    const capabilities = new Set(providers.flatMap((provider) => provider.manifest.capabilities));
    for (const capability of ['chat', 'image', 'tts', 'translation', 'search', 'embeddings', 'stt']) expect(capabilities, capability).to.include(capability);
    expect(providers.filter((provider) => provider.manifest.streaming.length > 0).length).to.be.at.least(20);
    for (const provider of providers) expect(fixtures.get(provider.manifest.slug)!.provenance, provider.manifest.slug).to.match(/\S{10,}/);
  });

  const slugs = readdirSync(BUILT_IN_PROVIDERS_DIRECTORY).filter((name) => !name.startsWith('_')).sort();

  for (const slug of slugs) {
    describe(slug, () => {
      const fixture = () => fixtures.get(slug)!;
      const manifest = () => providers.find((provider) => provider.manifest.slug === slug)!.manifest;

      it('injects the key exactly as declared; no client credential reaches the provider', async () => {
        upstream.respond(respondWith(fixture().response));
        const auth = manifest().auth;
        const extra: Record<string, string> = { ...CLIENT_CREDENTIALS };
        if (auth.kind === 'header') extra[auth.header.toLowerCase()] = 'client-own-credential-I';
        // Every channel the manifest declares in clientCredentials, too.
        const channels = manifest().clientCredentials ?? {};
        for (const name of channels.headers ?? []) extra[name.toLowerCase()] = 'client-own-credential-P';
        for (const prefix of channels.headerPrefixes ?? []) extra[`${prefix}client-probe`] = 'client-own-credential-Q';
        const declared = [
          ...(channels.queryParameters ?? []).map((name) => `${name}=client-own-credential-R`),
          ...(channels.queryParameterPrefixes ?? []).map((prefix) => `${prefix}Signature=client-own-credential-V`),
        ];
        const call = { ...fixture().call };
        const owned = [CLIENT_QUERY_CREDENTIALS, ...declared, ...(auth.kind === 'query' ? [`${auth.parameter}=client-own-credential-J`] : [])].join('&');
        call.query = `${call.query ? `${call.query}&` : ''}${owned}`;
        const exchange = await send(gateway.url, slug, call, { ...headers, ...extra });
        expect(exchange.status, joined(exchange.chunks).toString()).to.equal(fixture().response.status);
        const received = providerRequest(fixture());
        const secret = secrets.get(slug)!;
        if (auth.kind === 'header') {
          const expected = auth.scheme ? `${auth.scheme} ${secret}` : secret;
          const values = received.rawHeaders.filter((_value, index, all) => index % 2 === 1 && all[index - 1]!.toLowerCase() === auth.header.toLowerCase());
          expect(values).to.deep.equal([expected]);
        } else if (auth.kind === 'query') {
          const query = new URLSearchParams(received.url.split('?')[1] ?? '');
          expect(query.getAll(auth.parameter)).to.deep.equal([secret]);
        } else {
          await fixture().verifyComputedCredential!(received, secret);
        }
        const wire = `${received.url}\n${received.rawHeaders.join('\n')}`;
        expect(wire).not.to.include('client-own-credential');
        expect(received.rawHeaders.filter((_value, index) => index % 2 === 0).map((name) => name.toLowerCase()).filter((name) => name.startsWith('tollgate-'))).to.deep.equal([]);
        if (fixture().call.body !== undefined) expect(received.body.equals(joined([fixture().call.body!]))).to.equal(true);
        for (const [name, value] of Object.entries(manifest().defaultHeaders ?? {})) expect(received.headers[name.toLowerCase()]).to.equal(value);
      });

      it("returns the provider's answer unchanged", async () => {
        upstream.respond(respondWith(fixture().response));
        const exchange = await send(gateway.url, slug, fixture().call, headers);
        expect(exchange.status).to.equal(fixture().response.status);
        expect(exchange.headers['content-type']).to.equal(fixture().response.contentType);
        expect(exchange.headers['tollgate-error']).to.equal(undefined);
        expect(Buffer.concat(exchange.chunks).equals(joined(fixture().response.chunks))).to.equal(true);
      });

      it("passes the provider's own error through unchanged, without Tollgate-Error", async () => {
        upstream.respond(respondWith(fixture().error));
        const exchange = await send(gateway.url, slug, fixture().call, headers);
        expect(exchange.status).to.equal(fixture().error.status);
        expect(exchange.headers['tollgate-error']).to.equal(undefined);
        expect(Buffer.concat(exchange.chunks).equals(joined(fixture().error.chunks))).to.equal(true);
      });

      it('streams chunk by chunk: the first chunk arrives while the provider is still sending', async () => {
        const stream = fixture().stream ?? { call: fixture().call, response: fixture().response };
        let release: () => void = () => undefined;
        const released = new Promise<void>((resolve) => (release = resolve));
        upstream.respond(respondWith(stream.response, { waitAfterFirst: released }));
        let first: Buffer | undefined;
        const exchange = await send(gateway.url, slug, stream.call, headers, (chunk) => {
          if (!first) {
            first = chunk;
            release();
          }
        });
        const expected = joined(stream.response.chunks);
        const firstExpected = joined(stream.response.chunks.slice(0, 1));
        expect(first!.equals(firstExpected), 'the first chunk came alone, before the provider sent the rest').to.equal(true);
        expect(Buffer.concat(exchange.chunks).equals(expected)).to.equal(true);
        expect(exchange.complete).to.equal(true);
        const received = providerRequest(fixture());
        if (stream.call.query) expect(received.url.endsWith(`?${stream.call.query}`) || received.url.includes(`?${stream.call.query}&`)).to.equal(true);
      });

      it('aborts the upstream request when the client goes away', async () => {
        const stream = fixture().stream ?? { call: fixture().call, response: fixture().response };
        upstream.respond(respondWith({ ...stream.response, chunks: stream.response.chunks.slice(0, 1) }, { holdOpen: true }));
        await send(gateway.url, slug, stream.call, headers, (_chunk, request) => request.destroy());
        const received = providerRequest(fixture());
        await received.closed;
        expect(received.aborted).to.equal(true);
      });
    });
  }

  it('never logged a provider secret', () => {
    gateway.gateway.logger.flush();
    const logs = gateway.logText();
    expect(logs).to.include('"request"');
    for (const [slug, secret] of secrets) {
      const needle = secret.startsWith('{') ? (JSON.parse(secret) as Record<string, string>).private_key?.slice(40, 80) ?? (JSON.parse(secret) as Record<string, string>).secretAccessKey! : secret;
      expect(logs.includes(needle!), `log leaks the ${slug} secret`).to.equal(false);
    }
  });
});
