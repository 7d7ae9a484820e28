/**
 * Lower findings of a hostile provider or client, each through a real gateway and a fake upstream answering in the
 * providers' documented shapes:
 * - an informational `103 Early Hints` (RFC 8297) before the final answer: the final answer passes whole;
 * - the injected key echoed back in the forms the first scrub missed: a coding the client asked for and the gateway
 *   cannot decode (`zstd`), stacked or nested gzip, an error body over 64 KiB or typed as a stream, `\u002d`-escaped
 *   JSON, a header name, base64 (docs/security.md, "Provider responses");
 * - a 1.8 MB hostile JSON answer: the usage tap parses nothing that long (JSON.parse is watched while the gateway, which
 *   runs in this process, reads it), and a long embeddings answer still has its usage read from its tail;
 * - a GET body, `X-Envoy-Original-Path` and the other override headers, and `?_method=` never reach the provider.
 * OpenAI error bodies: https://platform.openai.com/docs/guides/error-codes; embeddings:
 * https://platform.openai.com/docs/api-reference/embeddings/object; SerpApi takes the key as `?api_key=`
 * (https://serpapi.com/search-api).
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { StreamRedactor, credentialFormsOf } from '../../core/pipeline/response-scrub';
import { FakeUpstream, chatCompletion, respondJson, type RecordedRequest } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest, type RawResponse } from '../support/http';

const OPENAI_KEY = 'sk-hostile-openai-0123456789abcdefXYZ';
const SERPAPI_KEY = 'serpapi0123456789hostile0123456789abcdef';

/** The key at each base64 alignment, as a reader of any base64 string around it would find it. */
function base64Forms(value: string): string[] {
  const forms: string[] = [];
  for (let offset = 0; offset < 3; offset += 1) {
    const text = Buffer.concat([Buffer.alloc(offset), Buffer.from(value)]).toString('base64');
    forms.push(text.slice(offset ? 4 : 0, 4 * Math.floor((offset + value.length) / 3)));
  }
  return forms;
}

/** Every layer of a body a client could decode (gzip nested in gzip). */
function layers(body: Buffer): string[] {
  const out = [body.toString('latin1')];
  let current = body;
  for (let round = 0; round < 4 && current[0] === 0x1f && current[1] === 0x8b; round += 1) {
    current = zlib.gunzipSync(current);
    out.push(current.toString('latin1'));
  }
  return out;
}

/** JSON escapes undone, as a client's JSON reader sees the text. */
const unescaped = (text: string) => text.replace(/\\u([0-9a-fA-F]{4})/g, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)));

function expectNoKey(response: RawResponse, key: string): void {
  const names = Object.keys(response.headers).join('\n');
  const texts = [names, JSON.stringify(response.headers), ...layers(response.body)];
  for (const text of texts) {
    for (const seen of [text, unescaped(text)]) {
      expect(seen.toLowerCase(), 'the key reached the client').to.not.include(key.slice(-20).toLowerCase());
      for (const form of base64Forms(key)) expect(seen, 'the key reached the client in base64').to.not.include(form.slice(0, 20));
    }
  }
}

