/**
 * Token budgets by reservation, on one node (in-process store), against a real gateway and a fake OpenAI on loopback.
 * A device has a 1,000-token day budget and every answer reports 2,000 tokens: the second request is refused
 * `token_budget` whatever encoding the client asks for, whether it streams with or without `include_usage`, and of 10
 * requests sent at once only the reservations that fit are admitted. A minute budget charges the minute a request
 * started. Unknown usage (an answer compressed against the gateway's request, a stream that reports nothing) is charged
 * the reservation. The fleet case is test/scale/token-budget-reservations.test.ts.
 *
 * Formats: chat completion https://platform.openai.com/docs/api-reference/chat/object; streaming chunks and
 * `stream_options.include_usage` https://platform.openai.com/docs/api-reference/chat-streaming/streaming (every chunk
 * then carries `usage: null`, and one more chunk, with `choices: []`, carries the usage).
 */
import { expect } from 'chai';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { FakeUpstream, sseEvents, type Responder } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest, type RawResponse } from '../support/http';
import { BYTES_PER_INPUT_TOKEN } from '../../core/pipeline/token-reservation';

const BODY = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
/** What BODY reserves: its input estimate plus its output limit. */
const RESERVED = Math.ceil(Buffer.byteLength(BODY) / BYTES_PER_INPUT_TOKEN) + 100;
const COMPLETION = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1500, completion_tokens: 500, total_tokens: 2000 } });

/** zstd's frame magic (RFC 8878 §3.1.1) and some bytes: the gateway never decodes, so they need not be a real frame. */
const ZSTD_LIKE = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), Buffer.from(COMPLETION)]);

function encode(body: string, encoding: string): Buffer {
  if (encoding === 'gzip') return gzipSync(body);
  if (encoding === 'br') return brotliCompressSync(body);
  if (encoding === 'gzip, gzip') return gzipSync(gzipSync(body));
  if (encoding === 'deflate') return deflateSync(body);
  if (encoding === 'zstd') return ZSTD_LIKE;
  return Buffer.from(body);
}

/** A provider that honours `Accept-Encoding` (compresses only when asked), as the real ones do. */
const honest: Responder = (request, response) => {
  const asked = String(request.headers['accept-encoding'] ?? '');
  const encoding = ['br', 'gzip', 'zstd'].find((name) => asked.includes(name));
  response.writeHead(200, { 'content-type': 'application/json', ...(encoding ? { 'content-encoding': encoding } : {}) });
  response.end(encode(COMPLETION, encoding ?? 'identity'));
};

/** A hostile provider that compresses whatever it was asked. */
const compressing = (encoding: string): Responder => (_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding });
  response.end(encode(COMPLETION, encoding));
};

const chunk = (content: string, withUsageNull: boolean) => ({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content } }], ...(withUsageNull ? { usage: null } : {}) });
const USAGE_CHUNK = { id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 1500, completion_tokens: 500, total_tokens: 2000 } };

/** An OpenAI stream: with `include_usage` in the body, `usage: null` on each chunk and a last usage-only chunk. */
const streaming: Responder = (request, response) => {
  const body = JSON.parse(request.body.toString()) as { stream_options?: { include_usage?: boolean } };
  const usage = body.stream_options?.include_usage === true;
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  const events = [chunk('Hel', usage), chunk('lo', usage), ...(usage ? [USAGE_CHUNK] : [])];
  for (const frame of sseEvents(events)) response.write(frame);
  response.end();
};

