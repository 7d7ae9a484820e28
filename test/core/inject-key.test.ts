/**
 * The injectKey stage (core/pipeline/inject-key.ts): which host and prefix a request goes to (operator override, the
 * secret's tenant URL, the manifest's choice by key, a version on a second host), and what the upstream request
 * carries (the credential under the declared header name, default headers that the client's own win over, the
 * Accept-Encoding the gateway can read, no body on GET, root paths below any version, provider URLs in answers
 * mapped back to the gateway). A test provider declared for the purpose; a fake upstream records what crossed the wire.
 */
import { expect } from 'chai';
import { PLUGIN_CONTRACT_VERSION, SecretValue, defineProvider, type ProviderManifest, type ResolvedSecret } from '../../core/contract';
import { upstreamBase, versionBase } from '../../core/pipeline/inject-key';
import type { RegisteredProvider } from '../../core/registry/provider-registry';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest } from '../support/http';
import { refusal } from '../support/refusals';

const KEY = 'ik-test-0123456789abcdef0123';

describe('injectKey: the upstream base URL (unit)', () => {
  const secret = (baseUrl?: string, value = KEY): ResolvedSecret => ({ provider: 'x', value: new SecretValue(value), baseUrl });
  const provider = (manifest: Partial<ProviderManifest>, overridden = false, baseUrl = manifest.baseUrl ?? 'https://api.example.com'): RegisteredProvider =>
    ({ overridden, baseUrl, manifest: { slug: 'x', baseUrl: 'https://api.example.com', versions: { v1: '/v1' }, ...manifest } }) as unknown as RegisteredProvider;

  it('an operator override wins over the tenant URL and the manifest\'s choice', () => {
    const tenant = { baseUrl: 'required' as const, allowedHosts: ['*.example.com'] };
    expect(upstreamBase(provider({ tenant }, true, 'http://127.0.0.1:9'), secret('https://t.example.com'))).to.equal('http://127.0.0.1:9');
    expect(upstreamBase(provider({ tenant }, true, 'http://127.0.0.1:9'), secret())).to.equal('http://127.0.0.1:9');
    expect(upstreamBase(provider({ selectBaseUrl: () => 'https://api.example.com' }, true, 'http://127.0.0.1:9'), secret())).to.equal('http://127.0.0.1:9');
  });

  it('a tenant provider takes the secret\'s base URL; without one, required refuses and optional falls back', () => {
    expect(upstreamBase(provider({ tenant: { baseUrl: 'required', allowedHosts: ['*.example.com'] } }), secret('https://t.example.com/openai'))).to.equal('https://t.example.com/openai');
    const missing = refusal(() => upstreamBase(provider({ tenant: { baseUrl: 'required', allowedHosts: ['*.example.com'] } }), secret()));
    expect([missing.type, missing.reason]).to.deep.equal(['secretNotFound', 'tenant_base_url_missing']);
    expect(missing.message).to.include('"x"');
    expect(upstreamBase(provider({ tenant: { baseUrl: 'optional', allowedHosts: ['*.example.com'] } }), secret())).to.equal('https://api.example.com');
    expect(upstreamBase(provider({}), secret('https://ignored.example.com')), 'no tenant rule: the secret\'s URL is not read').to.equal('https://api.example.com');
  });

  it('selectBaseUrl picks among the declared hosts only, without a trailing slash', () => {
    const select = provider({ alternateBaseUrls: ['https://free.example.com/'], selectBaseUrl: (chosen) => (chosen.value.reveal().endsWith(':fx') ? 'https://free.example.com/' : 'https://api.example.com') });
    expect(upstreamBase(select, secret(undefined, `${KEY}:fx`))).to.equal('https://free.example.com');
    expect(upstreamBase(select, secret())).to.equal('https://api.example.com');
    const rogue = refusal(() => upstreamBase(provider({ selectBaseUrl: () => 'https://evil.example.net' }), secret()));
    expect([rogue.type, rogue.reason]).to.deep.equal(['internalError', 'undeclared_host']);
    expect(upstreamBase(provider({ selectBaseUrl: () => 'https://api.example.com/' }), secret()), 'the base URL itself, slash dropped').to.equal('https://api.example.com');
  });

  it('versionBase: a path prefix on the base URL, or a second host named by an absolute version (http or https)', () => {
    const plain = provider({});
    expect(versionBase(plain, secret(), '/v1')).to.deep.equal({ base: 'https://api.example.com', prefix: '/v1' });
    expect(versionBase(plain, secret(), '')).to.deep.equal({ base: 'https://api.example.com', prefix: '' });
    expect(versionBase(plain, secret(), '/x/https:y')).to.deep.equal({ base: 'https://api.example.com', prefix: '/x/https:y' });
    expect(versionBase(plain, secret(), 'https://stream.example.com/v1')).to.deep.equal({ base: 'https://stream.example.com', prefix: '/v1' });
    expect(versionBase(plain, secret(), 'https://stream.example.com/')).to.deep.equal({ base: 'https://stream.example.com', prefix: '' });
    expect(versionBase(plain, secret(), 'http://127.0.0.1:8080/q')).to.deep.equal({ base: 'http://127.0.0.1:8080', prefix: '/q' });
    expect(versionBase(provider({}, true, 'http://127.0.0.1:9'), secret(), 'https://stream.example.com/v1'), 'an override replaces the second host too').to.deep.equal({ base: 'http://127.0.0.1:9', prefix: '/v1' });
  });
});