/** A request whose answer may be cut: what arrived, and whether it was cut. */
function cutRequest(baseUrl: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: Buffer; cut: boolean }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: url.hostname, port: url.port, method: 'POST', path, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks), cut: false }));
      response.on('error', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks), cut: true }));
      response.on('aborted', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks), cut: true }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('hostile upstream and client: lower findings', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  const chat = '/v1/proxy/openai/v1/chat/completions';
  let json: Record<string, string>;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, serpapi: upstream.url } });
    device = await gateway.provision({ openai: OPENAI_KEY, serpapi: SERPAPI_KEY }, { deviceLimitPerMinute: 100_000, appLimitPerMinute: 100_000 });
    json = { ...device.headers, 'content-type': 'application/json' };
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });
  beforeEach(() => upstream.reset());
  afterEach(() => {
    for (const key of [OPENAI_KEY, SERPAPI_KEY]) expect(gateway.logText()).to.not.include(key);
  });

  it('a 103 Early Hints before the answer: the final answer passes whole, and is recorded as sent', async () => {
    const answer = JSON.stringify(chatCompletion('after the hints', { prompt: 4, completion: 3 }));
    upstream.respond((_request, response) => {
      response.writeEarlyHints({ link: '</static/style.css>; rel=preload; as=style' }, () => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
        response.end(answer);
      });
    });
    const from = Date.now();
    const response = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{"model":"gpt-4o-mini"}' });
    expect(response.status).to.equal(200);
    expect(response.text()).to.equal(answer);
    const event = await gateway.recordedEvent(device.appId, from - 1000, (candidate) => candidate.status === 200);
    expect(event.outputTokens).to.equal(3);
  });

  describe('the key echoed back in an error answer', () => {
    const echo = (status: number, body: (key: string) => Buffer | string, headers: (key: string) => Record<string, string> = () => ({})) => (request: RecordedRequest, response: http.ServerResponse) => {
      const key = String(request.headers.authorization).slice('Bearer '.length);
      const bytes = typeof body(key) === 'string' ? Buffer.from(body(key) as string) : (body(key) as Buffer);
      response.writeHead(status, { 'content-type': 'application/json', 'content-length': bytes.length, ...headers(key) });
      response.end(bytes);
    };

    it('a client asking for zstd (which the gateway cannot decode) gets its Accept-Encoding cut to codings it can', async () => {
      upstream.respond(respondJson(200, { search_metadata: { status: 'Success' } }));
      await rawRequest(gateway.url, { path: '/v1/proxy/serpapi/v1/search.json?q=tea', headers: { ...device.headers, 'accept-encoding': 'zstd, gzip;q=0.8, br' } });
      expect(upstream.last().headers['accept-encoding']).to.equal('gzip;q=0.8, br');
      await rawRequest(gateway.url, { path: '/v1/proxy/serpapi/v1/search.json?q=tea', headers: { ...device.headers, 'accept-encoding': 'zstd' } });
      expect(upstream.last().headers['accept-encoding']).to.equal('identity');
      await rawRequest(gateway.url, { path: '/v1/proxy/serpapi/v1/search.json?q=tea', headers: { ...device.headers, 'accept-encoding': '*' } });
      expect(upstream.last().headers['accept-encoding']).to.equal('identity');
    });

    it('an error body in a coding the gateway cannot decode (zstd) is withheld; the status passes', async () => {
      upstream.respond(echo(401, (key) => `{"error":{"message":"bad key ${key}"}}`, () => ({ 'content-encoding': 'zstd' })));
      const response = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{}' });
      expect(response.status).to.equal(401);
      expect(response.body.length).to.equal(0);
      expect(response.headers['content-encoding']).to.equal(undefined);
      expectNoKey(response, OPENAI_KEY);
    });

    it('a gzip error body longer than the gateway reads whole (64 KiB compressed) is withheld; the status passes', async () => {
      // Incompressible padding keeps the compressed body past 64 KiB, with the key at its start.
      const padding = randomBytes(150 * 1024).toString('base64');
      upstream.respond(echo(401, (key) => zlib.gzipSync(`{"error":{"message":"bad key ${key}","padding":"${padding}"}}`), () => ({ 'content-encoding': 'gzip' })));
      const response = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{}' });
      expect(response.status).to.equal(401);
      expect(response.body.length).to.equal(0);
      expectNoKey(response, OPENAI_KEY);
    });

    it('stacked gzip (Content-Encoding: gzip, gzip) and gzip nested in gzip are decoded and redacted', async () => {
      const body = (key: string) => JSON.stringify({ error: { message: `Incorrect API key provided: ${key}` } });
      upstream.respond(echo(401, (key) => zlib.gzipSync(zlib.gzipSync(body(key))), () => ({ 'content-encoding': 'gzip, gzip' })));
      const stacked = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{}' });
      expect(stacked.status).to.equal(401);
      expectNoKey(stacked, OPENAI_KEY);
      expect(stacked.text()).to.include('REDACTED');

      upstream.respond(echo(401, (key) => zlib.gzipSync(zlib.gzipSync(body(key))), () => ({ 'content-encoding': 'gzip' })));
      const nested = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{}' });
      expect(nested.status).to.equal(401);
      expectNoKey(nested, OPENAI_KEY);
      expect(nested.text()).to.include('REDACTED');
      expect(Number(nested.headers['content-length'])).to.equal(nested.body.length);
    });

    it('an error body over 64 KiB, with or without Content-Length, is masked in place as it streams', async () => {
      const long = (key: string) => `{"error":{"message":"${'x'.repeat(70_000)} ${key} ${'y'.repeat(30_000)}","detail":"${key}"}}`;
      upstream.respond(echo(400, long));
      const declared = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{}' });
      expect(declared.status).to.equal(400);
      expectNoKey(declared, OPENAI_KEY);
      expect(declared.text()).to.include('REDACTED');
      expect(Number(declared.headers['content-length'])).to.equal(declared.body.length);
      expect(declared.body.length).to.equal(long(OPENAI_KEY).length);

      // Chunked, with the key split across two writes.
      upstream.respond((request, response) => {
        const key = String(request.headers.authorization).slice('Bearer '.length);
        response.writeHead(500, { 'content-type': 'text/plain' });
        response.write('z'.repeat(80_000) + key.slice(0, 10));
        setTimeout(() => response.end(`${key.slice(10)} and the end`), 20);
      });
      const chunked = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{}' });
      expect(chunked.status).to.equal(500);
      expectNoKey(chunked, OPENAI_KEY);
      expect(chunked.text()).to.match(/REDACTED.* and the end$/);
    });

    it('an error answer typed as a stream is masked too', async () => {
      upstream.respond((request, response) => {
        const key = String(request.headers.authorization).slice('Bearer '.length);
        response.writeHead(401, { 'content-type': 'text/event-stream' });
        response.write(`data: {"error":"invalid key ${key.slice(0, 5)}`);
        setTimeout(() => response.end(`${key.slice(5)}"}\n\n`), 20);
      });
      const response = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{"stream":true}' });
      expect(response.status).to.equal(401);
      expectNoKey(response, OPENAI_KEY);
      expect(response.text()).to.match(/^data: \{"error":"invalid key REDACTED/);
    });

    it('the key with JSON \\u escapes is redacted in a small body, and cuts a long one', async () => {
      const escape = (key: string) => [...key].map((character) => (character === '-' || /\d/.test(character) ? `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}` : character)).join('');
      upstream.respond(echo(401, (key) => `{"error":{"message":"Incorrect API key: ${escape(key)}"}}`));
      const since = Date.now();
      const small = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{}' });
      expect(small.status).to.equal(401);
      expectNoKey(small, OPENAI_KEY);
      expect(JSON.parse(small.text()).error.message).to.equal('Incorrect API key: REDACTED');
      // The usage row counts the bytes the client received (the redacted body), not the provider's.
      const row = await gateway.recordedEvent(device.appId, since, (event) => event.status === 401);
      expect(row.bytesOut).to.equal(small.body.length);

      upstream.respond(echo(401, (key) => `{"error":{"message":"${'p'.repeat(100_000)} ${escape(key)}"}}`));
      const long = await cutRequest(gateway.url, chat, json, '{}');
      expect(long.cut, 'the long answer was cut').to.equal(true);
      expect(unescaped(long.body.toString('latin1'))).to.not.include(OPENAI_KEY.slice(-20));
    });

    it('a cut answer aborts the upstream request at once and is recorded as truncated with its status', async () => {
      const escape = (key: string) => [...key].map((character) => (character === '-' ? '\\u002d' : character)).join('');
      const started = Date.now();
      // A long error answer streamed without an end: 100,000 bytes (relayed as they stream), the key escaped, then nothing.
      upstream.respond((request, response) => {
        const key = String(request.headers.authorization ?? '').replace(/^Bearer /, '');
        response.writeHead(401, { 'content-type': 'application/json' });
        response.write(`{"error":{"message":"${'p'.repeat(100_000)}`);
        setTimeout(() => response.write(` ${escape(key)} `), 50);
      });
      const long = await cutRequest(gateway.url, chat, json, '{}');
      expect(long.cut, 'the client\'s answer ends cut').to.equal(true);
      expect(unescaped(long.body.toString('latin1'))).to.not.include(OPENAI_KEY.slice(-20));
      const sent = upstream.last();
      await sent.closed;
      expect(sent.aborted, 'the gateway stopped reading the provider\'s answer').to.equal(true);
      const event = await gateway.recordedEvent(device.appId, started, (candidate) => candidate.truncated === true && candidate.status === 401);
      expect(event.bytesOut, 'what reached the client before the cut').to.be.below(long.body.length + 1);
    });

    it('a header named after the key, and the key in base64 in a header or an error body, do not pass', async () => {
      upstream.respond(
        echo(
          403,
          (key) => JSON.stringify({ error: { message: 'denied', debug: Buffer.from(`{"headers":{"authorization":"Bearer ${key}"}}`).toString('base64') } }),
          (key) => ({ [key]: '1', 'x-debug-auth': Buffer.from(`Bearer ${key}`).toString('base64'), 'x-debug-url': Buffer.from(`https://x/?k=${key}`).toString('base64url') }),
        ),
      );
      const response = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{}' });
      expect(response.status).to.equal(403);
      expectNoKey(response, OPENAI_KEY);
      expect(response.headers[OPENAI_KEY.toLowerCase()]).to.equal(undefined);
      expect(response.headers['x-debug-auth']).to.equal(undefined);
      expect(response.headers['x-debug-url']).to.equal(undefined);
      expect(JSON.parse(response.text()).error.message).to.equal('denied');
    });
  });

  describe('long JSON answers: bounded work for the usage tap', () => {
    let parse: typeof JSON.parse;
    let longest = 0;
    beforeEach(() => {
      parse = JSON.parse;
      longest = 0;
      JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
        if (typeof text === 'string') longest = Math.max(longest, text.length);
        return parse(text, reviver);
      }) as typeof JSON.parse;
    });
    afterEach(() => {
      JSON.parse = parse;
    });

    it('a 1.8 MB hostile JSON answer passes byte for byte, and nothing that long is parsed', async () => {
      const hostile = Buffer.from(`{"\\u0075sage":{"prompt_tokens":1},"x":[${Array(225_000).fill('{"a":1}').join(',')}]}`);
      upstream.respond((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': hostile.length });
        response.end(hostile);
      });
      const from = Date.now();
      const response = await rawRequest(gateway.url, { method: 'POST', path: chat, headers: json, body: '{"model":"gpt-4o-mini"}' });
      expect(response.status).to.equal(200);
      expect(response.body.equals(hostile)).to.equal(true);
      await gateway.recordedEvent(device.appId, from - 1000, (event) => event.status === 200 && event.bytesOut === hostile.length);
      expect(longest, 'the longest string JSON.parse was given').to.be.at.most(64 * 1024);
    });

    it('a 1 MB embeddings answer still has its usage read from its tail', async () => {
      const data = Array.from({ length: 700 }, (_, index) => ({ object: 'embedding', index, embedding: Array(160).fill(0.0123456) }));
      const answer = JSON.stringify({ object: 'list', data, model: 'text-embedding-3-small', usage: { prompt_tokens: 321, total_tokens: 321 } });
      expect(answer.length).to.be.greaterThan(1_000_000);
      upstream.respond((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
        response.end(answer);
      });
      const from = Date.now();
      const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/embeddings', headers: json, body: '{"model":"text-embedding-3-small","input":"hi"}' });
      expect(response.status).to.equal(200);
      const event = await gateway.recordedEvent(device.appId, from - 1000, (candidate) => candidate.inputTokens === 321);
      expect(event.model).to.equal('text-embedding-3-small');
      expect(longest).to.be.at.most(64 * 1024);
    });
  });

  it('a GET body, X-Envoy-Original-Path and the other override headers, and ?_method= never reach the provider', async () => {
    const response = await rawRequest(gateway.url, {
      method: 'GET',
      path: '/v1/proxy/openai/v1/models?_method=DELETE&limit=2&_METHOD=POST',
      headers: {
        ...device.headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength('{"purpose":"fine-tune","a"}')),
        'x-envoy-original-path': '/v1/organization/admin_api_keys',
        'x-envoy-retry-on': '5xx',
        'x-original-url': '/v1/files',
        'x-rewrite-url': '/v1/files',
        'x-http-method-override': 'DELETE',
        'x-http-method': 'DELETE',
        'x-method-override': 'DELETE',
      },
      body: '{"purpose":"fine-tune","a"}',
    });
    expect(response.status).to.equal(200);
    const request = upstream.last();
    expect(request.method).to.equal('GET');
    expect(request.url).to.equal('/v1/models?limit=2');
    expect(request.body.length, 'no body went upstream').to.equal(0);
    expect(request.headers['content-length']).to.equal(undefined);
    expect(request.headers['transfer-encoding']).to.equal(undefined);
    for (const name of ['x-envoy-original-path', 'x-envoy-retry-on', 'x-original-url', 'x-rewrite-url', 'x-http-method-override', 'x-http-method', 'x-method-override']) {
      expect(request.headers[name], name).to.equal(undefined);
    }
  });
});

