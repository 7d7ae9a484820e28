/**
 * Streaming: bytes reach the client as the provider sends them (no buffering), a client that goes away aborts the
 * upstream request, binary and JSON-array streams pass through intact, and a stream cut mid-way ends the client's
 * response and is recorded as truncated.
 */
import { expect } from 'chai';
import http from 'node:http';
import { FakeUpstream, respondChunks, sseEvents } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

/** Opens a streaming request and hands back the response as it arrives. */
function openStream(url: string, headers: Record<string, string>, body: string): Promise<http.IncomingMessage & { request: http.ClientRequest }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, agent: false }, (response) => {
      resolve(Object.assign(response, { request }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

function nextChunk(response: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    response.once('data', resolve);
    response.once('error', reject);
  });
}

function readAll(response: http.IncomingMessage): Promise<{ body: Buffer; aborted: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let aborted = false;
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('aborted', () => (aborted = true));
    response.on('error', () => (aborted = true));
    response.on('close', () => resolve({ body: Buffer.concat(chunks), aborted: aborted || !response.complete }));
  });
}

describe('streaming', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, anthropic: upstream.url, gemini: upstream.url } });
    device = await gateway.provision({ openai: 'sk-stream-0123456789abcdef', anthropic: 'sk-ant-stream-0123456789', gemini: 'AIza-stream-0123456789' });
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('delivers the first SSE event while the provider is still sending (the provider waits for the client to see it)', async () => {
    let clientSawFirstEvent: () => void = () => undefined;
    const firstEventSeen = new Promise<void>((resolve) => (clientSawFirstEvent = resolve));
    const events = sseEvents([{ choices: [{ delta: { content: 'Hel' } }] }, { choices: [{ delta: { content: 'lo' } }] }]);
    upstream.respond(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      response.write(events[0]);
      // The rest is sent only after the client has received the first event: a buffering gateway would deadlock here.
      await firstEventSeen;
      response.write(events[1]);
      response.end(events[2]);
    });
    const response = await openStream(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, device.headers, '{"stream":true}');
    expect(response.statusCode).to.equal(200);
    expect(response.headers['content-type']).to.equal('text/event-stream; charset=utf-8');
    expect(response.headers['x-accel-buffering']).to.equal('no');
    const first = await nextChunk(response);
    expect(first.toString()).to.equal(events[0]);
    const rest = readAll(response);
    clientSawFirstEvent();
    const { body, aborted } = await rest;
    expect(aborted).to.equal(false);
    expect(Buffer.concat([first, body]).toString()).to.equal(events.join(''));
  });

  it('passes Anthropic SSE with event names and ping comments through byte for byte', async () => {
    const stream = [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1"}}\n\n',
      ': ping\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ];
    upstream.respond(respondChunks(stream, { intervalMs: 5 }));
    const response = await openStream(`${gateway.url}/v1/proxy/anthropic/v1/messages`, device.headers, '{"stream":true}');
    const { body } = await readAll(response);
    expect(body.toString()).to.equal(stream.join(''));
  });

  it('passes the Gemini JSON-array stream (no alt=sse) through intact', async () => {
    const chunks = ['[{"candidates":[{"content":{"parts":[{"text":"A"}]}}]}', '\r\n,', '{"candidates":[{"content":{"parts":[{"text":"B"}]}}]}', '\r\n]'];
    upstream.respond(respondChunks(chunks, { contentType: 'application/json; charset=UTF-8', intervalMs: 5 }));
    const response = await openStream(`${gateway.url}/v1/proxy/gemini/v1beta/models/gemini-pro:streamGenerateContent`, device.headers, '{}');
    const { body } = await readAll(response);
    expect(response.headers['content-type']).to.equal('application/json; charset=UTF-8');
    expect(body.toString()).to.equal(chunks.join(''));
    expect(JSON.parse(body.toString())).to.have.length(2);
  });

  it('passes binary audio from /audio/speech through byte for byte with its content type', async () => {
    const audio = [Buffer.from([0xff, 0xfb, 0x90, 0x64, 0x00]), Buffer.alloc(32 * 1024, 0xaa), Buffer.from([0x00, 0x0d, 0x0a, 0x1a])];
    upstream.respond(respondChunks(audio, { contentType: 'audio/mpeg', intervalMs: 5 }));
    const response = await openStream(`${gateway.url}/v1/proxy/openai/v1/audio/speech`, device.headers, '{"model":"tts-1","input":"hi","voice":"alloy"}');
    const { body } = await readAll(response);
    expect(response.headers['content-type']).to.equal('audio/mpeg');
    expect(body.equals(Buffer.concat(audio))).to.equal(true);
  });

  it('aborts the upstream request when the client disconnects mid-stream, and records the request as truncated', async () => {
    const since = Date.now();
    upstream.respond(respondChunks(sseEvents([{ n: 1 }], { done: false }), { holdOpen: true }));
    const response = await openStream(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, device.headers, '{"stream":true,"left":1}');
    await nextChunk(response);
    const upstreamRequest = upstream.last();
    expect(upstreamRequest.aborted).to.equal(false);
    response.request.destroy();
    await upstreamRequest.closed;
    expect(upstreamRequest.aborted).to.equal(true);
    const row = await gateway.recordedEvent(device.appId, since, (event) => event.status === 200 && event.bytesOut === Buffer.byteLength(sseEvents([{ n: 1 }], { done: false }).join('')));
    expect(row.truncated, 'the client left before the end').to.equal(true);
  });

  it('ends the client response when the provider resets mid-stream, and records the truncation', async () => {
    upstream.respond(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: {"partial":true}\n\n');
      await new Promise((resolve) => setTimeout(resolve, 20));
      response.socket?.destroy();
    });
    const stream = await openStream(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, device.headers, '{"stream":true}');
    const { body, aborted } = await readAll(stream);
    expect(body.toString()).to.equal('data: {"partial":true}\n\n');
    expect(aborted).to.equal(true);
    const truncated = await gateway.recordedEvent(device.appId, 0, (event) => event.truncated);
    expect(truncated.provider).to.equal('openai');
    expect(truncated.bytesOut).to.equal(Buffer.byteLength('data: {"partial":true}\n\n'));
  });
});
