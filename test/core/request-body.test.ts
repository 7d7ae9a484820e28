/**
 * Reading a whole request body (core/pipeline/request-body.ts), on streams driven by hand: once per request whoever
 * asks (a stage that read it leaves it for forward), the size limit before reading when the length is declared and at
 * the chunk that crosses it otherwise, the signed-body cap and the process budget of held bytes (reserved up front or
 * chunk by chunk, given back once when the response closes), and a client that leaves mid-body.
 */
import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { GatewayError, ProxyContext } from '../../core/contract';
import { SignedBodyBudget, bufferUnderBudget, closeIfBodyUnread, declaresBody, joinChunks, readRequestBody, readRequestBodyThen } from '../../core/pipeline/request-body';

type Headers = Record<string, string>;

function requestWith(headers: Headers): PassThrough & { headers: Headers; method: string; complete: boolean } {
  return Object.assign(new PassThrough(), { headers, method: 'POST', complete: false });
}

function contextFor(request: PassThrough, signs = false): { context: ProxyContext; response: EventEmitter } {
  const response = new EventEmitter();
  const context = new ProxyContext('r', request as never, response as never, { slug: 'bedrock', version: 'v1', providerPath: 'x', query: '' }, { slug: 'bedrock', authorizeNeedsBody: signs } as never, 0);
  return { context, response };
}

