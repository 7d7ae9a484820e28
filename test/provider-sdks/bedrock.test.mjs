/**
 * Official AWS SDK (`@aws-sdk/client-bedrock-runtime`) through the gateway: Converse, ConverseStream (AWS binary
 * event-stream) and InvokeModel. The SDK signs its request to the gateway with the app's own (dummy) AWS credentials;
 * the gateway must re-sign for AWS with the operator's credentials, and none of the client's signing material
 * (`Authorization`, `x-amz-security-token`, `x-amz-date`, `x-amz-content-sha256`) may reach AWS.
 * Wire formats: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html (POST
 * /model/{modelId}/converse), https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
 * (POST /model/{modelId}/converse-stream, application/vnd.amazon.eventstream),
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html (POST /model/{modelId}/invoke),
 * https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-auth-using-authorization-header.html (SigV4), and
 * https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream (event-stream frames).
 */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import aws4 from 'aws4';
import { startSuite, CLIENT_KEY, assertUpstream, assertNoLeak, only, respondJson, respondChunks, assert } from './harness.mjs';

const GATEWAY_AWS = { accessKeyId: 'AKIAGATEWAYEXAMPLE00', secretAccessKey: 'gateway-secret-access-key-0123456789', region: 'us-east-1' };
const CLIENT_AWS = { accessKeyId: 'AKIACLIENTEXAMPLE000', secretAccessKey: CLIENT_KEY, sessionToken: `client-session-${CLIENT_KEY}` };
const MODEL = 'anthropic.claude-3-haiku-20240307-v1:0';

/** One AWS event-stream message: prelude (lengths + CRC), string headers, payload, message CRC. */
function eventFrame(eventType, payload) {
  const headers = Buffer.concat(Object.entries({ ':event-type': eventType, ':content-type': 'application/json', ':message-type': 'event' }).map(([name, value]) => {
    const nameBytes = Buffer.from(name);
    const valueBytes = Buffer.from(value);
    const length = Buffer.alloc(2);
    length.writeUInt16BE(valueBytes.length);
    return Buffer.concat([Buffer.from([nameBytes.length]), nameBytes, Buffer.from([7]), length, valueBytes]);
  }));
  const body = Buffer.from(JSON.stringify(payload));
  const total = 12 + headers.length + body.length + 4;
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(total, 0);
  prelude.writeUInt32BE(headers.length, 4);
  const preludeCrc = Buffer.alloc(4);
  preludeCrc.writeUInt32BE(crc32(prelude));
  const withoutCrc = Buffer.concat([prelude, preludeCrc, headers, body]);
  const messageCrc = Buffer.alloc(4);
  messageCrc.writeUInt32BE(crc32(withoutCrc));
  return Buffer.concat([withoutCrc, messageCrc]);
}

/** Re-signs what AWS received with the operator's credentials and checks the Authorization header matches. */
function assertSignedByGateway(request) {
  const authorization = String(request.headers.authorization);
  assert.match(authorization, new RegExp(`^AWS4-HMAC-SHA256 Credential=${GATEWAY_AWS.accessKeyId}/\\d{8}/us-east-1/bedrock/aws4_request, SignedHeaders=`));
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)[1].split(';');
  const headers = Object.fromEntries(signedHeaders.map((name) => [name, String(request.headers[name])]));
  const resigned = aws4.sign({ host: request.headers.host, method: request.method, path: request.url, service: 'bedrock', region: 'us-east-1', headers, body: request.body }, GATEWAY_AWS);
  assert.equal(resigned.headers.Authorization ?? resigned.headers.authorization, authorization, 'the signature is not the gateway credentials\' signature over what AWS received');
  assert.equal(request.headers['x-amz-security-token'], undefined, "the client's x-amz-security-token reached AWS");
  // The app's clock runs a day behind (systemClockOffset below): AWS refuses a signature dated more than 5 minutes off
  // (https://docs.aws.amazon.com/IAM/latest/UserGuide/signing-elements.html), so the date must be the gateway's own.
  const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(String(request.headers['x-amz-date']));
  assert.ok(date, 'x-amz-date missing');
  const signedAt = Date.UTC(+date[1], +date[2] - 1, +date[3], +date[4], +date[5], +date[6]);
  assert.ok(Math.abs(signedAt - Date.now()) < 5 * 60_000, `the client's x-amz-date reached AWS: ${request.headers['x-amz-date']}`);
  // The app's x-amz-content-sha256 (UNSIGNED-PAYLOAD) must not stand in for the hash of what AWS received.
  const hash = request.headers['x-amz-content-sha256'];
  assert.ok(hash === undefined || hash === createHash('sha256').update(request.body).digest('hex'), `the client's x-amz-content-sha256 reached AWS: ${hash}`);
}

