/**
 * A hostile (or merely careless) provider cannot hand the operator's key to the app, nor speak for the gateway
 * (issue 16; protocol.md, "Errors": a provider response never carries a `Tollgate-*` header of its own, nor the injected
 * credential). The fake upstream answers in the providers' documented shapes and echoes what it received:
 * - Google Cloud Translation takes the key as `?key=` (https://cloud.google.com/translate/docs/reference/rest/v2/translate)
 *   and SerpApi as `?api_key=` (https://serpapi.com/search-api); a redirect carrying the query back in `Location`;
 * - OpenAI takes `Authorization: Bearer` and answers errors as `{"error":{"message",…}}`
 *   (https://platform.openai.com/docs/guides/error-codes); a `WWW-Authenticate` challenge (RFC 6750 §3) quoting the token;
 * - gateway-owned headers (`Tollgate-Error`, `Tollgate-Request-Id`, `RateLimit`, `RateLimit-Policy`, `Retry-After`).
 * Nothing of it reaches the client, redirects are never followed, and the gateway's own headers win.
 */
import { expect } from 'chai';
import zlib from 'node:zlib';
import type { IncomingHttpHeaders } from 'node:http';
import { FakeUpstream, respondChunks, type RecordedRequest } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest, type RawResponse } from '../support/http';

const OPENAI_KEY = 'sk-hostile-openai-0123456789abcdefXYZ';
const TRANSLATE_KEY = 'AIzaHostileTranslate0123456789abcdefgh';
/** With `/`, `+` and `=`: sent percent-encoded in the query, so the echo is encoded too. */
const SERPAPI_KEY = 'serp/api+0123456789hostile=0123456789abcdef0123456789abcdef';
const KEYS = [OPENAI_KEY, TRANSLATE_KEY, SERPAPI_KEY];

/** Every byte the client saw: status line facts, every header name and value, and the body. */
function everything(response: RawResponse): string {
  return `${JSON.stringify(response.headers)}\n${response.body.toString('latin1')}`;
}

function expectNoKey(response: RawResponse): void {
  const seen = everything(response);
  for (const key of KEYS) {
    expect(seen, 'the raw key reached the client').to.not.include(key);
    expect(seen, 'the percent-encoded key reached the client').to.not.include(encodeURIComponent(key));
    expect(seen.toLowerCase(), 'a part of the key reached the client').to.not.include(key.slice(-16).toLowerCase());
    expect(seen, 'the twice-encoded key reached the client').to.not.include(encodeURIComponent(encodeURIComponent(key)));
  }
}

function expectNoUpstreamGatewayHeaders(headers: IncomingHttpHeaders): void {
  expect(headers['tollgate-error']).to.equal(undefined);
  expect(headers['tollgate-request-id']).to.match(/^[0-9a-f-]{36}$/);
  expect(headers['tollgate-request-id']).to.not.equal('upstream-chosen-id');
  expect(String(headers['ratelimit'])).to.match(/^"device";r=\d+;t=\d+/);
  expect(String(headers['ratelimit-policy'])).to.match(/^"device";q=\d+;w=60/);
  expect(headers['retry-after']).to.equal(undefined);
  expect(headers['tollgate-debug']).to.equal(undefined);
}