describe('token budgets by reservation (one node)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  let devices = 0;
  const device = (settings: Record<string, unknown> = { deviceDailyTokens: 1000 }) => gateway.provision({ openai: `sk-reserve-${(devices += 1)}-0123456789abcdef` }, settings);

  const chat = async (who: Provisioned, headers: Record<string, string> = {}, body = BODY): Promise<RawResponse & { reason?: string }> => {
    const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...who.headers, 'content-type': 'application/json', ...headers }, body });
    // The settlement is made when the answer is reported; let it land before the next request.
    await new Promise((resolve) => setImmediate(resolve));
    const reason = response.status === 429 ? (response.json() as { error: { reason: string } }).error.reason : undefined;
    return Object.assign(response, { reason });
  };

  for (const asked of [undefined, 'gzip', 'br', 'zstd', 'gzip, deflate, br, zstd']) {
    it(`refuses the second request when the client asks for ${asked ?? 'no encoding'}: the provider is asked for identity`, async () => {
      const spender = await device();
      upstream.respond(honest);
      const first = await chat(spender, asked ? { 'accept-encoding': asked } : {});
      expect(first.status).to.equal(200);
      expect(upstream.last().headers['accept-encoding']).to.equal('identity');
      expect(first.headers['content-encoding']).to.equal(undefined);
      expect(first.text()).to.equal(COMPLETION);
      const second = await chat(spender, asked ? { 'accept-encoding': asked } : {});
      expect(second.status).to.equal(429);
      expect(second.reason).to.equal('token_budget');
      expect(upstream.requests).to.have.length(1);
    });
  }

  for (const encoding of ['gzip', 'br', 'deflate', 'zstd', 'gzip, gzip']) {
    it(`charges the reservation when a hostile provider answers ${encoding} anyway; the client gets its bytes as sent`, async () => {
      // Room for exactly two reservations: were an unreadable answer charged nothing, the third would be admitted too.
      const spender = await device({ deviceDailyTokens: RESERVED * 2 + RESERVED - 1 });
      upstream.respond(compressing(encoding));
      for (let index = 0; index < 2; index += 1) {
        const answer = await chat(spender, { 'accept-encoding': 'gzip, deflate, br, zstd' });
        expect(answer.status).to.equal(200);
        expect(answer.headers['content-encoding']).to.equal(encoding);
        expect(answer.body.equals(encode(COMPLETION, encoding))).to.equal(true);
      }
      expect(await chat(spender)).to.include({ status: 429, reason: 'token_budget' });
      expect(upstream.requests).to.have.length(2);
    });
  }

  it('a stream without include_usage: the gateway asks for usage, the client gets exactly the stream it asked for', async () => {
    const spender = await device();
    upstream.respond(streaming);
    const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    const first = await chat(spender, {}, body);
    expect(first.status).to.equal(200);
    expect(JSON.parse(upstream.last().body.toString())).to.deep.equal({ ...JSON.parse(body), stream_options: { include_usage: true } });
    // Everything the provider sent but the usage-only chunk, byte for byte.
    expect(first.text()).to.equal(sseEvents([chunk('Hel', true), chunk('lo', true)]).join(''));
    expect(first.text()).to.not.contain('"total_tokens"');
    expect(await chat(spender, {}, body)).to.include({ status: 429, reason: 'token_budget' });
    expect(upstream.requests).to.have.length(1);
  });

  it('a stream with include_usage: the body goes up byte for byte and the client gets the usage chunk it asked for', async () => {
    const spender = await device();
    upstream.respond(streaming);
    const body = '{"model":"gpt-4o-mini","max_tokens":100,"stream":true,"stream_options":{"include_usage":true},"messages":[]}';
    const first = await chat(spender, {}, body);
    expect(first.status).to.equal(200);
    expect(upstream.last().body.toString()).to.equal(body);
    expect(first.text()).to.equal(sseEvents([chunk('Hel', true), chunk('lo', true), USAGE_CHUNK]).join(''));
    expect(await chat(spender, {}, body)).to.include({ status: 429, reason: 'token_budget' });
  });

  it('a stream whose stream_options is null, an array, or holds a non-object include_usage: the provider gets it replaced, the rest as sent', async () => {
    upstream.respond(streaming);
    const cases: Array<[client: string, upstream: string]> = [
      ['{"model":"gpt-4o-mini","stream":true,"stream_options":null,"messages":[]}', '{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[]}'],
      ['{"model":"gpt-4o-mini","stream":true,"stream_options":[],"messages":[]}', '{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[]}'],
      ['{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":{"on":true}},"messages":[]}', '{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[]}'],
      ['{"model":"gpt-4o-mini","stream":true,"messages":[]}', '{"model":"gpt-4o-mini","stream":true,"messages":[],"stream_options":{"include_usage":true}}'],
    ];
    for (const [client, expected] of cases) {
      // A budget applies (the gateway asks for usage only then), with room for the route's default output limit.
      const spender = await device({ deviceDailyTokens: 100_000 });
      const answer = await chat(spender, {}, client);
      expect(answer.status, client).to.equal(200);
      expect(upstream.last().body.toString(), client).to.equal(expected);
      expect(upstream.last().headers['content-length'], client).to.equal(String(Buffer.byteLength(expected)));
      // The usage chunk the gateway asked for is not relayed.
      expect(answer.text(), client).to.equal(sseEvents([chunk('Hel', true), chunk('lo', true)]).join(''));
    }
  });

  it('a stream that reports nothing although asked is charged its reservation', async () => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 100, stream: true, messages: [] });
    const reserved = Math.ceil(Buffer.byteLength(body) / BYTES_PER_INPUT_TOKEN) + 100;
    const spender = await device({ deviceDailyTokens: reserved * 3 - 1 });
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(sseEvents([chunk('x', false)]).join(''));
    });
    expect((await chat(spender, {}, body)).status).to.equal(200);
    expect((await chat(spender, {}, body)).status).to.equal(200);
    expect(await chat(spender, {}, body)).to.include({ status: 429, reason: 'token_budget' });
  });

  it('10 requests at once: only the reservations that fit are admitted, then the reported usage refuses the next', async () => {
    const spender = await device();
    const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 300, messages: [{ role: 'user', content: 'Hi' }] });
    const fit = Math.floor(1000 / (Math.ceil(Buffer.byteLength(body) / BYTES_PER_INPUT_TOKEN) + 300));
    expect(fit, 'the scenario needs some to fit and some not').to.be.within(1, 9);
    // The provider holds every answer until the gateway has decided all 10.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    upstream.respond(async (request, response) => {
      await gate;
      honest(request, response, undefined as never);
    });
    // The answers that came back while the admitted requests were still held upstream.
    const refused: RawResponse[] = [];
    const pending = Array.from({ length: 10 }, () =>
      rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...spender.headers, 'content-type': 'application/json' }, body }).then((answer) => {
        refused.push(answer);
        return answer;
      }),
    );
    // Every request decided: answered by the gateway, or reached the provider.
    while (refused.length + upstream.requests.length < 10) await new Promise((resolve) => setTimeout(resolve, 10));
    const early = [...refused];
    release();
    const answers = await Promise.all(pending);
    expect(early.map((answer) => answer.status)).to.deep.equal(Array(10 - fit).fill(429));
    expect(answers.filter((answer) => answer.status === 200)).to.have.length(fit);
    for (const answer of answers.filter((candidate) => candidate.status === 429)) expect((answer.json() as { error: { reason: string } }).error.reason).to.equal('token_budget');
    expect(upstream.requests).to.have.length(fit);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await chat(spender)).to.include({ status: 429, reason: 'token_budget' });
  });

  it('gives the reservation back when the provider refuses the request', async () => {
    const spender = await device({ deviceDailyTokens: RESERVED });
    upstream.respond((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end('{"error":{"message":"bad","type":"invalid_request_error"}}');
    });
    for (let index = 0; index < 3; index += 1) expect((await chat(spender)).status).to.equal(400);
    upstream.respond(honest);
    expect((await chat(spender)).status).to.equal(200);
    expect(await chat(spender)).to.include({ status: 429, reason: 'token_budget' });
  });

  it('an answer that is not a 2xx passes as sent, usage and all, and no usage is read from it', async () => {
    // A provider refusing a stream with a body that happens to hold a usage chunk: neither the usage filter (which takes
    // the usage chunk out of a 2xx stream the client asked without it) nor the usage reading applies.
    const sent = sseEvents([chunk('Hel', true), USAGE_CHUNK]).join('');
    const body = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    for (const status of [300, 400, 429, 500]) {
      const spender = await device({ deviceDailyTokens: 100_000 });
      const since = Date.now();
      upstream.respond((_request, response) => {
        response.writeHead(status, { 'content-type': 'text/event-stream' });
        response.end(sent);
      });
      const answer = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...spender.headers, 'content-type': 'application/json' }, body });
      expect(answer.status).to.equal(status);
      expect(answer.text(), `${status}: byte for byte`).to.equal(sent);
      const event = await gateway.recordedEvent(spender.appId, since, (candidate) => candidate.status === status);
      expect([event.inputTokens, event.outputTokens], `${status}: no usage read`).to.deep.equal([null, null]);
    }
    // The same stream as a 2xx: filtered and read.
    const spender = await device({ deviceDailyTokens: 100_000 });
    const since = Date.now();
    upstream.respond((_request, response) => {
      // With its length declared: the client gets fewer bytes than the provider sent, so the length must go.
      response.writeHead(201, { 'content-type': 'text/event-stream', 'content-length': String(Buffer.byteLength(sent)) });
      response.end(sent);
    });
    const answer = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...spender.headers, 'content-type': 'application/json' }, body });
    expect(answer.text()).to.equal(sseEvents([chunk('Hel', true)]).join(''));
    expect(answer.headers['content-length']).to.equal(undefined);
    const event = await gateway.recordedEvent(spender.appId, since, (candidate) => candidate.status === 201);
    expect([event.inputTokens, event.outputTokens]).to.deep.equal([1500, 500]);
  });

  it('a route without declared body fields is not read: media reserve 1 token, a JSON body its length; both settle to the usage', async () => {
    // A 64 KiB "recording" on the transcription route (https://platform.openai.com/docs/api-reference/audio/createTranscription):
    // counted as bytes / 4 it would need 16,384 tokens and be refused; it reserves 1 and goes up byte for byte.
    const spender = await device({ deviceDailyTokens: 100 });
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ text: 'hello', usage: { type: 'tokens', input_tokens: 60, output_tokens: 10, total_tokens: 70 } }));
    });
    const audio = Buffer.alloc(64 * 1024, 7);
    const transcribed = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/audio/transcriptions', headers: { ...spender.headers, 'content-type': 'audio/mpeg' }, body: audio });
    await new Promise((resolve) => setImmediate(resolve));
    expect(transcribed.status).to.equal(200);
    expect(upstream.last().body.equals(audio)).to.equal(true);
    // 70 of 100 charged: a JSON body of 124 bytes on an undeclared route reserves 31 tokens and no longer fits.
    const prompt = JSON.stringify({ model: 'gpt-image-1', prompt: 'x'.repeat(89) });
    expect(Buffer.byteLength(prompt)).to.equal(124);
    const image = () => rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/images/generations', headers: { ...spender.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(prompt)) }, body: prompt });
    const refused = await image();
    expect(refused.status).to.equal(429);
    expect((refused.json() as { error: { reason: string } }).error.reason).to.equal('token_budget');
    expect(upstream.requests).to.have.length(1);
  });

  it('refuses a request whose reservation alone is larger than the budget, saying so', async () => {
    const spender = await device({ deviceDailyTokens: 50 });
    const refused = await chat(spender);
    expect(refused).to.include({ status: 429, reason: 'token_budget' });
    expect((refused.json() as { error: { message: string } }).error.message).to.contain(`reserves ${RESERVED} tokens`);
    expect(upstream.requests).to.have.length(0);
  });
});

