/**
 * Providers that sign each request over its whole body (AWS Signature Version 4, Amazon Bedrock:
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html, the payload hash is part of
 * the canonical request) make the gateway hold the body in memory before it can send a byte upstream. Unbounded, two
 * devices uploading large bodies took a gateway from 154 to 913 MB. So such a body is capped on its own
 * (`TOLLGATE_SIGNED_BODY_MAX_BYTES`, refused 413 `signed_body_too_large` before it is read whole), and the bodies held
 * at once share a process budget (`TOLLGATE_SIGNED_BODY_BUDGET_BYTES`, refused 503 `signed_body_budget_exhausted` with
 * `Retry-After`), given back when each request ends, whichever way it ended. The fake upstream answers Converse
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html).
 */
import { expect } from 'chai';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest } from '../support/http';
import { firstStatus, head, lastJsonBody, openRaw, type RawExchange } from '../support/raw-socket';
import { metricSample, scrapeMetrics } from '../support/metrics';

const CREDENTIALS = JSON.stringify({ accessKeyId: 'AKIASIGNEDBODIES0001', secretAccessKey: 'signed/bodies/0123456789abcdefghij' });
const CAP = 256 * 1024;
const BUDGET = 3 * CAP;
const PATH = '/v1/proxy/bedrock/v1/model/anthropic.claude-3-haiku/converse';
const converseAnswer = {
  output: { message: { role: 'assistant', content: [{ text: 'ok' }] } },
  stopReason: 'end_turn',
  usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 },
};

describe('signed request bodies: capped each, and under a process budget', function () {
  this.timeout(20_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  const open: RawExchange[] = [];

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({
      upstreams: { bedrock: upstream.url },
      env: { TOLLGATE_SIGNED_BODY_MAX_BYTES: String(CAP), TOLLGATE_SIGNED_BODY_BUDGET_BYTES: String(BUDGET) },
    });
    device = await gateway.provision({ bedrock: CREDENTIALS });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.reset();
    upstream.respond(respondJson(200, converseAnswer));
  });
  afterEach(() => {
    for (const exchange of open.splice(0)) exchange.socket.destroy();
  });

  const held = async (): Promise<number> => metricSample(await scrapeMetrics(gateway), 'tollgate_signed_body_buffered_bytes');
  async function heldBecomes(expected: number): Promise<void> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const value = await held();
      if (value === expected) return;
      if (Date.now() > deadline) throw new Error(`tollgate_signed_body_buffered_bytes stayed ${value}, expected ${expected}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Opens a request whose head says `headers` and sends `bytes` of its body, nothing more. */
  async function startUpload(headers: Record<string, string | number>, bytes: number): Promise<RawExchange> {
    const exchange = await openRaw(gateway.url);
    open.push(exchange);
    exchange.socket.write(head('POST', PATH, { host: '127.0.0.1', 'content-type': 'application/json', ...device.headers, ...headers }));
    if (bytes > 0) exchange.socket.write(Buffer.alloc(bytes, 0x20));
    return exchange;
  }

  it('a body at most the cap is signed and sent whole', async () => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'x'.repeat(CAP - 200) }] }] });
    const response = await rawRequest(gateway.url, { method: 'POST', path: PATH, headers: { ...device.headers, 'content-type': 'application/json' }, body });
    expect(response.status).to.equal(200);
    expect(upstream.last().body.toString()).to.equal(body);
    expect(String(upstream.last().headers.authorization)).to.match(/^AWS4-HMAC-SHA256 Credential=AKIASIGNEDBODIES0001\//);
    await heldBecomes(0);
  });

  it('a declared length over the cap is refused 413 before the body is read', async () => {
    // Only the head and 10 bytes are sent: the answer cannot wait for the body.
    const exchange = await startUpload({ 'content-length': CAP + 1 }, 10);
    await exchange.waitFor(/\r\n\r\n\{.*\}$/s);
    expect(firstStatus(exchange.text())).to.equal(413);
    expect(lastJsonBody(exchange.text()).error.reason).to.equal('signed_body_too_large');
    expect(upstream.requests).to.have.length(0);
    expect(await held()).to.equal(0);
  });

  it('a chunked body is cut at the cap, refused 413 without reading the rest', async () => {
    const exchange = await startUpload({ 'transfer-encoding': 'chunked' }, 0);
    const piece = Buffer.alloc(64 * 1024, 0x20);
    for (let sent = 0; sent <= CAP; sent += piece.length) exchange.socket.write(Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]));
    // The body never ends: the refusal came from the count, not from the end.
    await exchange.waitFor(/\r\n\r\n[\s\S]*"signed_body_too_large"/);
    expect(firstStatus(exchange.text())).to.equal(413);
    expect(upstream.requests).to.have.length(0);
    exchange.socket.destroy();
    await heldBecomes(0);
  });

  it('bodies held at once past the budget are refused 503 with Retry-After; the budget comes back when they end', async () => {
    // Three bodies of the cap each, each sent but for its last byte: the budget is spent while they are read.
    const uploads = await Promise.all([0, 1, 2].map(() => startUpload({ 'content-length': CAP }, CAP - 1)));
    await heldBecomes(BUDGET);
    const refused = await rawRequest(gateway.url, { method: 'POST', path: PATH, headers: { ...device.headers, 'content-type': 'application/json' }, body: '{"messages":[]}' });
    expect(refused.status).to.equal(503);
    expect(refused.json<{ error: { reason: string } }>().error.reason).to.equal('signed_body_budget_exhausted');
    expect(Number(refused.headers['retry-after'])).to.be.at.least(1);
    expect(metricSample(await scrapeMetrics(gateway), 'tollgate_signed_body_refusals_total')).to.be.at.least(1);
    // A chunked one (no declared length) is refused as its first bytes arrive.
    const chunked = await startUpload({ 'transfer-encoding': 'chunked' }, 0);
    chunked.socket.write('5\r\nhello\r\n');
    await chunked.waitFor(/"signed_body_budget_exhausted"/);
    expect(firstStatus(chunked.text())).to.equal(503);
    expect(upstream.requests, 'nothing went upstream').to.have.length(0);

    // One client goes away mid-body, one finishes: both give their share back.
    uploads[0]!.socket.destroy();
    uploads[1]!.socket.write(' ');
    await uploads[1]!.waitFor(/^HTTP\/1\.1 \d{3}/);
    await heldBecomes(CAP);
    uploads[2]!.socket.destroy();
    await heldBecomes(0);

    // With the budget back, a body passes again.
    const passed = await rawRequest(gateway.url, { method: 'POST', path: PATH, headers: { ...device.headers, 'content-type': 'application/json' }, body: '{"messages":[]}' });
    expect(passed.status).to.equal(200);
    await heldBecomes(0);
  });

  it('a body refused by the upstream or the gateway after it was read gives its share back too', async () => {
    upstream.respond(respondJson(400, { message: 'ValidationException' }));
    const response = await rawRequest(gateway.url, { method: 'POST', path: PATH, headers: { ...device.headers, 'content-type': 'application/json' }, body: JSON.stringify({ messages: [], pad: 'y'.repeat(CAP - 100) }) });
    expect(response.status).to.equal(400);
    await heldBecomes(0);
  });
});