describe('official SDK: @aws-sdk/client-bedrock-runtime', function () {
  let suite;
  let client;
  before(async function () {
    suite = await startSuite({ bedrock: '' }, { secrets: { bedrock: JSON.stringify(GATEWAY_AWS) } });
    client = new BedrockRuntimeClient({ region: 'us-east-1', endpoint: suite.base('bedrock', 'v1'), credentials: CLIENT_AWS, maxAttempts: 1, systemClockOffset: -86_400_000, requestHandler: new NodeHttpHandler() });
    // (The client defaults to HTTP/2; the gateway speaks HTTP/1.1 to apps, like most reverse proxies.)
    client.middlewareStack.add((next) => async (args) => {
      Object.assign(args.request.headers, suite.headers, { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' });
      return next(args);
    }, { step: 'build', name: 'tollgateHeaders' });
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  it('Converse (POST /model/{modelId}/converse), re-signed with the gateway credentials', async function () {
    suite.upstream.on(/converse/, respondJson(200, { output: { message: { role: 'assistant', content: [{ text: 'Hello from the fake' }] } }, stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 4, totalTokens: 5 }, metrics: { latencyMs: 1 } }));
    const answer = await client.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }));
    assert.equal(answer.output.message.content[0].text, 'Hello from the fake');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: `/model/${encodeURIComponent(MODEL)}/converse` });
    assertSignedByGateway(request);
  });

  it('ConverseStream (AWS event-stream frames, parsed by the SDK)', async function () {
    const frames = [
      eventFrame('messageStart', { role: 'assistant' }),
      eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hel' } }),
      eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'lo' } }),
      eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
      eventFrame('messageStop', { stopReason: 'end_turn' }),
      eventFrame('metadata', { usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 }, metrics: { latencyMs: 1 } }),
    ];
    suite.upstream.on(/converse-stream/, respondChunks(frames, { contentType: 'application/vnd.amazon.eventstream' }));
    const answer = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'Hi' }] }] }));
    let text = '';
    let stop;
    for await (const event of answer.stream) {
      if (event.contentBlockDelta) text += event.contentBlockDelta.delta.text;
      if (event.messageStop) stop = event.messageStop.stopReason;
    }
    assert.equal(text, 'Hello');
    assert.equal(stop, 'end_turn');
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: `/model/${encodeURIComponent(MODEL)}/converse-stream` });
    assertSignedByGateway(request);
  });

  it('InvokeModel (POST /model/{modelId}/invoke, embeddings body)', async function () {
    suite.upstream.on(/invoke/, respondJson(200, { embedding: [0.5, -0.25], inputTextTokenCount: 1 }));
    const answer = await client.send(new InvokeModelCommand({ modelId: 'amazon.titan-embed-text-v2:0', contentType: 'application/json', accept: 'application/json', body: JSON.stringify({ inputText: 'Hi' }) }));
    assert.deepEqual(JSON.parse(Buffer.from(answer.body).toString()).embedding, [0.5, -0.25]);
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: `/model/${encodeURIComponent('amazon.titan-embed-text-v2:0')}/invoke` });
    assertSignedByGateway(request);
    assertNoLeak(request);
  });
});