describe('token budgets by reservation: a minute budget charges the minute a request started (a clock the test moves)', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  const minuteStart = Math.floor(Date.now() / 60_000) * 60_000;
  let now = minuteStart + 50_000;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, clock: () => now });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('an answer that ends in the next minute is charged to the minute it started in', async () => {
    const spender = await gateway.provision({ openai: 'sk-reserve-minute-0123456789abcdef' }, { deviceMinuteTokens: 1000 });
    // The answer takes 20 s: it starts in minute M and ends in M + 1, reporting 2,000 tokens.
    upstream.respond((request, response) => {
      now += 20_000;
      honest(request, response, undefined as never);
    });
    const send = async () => {
      const response = await rawRequest(gateway.url, { method: 'POST', path: '/v1/proxy/openai/v1/chat/completions', headers: { ...spender.headers, 'content-type': 'application/json' }, body: BODY });
      await new Promise((resolve) => setImmediate(resolve));
      return response.status;
    };
    expect(await send()).to.equal(200);
    expect(now).to.equal(minuteStart + 70_000);
    // Minute M + 1 holds nothing of it: the next request is admitted (charged to the minute it ended in, it would not be).
    upstream.respond((request, response) => honest(request, response, undefined as never));
    expect(await send()).to.equal(200);
    // Minute M holds the 2,000: a request dated in M is refused.
    now = minuteStart + 55_000;
    expect(await send()).to.equal(429);
    expect(upstream.requests).to.have.length(2);
  });
});