describe('hostile upstream: credentials and gateway headers never pass', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, 'google-translate': upstream.url, serpapi: upstream.url } });
    device = await gateway.provision({ openai: OPENAI_KEY, 'google-translate': TRANSLATE_KEY, serpapi: SERPAPI_KEY });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());
  afterEach(() => {
    for (const key of KEYS) expect(gateway.logText()).to.not.include(key);
  });

  const redirectBack = (status: number) => (request: RecordedRequest, response: import('node:http').ServerResponse) => {
    const location = `${upstream.url}/elsewhere${request.url.slice(request.url.indexOf('?'))}`;
    const body = `<a href="${location}">Moved</a>`;
    response.writeHead(status, { location, 'content-type': 'text/html', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  };

  it('a 302 whose Location carries ?key= (Google Translate) is passed back redacted and never followed', async () => {
    upstream.respond(redirectBack(302));
    const response = await rawRequest(gateway.url, { method: 'GET', path: '/v1/proxy/google-translate/v2/languages?target=de', headers: device.headers });
    expect(upstream.last().url, 'the key did reach the upstream (the canary is live)').to.include(`key=${TRANSLATE_KEY}`);
    expect(response.status).to.equal(302);
    expect(upstream.requests, 'the redirect was not followed').to.have.length(1);
    expect(String(response.headers.location)).to.include('/elsewhere?target=de');
    expectNoKey(response);
  });

  it('a 301 whose Location carries ?api_key= (SerpApi) is passed back redacted and never followed', async () => {
    upstream.respond(redirectBack(301));
    const response = await rawRequest(gateway.url, { method: 'GET', path: '/v1/proxy/serpapi/v1/search.json?q=coffee', headers: device.headers });
    expect(upstream.last().url).to.include(`api_key=${encodeURIComponent(SERPAPI_KEY)}`);
    expect(response.status).to.equal(301);
    expect(upstream.requests).to.have.length(1);
    expectNoKey(response);
  });

  it('a Location with the key percent-encoded twice (a redirect inside a redirect) is removed', async () => {
    upstream.respond((_request, response) => {
      response.writeHead(307, { location: `${upstream.url}/x?next=${encodeURIComponent(`${upstream.url}/y?api_key=${encodeURIComponent(SERPAPI_KEY)}`)}`, 'content-length': 0 });
      response.end();
    });
    const response = await rawRequest(gateway.url, { method: 'GET', path: '/v1/proxy/serpapi/v1/search.json?q=tea', headers: device.headers });
    expect(response.status).to.equal(307);
    expect(response.headers.location).to.equal(undefined);
    expectNoKey(response);
  });

  it('a header the provider repeats passes with every value, and each field named by a repeated Connection is dropped', async () => {
    upstream.respond((_request, response) => {
      // Raw pairs: repeats stay separate fields on the wire (RFC 9110 §5.3).
      response.writeHead(200, [
        'content-type', 'application/json', 'content-length', '2',
        'x-multi', 'a', 'x-multi', 'b', 'x-multi', 'c',
        'connection', 'x-hop-a', 'connection', 'x-hop-b', 'x-hop-a', '1', 'x-hop-b', '2',
      ]);
      response.end('{}');
    });
    const response = await rawRequest(gateway.url, { method: 'GET', path: '/v1/proxy/openai/v1/models', headers: device.headers });
    expect(response.status).to.equal(200);
    expect(response.headers['x-multi']).to.equal('a, b, c');
    expect(response.headers['x-hop-a'], 'named by the first Connection field').to.equal(undefined);
    expect(response.headers['x-hop-b'], 'named by the second Connection field').to.equal(undefined);
  });

  it('an answer to a request whose body arrived whole keeps the connection open (Connection: close only for an unread body)', async () => {
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
      response.end('{}');
    });
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const response = await rawRequest(gateway.url, {
      method: 'POST',
      path: '/v1/proxy/openai/v1/chat/completions',
      headers: { ...device.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), connection: 'keep-alive' },
      body,
    });
    expect(response.status).to.equal(200);
    expect(upstream.last().body.toString()).to.equal(body);
    expect(response.headers.connection).to.not.equal('close');
  });

  it('a WWW-Authenticate challenge and other headers echoing the Authorization it got are redacted', async () => {
    upstream.respond((request, response) => {
      const authorization = String(request.headers.authorization);
      const body = JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } });
      response.writeHead(401, {
        'www-authenticate': `Bearer realm="api", error="invalid_token", error_description="${authorization} is not valid"`,
        'x-echo-authorization': authorization,
        'x-debug-request': `GET /v1/models key=${authorization.slice('Bearer '.length)}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      response.end(body);
    });
    const response = await rawRequest(gateway.url, { method: 'GET', path: '/v1/proxy/openai/v1/models', headers: device.headers });
    expect(upstream.last().headers.authorization).to.equal(`Bearer ${OPENAI_KEY}`);
    expect(response.status).to.equal(401);
    expect(String(response.headers['www-authenticate'])).to.match(/^Bearer realm="api", error="invalid_token"/);
    expectNoKey(response);
    // The provider's own error body (no key in it) passes unchanged, without Tollgate-Error.
    expect(response.json<{ error: { code: string } }>().error.code).to.equal('invalid_api_key');
    expect(response.headers['tollgate-error']).to.equal(undefined);
  });

  const echoingBodies: Array<[string, (request: RecordedRequest, response: import('node:http').ServerResponse) => void]> = [
    ['with Content-Length', (request, response) => {
      const body = JSON.stringify({ error: { message: `Incorrect API key provided: ${String(request.headers.authorization).slice(7)}.`, type: 'invalid_request_error' } });
      response.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    }],
    ['chunked, without Content-Length', (request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.write('{"error":{"message":"Bad request from ');
      response.write(String(request.headers.authorization));
      response.end('"}}');
    }],
    ['gzip-encoded', (request, response) => {
      const body = zlib.gzipSync(JSON.stringify({ error: { message: `Invalid key ${String(request.headers.authorization).slice(7)}` } }));
      response.writeHead(403, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length });
      response.end(body);
    }],
    ['as a 500 in text', (request, response) => {
      const body = `upstream failure; request headers were: authorization=${String(request.headers.authorization)}`;
      response.writeHead(500, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    }],
  ];
  for (const [name, responder] of echoingBodies) {
    it(`a small error body echoing the key (${name}) is redacted`, async () => {
      upstream.respond(responder);
      const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{}' });
      expect(response.status).to.be.at.least(400);
      expectNoKey(response);
      expect(response.text()).to.include('REDACTED');
      expect(Number(response.headers['content-length'])).to.equal(response.body.length);
    });
  }

  it('a 2xx stream is never buffered or rewritten', async () => {
    upstream.respond(respondChunks(['data: {"a":1}\n\n', 'data: [DONE]\n\n']));
    const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{"stream":true}' });
    expect(response.status).to.equal(200);
    expect(response.text()).to.equal('data: {"a":1}\n\ndata: [DONE]\n\n');
  });

  for (const status of [200, 429, 503]) {
    it(`upstream Tollgate-Error, Tollgate-Request-Id, RateLimit, RateLimit-Policy and Retry-After: 99999 on a ${status} do not pass; the gateway's own win`, async () => {
      upstream.respond((_request, response) => {
        const body = JSON.stringify({ ok: status === 200 });
        response.writeHead(status, {
          'tollgate-error': 'unauthorized',
          'tollgate-request-id': 'upstream-chosen-id',
          'tollgate-debug': 'x',
          ratelimit: '"device";r=0;t=99999',
          'ratelimit-policy': '"device";q=1;w=99999',
          'retry-after': '99999',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        });
        response.end(body);
      });
      const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{}' });
      expect(response.status).to.equal(status);
      expectNoUpstreamGatewayHeaders(response.headers);
    });
  }

  it('a modest upstream Retry-After on a 429 still passes (the provider’s own advice)', async () => {
    upstream.respond((_request, response) => {
      response.writeHead(429, { 'retry-after': '20', 'content-type': 'application/json', 'content-length': 2 });
      response.end('{}');
    });
    const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...device.headers, 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).to.equal(429);
    expect(response.headers['retry-after']).to.equal('20');
    expect(response.headers['tollgate-error']).to.equal(undefined);
  });
});
