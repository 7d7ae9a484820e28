/**
 * The key is injected exactly as each provider declares, and the client's credentials, cookies, `Tollgate-*` and
 * hop-by-hop headers never reach the upstream (protocol.md, "Headers the SDK sends").
 */
import { expect } from 'chai';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest } from '../support/http';
import { forwardableRequestHeaders, isDroppedResponseHeader, scrubResponseHeaders, withoutCredentialParameters } from '../../core/pipeline/header-hygiene';
import { credentialFormsOf } from '../../core/pipeline/response-scrub';

describe('header hygiene and key injection', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  const secrets = { openai: 'sk-openai-hygiene-0123456789', anthropic: 'sk-ant-hygiene-0123456789', gemini: 'AIza-gemini-hygiene-0123456789' };

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, anthropic: upstream.url, gemini: upstream.url } });
    device = await gateway.provision(secrets);
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  /** Everything a hostile or careless client might send; none of it may reach the provider. */
  const clientExtras = [
    'Authorization', 'Bearer client-own-key',
    'Authorization', 'Bearer second-client-key',
    'x-api-key', 'client-x-api-key',
    'x-goog-api-key', 'client-goog-key',
    'api-key', 'client-azure-key',
    'Cookie', 'session=abc',
    'Proxy-Authorization', 'Basic abc',
    'Tollgate-SDK', 'ios/1.2.0',
    'Tollgate-Request-Time', '1700000000000',
    'Tollgate-Assertion', 'abc',
    'Connection', 'keep-alive, X-Hop-Custom',
    'X-Hop-Custom', 'must-not-cross',
    'Keep-Alive', 'timeout=5',
    'TE', 'trailers',
    'X-Forwarded-For', '203.0.113.9',
    'Forwarded', 'for=203.0.113.9',
    'X-Real-IP', '203.0.113.9',
    'X-Kept', 'kept',
    'Content-Type', 'application/json',
  ];

  function send(path: string, extra: string[] = clientExtras, method = 'POST', body = '{"model":"m"}') {
    const headers = ['Tollgate-App-Token', device.appToken, 'Tollgate-Device-Token', device.deviceToken, ...extra];
    return rawRequest(gateway.url, { method, path, headers, body });
  }

  function forwardedNames(): string[] {
    const raw = upstream.last().rawHeaders;
    return raw.filter((_value, index) => index % 2 === 0).map((name) => name.toLowerCase());
  }

  function expectNoClientCredentials(): void {
    const names = forwardedNames();
    for (const name of names) expect(name, `${name} crossed`).not.to.match(/^tollgate-|^proxy-|^x-forwarded-/);
    for (const name of ['cookie', 'x-hop-custom', 'keep-alive', 'te', 'forwarded', 'x-real-ip']) expect(names, name).not.to.include(name);
    const text = upstream.last().rawHeaders.join('\n');
    for (const value of ['client-own-key', 'second-client-key', 'client-x-api-key', 'client-goog-key', 'client-azure-key', 'session=abc', '203.0.113.9', device.appToken, device.deviceToken]) {
      expect(text, value).not.to.include(value);
    }
    expect(upstream.last().headers['x-kept']).to.equal('kept');
  }

  it('openai: Authorization: Bearer <key>, once, and nothing of the client’s credentials', async () => {
    const response = await send('/v1/proxy/openai/v1/chat/completions');
    expect(response.status).to.equal(200);
    const authorizations = upstream.last().rawHeaders.filter((_v, i, all) => i % 2 === 1 && all[i - 1]!.toLowerCase() === 'authorization');
    expect(authorizations).to.deep.equal([`Bearer ${secrets.openai}`]);
    expect(upstream.last().headers['x-api-key']).to.equal(undefined);
    expect(upstream.last().url).to.equal('/v1/chat/completions');
    expectNoClientCredentials();
  });

  it('anthropic: x-api-key: <key> and the default anthropic-version, which a client value overrides', async () => {
    await send('/v1/proxy/anthropic/v1/messages');
    expect(upstream.last().headers['x-api-key']).to.equal(secrets.anthropic);
    expect(upstream.last().headers.authorization).to.equal(undefined);
    expect(upstream.last().headers['anthropic-version']).to.equal('2023-06-01');
    expect(upstream.last().url).to.equal('/v1/messages');
    expectNoClientCredentials();
    await send('/v1/proxy/anthropic/v1/messages', [...clientExtras, 'anthropic-version', '2024-01-01', 'anthropic-beta', 'tools-2024']);
    expect(upstream.last().headers['anthropic-version']).to.equal('2024-01-01');
    expect(upstream.last().headers['anthropic-beta']).to.equal('tools-2024');
  });

  it("gemini: x-goog-api-key: <key>, no key in the URL, the client's own ?key= dropped, the rest of its query passed through", async () => {
    // Google APIs accept an API key as `?key=` too (https://cloud.google.com/docs/authentication/api-keys-use): a
    // client's own would let an app bring its own key through the gateway.
    await send('/v1/proxy/gemini/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse&key=client-query-key');
    expect(upstream.last().headers['x-goog-api-key']).to.equal(secrets.gemini);
    expect(upstream.last().url).to.equal('/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
    expectNoClientCredentials();
  });

  it('passes a multipart upload through byte for byte with its boundary', async () => {
    const boundary = '----tollgate-boundary-7MA4YWxkTrZu0gW';
    const audio = Buffer.from([0x49, 0x44, 0x33, 0x04, 0x00, 0xff, 0xfb, 0x90, 0x00, 0x0d, 0x0a, 0x2d, 0x2d]);
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\nContent-Type: audio/mpeg\r\n\r\n`),
      audio,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const response = await send('/v1/proxy/openai/v1/audio/transcriptions', ['Content-Type', `multipart/form-data; boundary=${boundary}`], 'POST', body as never);
    expect(response.status).to.equal(200);
    expect(upstream.last().headers['content-type']).to.equal(`multipart/form-data; boundary=${boundary}`);
    expect(upstream.last().body.equals(body)).to.equal(true);
  });

  it('strips hop-by-hop headers and Set-Cookie from the provider response and never compresses', async () => {
    upstream.respond((_request, response) => {
      response.writeHead(200, {
        'content-type': 'application/json',
        'set-cookie': ['__cf_bm=tracking; path=/'],
        'keep-alive': 'timeout=99',
        connection: 'keep-alive, x-upstream-hop',
        'x-upstream-hop': 'hop',
        'x-request-id': 'req_123',
      });
      response.end('{"ok":true}');
    });
    const response = await send('/v1/proxy/openai/v1/chat/completions', ['Accept-Encoding', 'gzip']);
    expect(response.headers['set-cookie']).to.equal(undefined);
    expect(response.headers['x-upstream-hop']).to.equal(undefined);
    expect(response.headers['keep-alive']).to.not.equal('timeout=99');
    expect(response.headers['x-request-id']).to.equal('req_123');
    expect(response.headers['content-encoding']).to.equal(undefined);
    expect(response.headers['x-accel-buffering']).to.equal('no');
    expect(response.text()).to.equal('{"ok":true}');
    // A provider whose answers' usage is read is asked for them uncompressed (a client's gzip would hide the usage from
    // the token budgets); the client still gets the answer as the provider sent it.
    expect(upstream.last().headers['accept-encoding']).to.equal('identity');
  });

  it('uses the provider’s declared host, whatever Host the client sends', async () => {
    await send('/v1/proxy/openai/v1/chat/completions', ['Host', 'evil.example', 'X-Forwarded-Host', 'evil.example']);
    expect(upstream.last().headers.host).to.equal(new URL(upstream.url).host);
    expect(upstream.last().headers['x-forwarded-host']).to.equal(undefined);
  });
});

describe('header hygiene, function by function', () => {
  const key = 'sk-unit/hygiene:0123456789abcdef';
  const credentials = credentialFormsOf([key, `Bearer ${key}`]);

  it('client headers: declared credential prefixes, fields named in Connection (any case, listed or repeated) and unset values stay behind', () => {
    const headers = {
      'x-goog-api-key': 'k', 'x-goog-user-project': 'p', 'x-kept': 'yes', 'x-unset': undefined,
      connection: 'close, X-Hop-Custom', 'x-hop-custom': 'hop',
    };
    expect(forwardableRequestHeaders(headers, new Set(), ['x-goog-'])).to.deep.equal({ 'x-kept': 'yes' });
    expect(forwardableRequestHeaders({ connection: ['x-hop-a', 'X-Hop-B'], 'x-hop-a': '1', 'x-hop-b': '2', 'x-kept': 'yes' } as never, new Set())).to.deep.equal({ 'x-kept': 'yes' });
    expect(forwardableRequestHeaders({ connection: 'Keep-Alive', 'x-kept': 'yes' }, new Set())).to.deep.equal({ 'x-kept': 'yes' });
  });

  it('response headers dropped whatever their value', () => {
    for (const name of ['proxy-authenticate', 'tollgate-app', 'ratelimit', 'set-cookie', 'alt-svc']) expect(isDroppedResponseHeader(name), name).to.equal(true);
    expect(isDroppedResponseHeader('x-proxy-')).to.equal(false);
    expect(isDroppedResponseHeader('content-type')).to.equal(false);
  });

  it('Retry-After: delta-seconds up to an hour (spaces around allowed), unless the gateway set its own', () => {
    const scrub = (value: string, gatewayRetryAfter = false) => {
      const headers: Record<string, string> = { 'retry-after': value };
      scrubResponseHeaders(headers, { gatewayRetryAfter });
      return headers['retry-after'];
    };
    expect(scrub(' 30 ')).to.equal(' 30 ');
    expect(scrub('3600')).to.equal('3600');
    expect(scrub('3601')).to.equal(undefined);
    expect(scrub('30s')).to.equal(undefined);
    expect(scrub('x30')).to.equal(undefined);
    expect(scrub('30', true)).to.equal(undefined);
  });

  it('the credential in a header value: redacted in place, in single and repeated headers', () => {
    const headers: Record<string, string | string[] | undefined> = {
      'www-authenticate': `Bearer ${key}`,
      link: [`<https://x/?key=${key}>`, '<https://x/next>'],
      'x-plain-list': ['a', 'b'],
      location: 'https://example.com/a%20b',
      'x-very-long-but-harmless-header-name-0123456789': 'fine',
      'x-unset': undefined,
    };
    scrubResponseHeaders(headers as never, { credentials });
    expect(headers).to.deep.equal({
      'www-authenticate': 'REDACTED',
      link: ['<https://x/?key=REDACTED>', '<https://x/next>'],
      'x-plain-list': ['a', 'b'],
      location: 'https://example.com/a%20b',
      'x-very-long-but-harmless-header-name-0123456789': 'fine',
      'x-unset': undefined,
    });
  });

  it('the credential in a form that cannot be redacted in place: the header goes (single or repeated)', () => {
    const twice = encodeURIComponent(encodeURIComponent(key));
    const thrice = encodeURIComponent(twice);
    const shortestBase64 = [...credentials.encoded!].sort((a, b) => a.length - b.length)[0]!;
    const headers: Record<string, string | string[]> = {
      location: `https://x/?next=${twice}`,
      'x-thrice': thrice,
      'x-list-encoded': ['fine', `next=${twice}`],
      'x-list-base64': ['fine', shortestBase64],
      'x-exact-base64': shortestBase64,
      [key.toLowerCase()]: '1',
      'x-kept': 'yes',
    };
    scrubResponseHeaders(headers as never, { credentials });
    expect(headers).to.deep.equal({ 'x-kept': 'yes' });
  });

  it('credential query parameters: by decoded name in any case, or by prefix; undecodable names go; the rest keep their order', () => {
    const names = new Set(['key', 'api_key']);
    expect(withoutCredentialParameters('a=1&Key=2&%61pi_key=3&b=4&x-goog-token=5&ke+y=6', names, ['x-goog-'])).to.equal('a=1&b=4&ke+y=6');
    expect(withoutCredentialParameters('a=1&%E0%A4%A=2&b=3', names, [])).to.equal('a=1&b=3');
    expect(withoutCredentialParameters('', names, [])).to.equal('');
  });
});