describe('the stream masker (fast-check): however a long error body is cut into chunks', () => {
  const key = 'sk-proj-Ab3+/=key0123456789zz';
  const forms = credentialFormsOf([key, `Bearer ${key}`]);
  const pieces = [key, encodeURIComponent(key), JSON.stringify(key).slice(1, -1), Buffer.from(`x${key}`).toString('base64'), 'plain text ', '{"error":', '\\u00e9', '\n', 'é'];

  it('no form of the key passes, and the length is kept', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...pieces), { minLength: 1, maxLength: 40 }), fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 20 }), (parts, sizes) => {
        const body = Buffer.from(parts.join(''), 'utf8');
        const redactor = new StreamRedactor(forms);
        const out: Buffer[] = [];
        let at = 0;
        for (let index = 0; at < body.length; index += 1) {
          const size = sizes[index % sizes.length]!;
          const piece = redactor.push(body.subarray(at, at + size));
          expect(piece, 'no escaped form in these pieces: never cut').to.not.equal(null);
          out.push(piece!);
          at += size;
        }
        out.push(redactor.flush()!);
        const sent = Buffer.concat(out);
        expect(sent.length).to.equal(body.length);
        const text = sent.toString('latin1');
        for (const form of [...forms, ...(forms.encoded ?? [])]) expect(text).to.not.include(form);
        // What was not a form of the key passes byte for byte.
        if (!parts.some((part) => part.includes('key0123') || part.includes('a2V5MDEy') || part.includes('tleTAxMj') || part.includes('rZXkwMT'))) expect(sent.equals(body)).to.equal(true);
      }),
      { numRuns: 300, seed: 20261205 },
    );
  });

  it('a form found only once JSON escapes are undone cuts the stream', () => {
    const escaped = [...key].map((character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    const redactor = new StreamRedactor(forms);
    const results = [redactor.push(Buffer.from(`{"error":"${escaped.slice(0, 30)}`)), redactor.push(Buffer.from(`${escaped.slice(30)}"}`))];
    expect(results.includes(null) || redactor.flush() === null).to.equal(true);
  });
});