/** Calls readRequestBodyThen and records every call of `done`. */
function read(context: ProxyContext, limit: number): Array<[Error | undefined, Buffer | undefined]> {
  const calls: Array<[Error | undefined, Buffer | undefined]> = [];
  readRequestBodyThen(context, limit, (error, body) => calls.push([error, body]));
  return calls;
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('request bodies read whole (unit)', () => {
  it('declaresBody: a length above 0 or any Transfer-Encoding', () => {
    const declares = (headers: Headers) => declaresBody({ headers } as never);
    expect(declares({})).to.equal(false);
    expect(declares({ 'content-length': '0' })).to.equal(false);
    expect(declares({ 'content-length': '1' })).to.equal(true);
    expect(declares({ 'transfer-encoding': 'chunked' })).to.equal(true);
    expect(declares({ 'transfer-encoding': 'chunked', 'content-length': '0' })).to.equal(true);
  });

  it('joinChunks: one chunk is returned as is (no copy), several are joined', () => {
    const one = Buffer.from('abc');
    expect(joinChunks([one])).to.equal(one);
    expect(joinChunks([Buffer.from('ab'), Buffer.from('c')]).toString()).to.equal('abc');
    expect(joinChunks([]).length).to.equal(0);
  });

  it('reads the body once: kept on the context with its length, and handed to a second reader without reading again', async () => {
    const request = requestWith({ 'content-length': '11' });
    const { context } = contextFor(request);
    const first = read(context, 100);
    request.write('hello ');
    request.end('world');
    await tick();
    expect(first).to.have.length(1);
    expect(first[0]![0]).to.equal(undefined);
    expect(first[0]![1]!.toString()).to.equal('hello world');
    expect(context.requestBody).to.equal(first[0]![1]);
    expect(context.outcome.bytesIn).to.equal(11);
    // The stream has ended: a second reader gets the same buffer at once.
    const second = read(context, 100);
    expect(second).to.deep.equal([[undefined, first[0]![1]]]);
    expect(await readRequestBody(context, 100)).to.equal(first[0]![1]);
  });

  it('a declared length over the limit is refused before a byte is read; at the limit it is read', async () => {
    const over = requestWith({ 'content-length': '11' });
    const calls = read(contextFor(over).context, 10);
    expect(calls).to.have.length(1);
    const error = calls[0]![0] as GatewayError;
    expect([error.type, error.status, error.reason]).to.deep.equal(['invalidRequest', 413, 'body_too_large']);
    expect(error.message).to.include('10 bytes');
    expect(over.listenerCount('data'), 'nothing is read').to.equal(0);

    const exact = requestWith({ 'content-length': '10' });
    const fits = read(contextFor(exact).context, 10);
    exact.end('0123456789');
    await tick();
    expect(fits[0]![1]!.toString()).to.equal('0123456789');
  });

  it('without a length, the chunk that crosses the limit is refused and nothing more is read; the end then changes nothing', async () => {
    const request = requestWith({ 'transfer-encoding': 'chunked' });
    const { context } = contextFor(request);
    const calls = read(context, 10);
    request.write('01234');
    await tick();
    expect(calls).to.have.length(0);
    request.write('56789');
    await tick();
    expect(calls, 'exactly the limit is not over it').to.have.length(0);
    request.write('X');
    await tick();
    expect(calls).to.have.length(1);
    expect((calls[0]![0] as GatewayError).reason).to.equal('body_too_large');
    expect(request.listenerCount('data')).to.equal(0);
    request.end('more');
    request.emit('error', new Error('late'));
    await tick();
    expect(calls, 'done is called once').to.have.length(1);
    expect(context.requestBody).to.equal(undefined);
  });

  it('a client that leaves mid-body: done once with its error, and a late end changes nothing', async () => {
    const request = requestWith({ 'content-length': '100' });
    const { context } = contextFor(request);
    const calls = read(context, 1000);
    request.write('partial');
    const gone = new Error('aborted');
    request.emit('error', gone);
    request.emit('end');
    await tick();
    expect(calls).to.deep.equal([[gone, undefined]]);
    expect(context.requestBody).to.equal(undefined);
  });

  describe('bodies of providers that sign over the whole body', () => {
    it('are capped at the signed-body cap when it is below the limit (signed_body_too_large), declared or not', async () => {
      const budget = new SignedBodyBudget(8, 1000);
      const declared = requestWith({ 'content-length': '9' });
      const first = contextFor(declared, true);
      bufferUnderBudget(first.context, budget);
      const calls = read(first.context, 100);
      const error = calls[0]![0] as GatewayError;
      expect([error.status, error.reason]).to.deep.equal([413, 'signed_body_too_large']);
      expect(error.message).to.include('at most 8 bytes');
      expect(budget.used, 'nothing reserved for a refused body').to.equal(0);

      const streamed = requestWith({});
      const second = contextFor(streamed, true);
      bufferUnderBudget(second.context, budget);
      const chunked = read(second.context, 100);
      streamed.write('012345678');
      await tick();
      expect((chunked[0]![0] as GatewayError).reason).to.equal('signed_body_too_large');

      // A cap above the limit leaves the limit in force, with its own reason.
      const wide = new SignedBodyBudget(1000, 1000);
      const third = contextFor(requestWith({ 'content-length': '101' }), true);
      bufferUnderBudget(third.context, wide);
      expect((read(third.context, 100)[0]![0] as GatewayError).reason).to.equal('body_too_large');
      // Without authorizeNeedsBody the budget is not consulted.
      const plain = contextFor(requestWith({ 'content-length': '9' }));
      bufferUnderBudget(plain.context, budget);
      expect(read(plain.context, 100)).to.have.length(0);
    });

    it('reserve the declared length up front, refuse what does not fit (503 signed_body_budget_exhausted), and give it back once on close', async () => {
      const budget = new SignedBodyBudget(100, 150);
      const a = requestWith({ 'content-length': '100' });
      const first = contextFor(a, true);
      bufferUnderBudget(first.context, budget);
      const calls = read(first.context, 1000);
      expect(budget.used).to.equal(100);
      a.end(Buffer.alloc(100));
      await tick();
      expect(calls[0]![1]!.length).to.equal(100);

      const b = contextFor(requestWith({ 'content-length': '51' }), true);
      bufferUnderBudget(b.context, budget);
      const refused = read(b.context, 1000);
      const error = refused[0]![0] as GatewayError;
      expect([error.type, error.status, error.reason, error.retryAfterSeconds]).to.deep.equal(['serviceUnavailable', 503, 'signed_body_budget_exhausted', 1]);
      expect(budget.used).to.equal(100);
      expect(budget.refused).to.equal(1);

      const c = contextFor(requestWith({ 'content-length': '50' }), true);
      bufferUnderBudget(c.context, budget);
      read(c.context, 1000);
      expect(budget.used, 'exactly the budget fits').to.equal(150);

      first.response.emit('close');
      expect(budget.used).to.equal(50);
      first.response.emit('close');
      expect(budget.used, 'given back once').to.equal(50);
      c.response.emit('close');
      b.response.emit('close');
      expect(budget.used).to.equal(0);
    });

    it('without a declared length, reserve chunk by chunk and refuse the chunk that does not fit', async () => {
      const budget = new SignedBodyBudget(100, 10);
      const request = requestWith({ 'transfer-encoding': 'chunked' });
      const { context, response } = contextFor(request, true);
      bufferUnderBudget(context, budget);
      const calls = read(context, 1000);
      request.write('123456');
      await tick();
      expect(budget.used).to.equal(6);
      request.write('1234');
      await tick();
      expect(budget.used).to.equal(10);
      request.write('1');
      await tick();
      expect((calls[0]![0] as GatewayError).reason).to.equal('signed_body_budget_exhausted');
      expect(budget.used, 'the refused chunk took nothing').to.equal(10);
      response.emit('close');
      expect(budget.used).to.equal(0);
    });

    it('the budget never goes below zero', () => {
      const budget = new SignedBodyBudget(10, 10);
      expect(budget.take(4)).to.equal(true);
      budget.give(9);
      expect(budget.used).to.equal(0);
      expect(budget.take(10)).to.equal(true);
      expect(budget.take(1)).to.equal(false);
    });
  });

  it('closeIfBodyUnread: Connection: close on an answer whose request body has not all arrived', () => {
    const headers: Record<string, unknown> = {};
    closeIfBodyUnread({ complete: false } as never, headers);
    expect(headers).to.deep.equal({ connection: 'close' });
    const done: Record<string, unknown> = {};
    closeIfBodyUnread({ complete: true } as never, done);
    expect(done).to.deep.equal({});
  });
});