/** A provider declared for these tests: a header credential, default headers, a root path, a second host, URL headers. */
const injectTest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'inject-test',
  name: 'Inject test provider',
  baseUrl: 'https://inject.invalid',
  versions: { v1: '/v1', root: '', up: 'https://upload.inject.invalid/u' },
  rootPaths: ['upload/', 'download/'],
  auth: { kind: 'header', header: 'X-Test-Key' },
  defaultHeaders: { 'X-Test-Version': '2024-01-01', 'x-test-beta': 'on' },
  responseUrlHeaders: ['X-Next-Url'],
  capabilities: ['chat'],
  streaming: [],
  routes: { methods: ['GET', 'POST', 'PUT'] },
});

describe('injectKey: the upstream request', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { 'inject-test': upstream.url, openai: upstream.url }, extraProviders: [injectTest] });
    device = await gateway.provision({ 'inject-test': KEY, openai: KEY });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const send = (path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
    rawRequest(gateway.url, { method: options.method ?? 'POST', path: `/v1/proxy/${path}`, headers: { ...device.headers, ...(options.headers ?? {}) }, body: options.body });

  it('sends the key under the declared header, the default headers the client did not send, and keeps the client\'s own', async () => {
    upstream.respond(respondJson(200, { ok: true }));
    expect((await send('inject-test/v1/chat', { body: '{}', headers: { 'content-type': 'application/json' } })).status).to.equal(200);
    let seen = upstream.last();
    expect(seen.url).to.equal('/v1/chat');
    expect(seen.headers['x-test-key']).to.equal(KEY);
    expect(seen.headers['x-test-version']).to.equal('2024-01-01');
    expect(seen.headers['x-test-beta']).to.equal('on');
    expect(seen.body.toString()).to.equal('{}');
    expect((await send('inject-test/v1/chat', { body: '{}', headers: { 'X-Test-Version': '2025-02-02', 'x-test-key': 'client-guess' } })).status).to.equal(200);
    seen = upstream.last();
    expect(seen.headers['x-test-version'], 'the client\'s value wins').to.equal('2025-02-02');
    expect(seen.headers['x-test-key'], 'but never for the credential').to.equal(KEY);
    expect(seen.rawHeaders.filter((name, index) => index % 2 === 0 && name.toLowerCase() === 'x-test-key')).to.have.length(1);
  });

  it('Accept-Encoding: identity where usage is read; elsewhere only the codings the gateway can decode', async () => {
    upstream.respond(respondJson(200, { ok: true }));
    await send('openai/v1/chat/completions', { body: '{}', headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip, br' } });
    expect(upstream.last().headers['accept-encoding']).to.equal('identity');
    await send('inject-test/v1/chat', { body: '{}', headers: { 'accept-encoding': 'zstd, gzip;q=0.5, *' } });
    expect(upstream.last().headers['accept-encoding']).to.equal('gzip;q=0.5');
    await send('inject-test/v1/chat', { body: '{}', headers: { 'accept-encoding': 'zstd' } });
    expect(upstream.last().headers['accept-encoding']).to.equal('identity');
    await send('inject-test/v1/chat', { body: '{}' });
    expect(upstream.last().headers['accept-encoding'], 'none asked, none added').to.equal(undefined);
  });

  it('GET carries neither a body nor its length upstream; other methods carry both', async () => {
    upstream.respond(respondJson(200, { ok: true }));
    for (const method of ['GET']) {
      const response = await send('inject-test/v1/items', { method, body: 'smuggled', headers: { 'content-length': '8' } });
      expect(response.status, method).to.equal(200);
      const seen = upstream.last();
      expect(seen.method).to.equal(method);
      expect(seen.headers['content-length'], method).to.equal(undefined);
      expect(seen.body.length, method).to.equal(0);
    }
    await send('inject-test/v1/items', { method: 'PUT', body: 'kept', headers: { 'content-length': '4' } });
    expect(upstream.last().headers['content-length']).to.equal('4');
    expect(upstream.last().body.toString()).to.equal('kept');
  });

  it('a declared root path below any version is sent from the host root; other paths keep their version', async () => {
    upstream.respond(respondJson(200, { ok: true }));
    await send('inject-test/v1/upload/files', { body: '{}' });
    expect(upstream.last().url).to.equal('/upload/files');
    await send('inject-test/up/upload/files', { body: '{}' });
    expect(upstream.last().url).to.equal('/upload/files');
    await send('inject-test/root/upload/files', { body: '{}' });
    expect(upstream.last().url).to.equal('/upload/files');
    await send('inject-test/v1/download/files', { body: '{}' });
    expect(upstream.last().url, 'each declared root path').to.equal('/download/files');
    await send('inject-test/v1/files/upload/', { body: '{}' });
    expect(upstream.last().url, 'only as a prefix').to.equal('/v1/files/upload/');
    await send('inject-test/v1/uploads', { body: '{}' });
    expect(upstream.last().url).to.equal('/v1/uploads');
  });

  it('a provider URL in a declared answer header is mapped to the gateway route of its longest version prefix', async () => {
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'x-next-url': `${upstream.url}/u/session/1?upload_id=7`, 'x-other-url': `${upstream.url}/u/x` });
      response.end('{}');
    });
    let response = await send('inject-test/v1/chat', { body: '{}', headers: { host: 'phone-visible.example:8443' } });
    expect(response.headers['x-next-url']).to.equal('http://phone-visible.example:8443/v1/proxy/inject-test/up/session/1?upload_id=7');
    expect(response.headers['x-other-url'], 'undeclared headers untouched').to.equal(`${upstream.url}/u/x`);
    response = await send('inject-test/v1/chat', { body: '{}', headers: { host: 'bad/host' } });
    expect(response.headers['x-next-url'], 'a Host that is not a host name').to.equal('http://localhost/v1/proxy/inject-test/up/session/1?upload_id=7');
    upstream.respond((_request, answer) => {
      answer.writeHead(200, { 'x-next-url': `${upstream.url}/v1/files/2` });
      answer.end('{}');
    });
    response = await send('inject-test/v1/chat', { body: '{}', headers: { host: 'phone-visible.example' } });
    expect(response.headers['x-next-url']).to.equal('http://phone-visible.example/v1/proxy/inject-test/v1/files/2');
  });
});
