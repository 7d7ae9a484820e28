/**
 * The proxy route's bookkeeping (core/routes/proxy.ts, `ProxyExchange`): on a real HTTP server, whatever order the
 * pipeline settling and the response closing come in, observers hear about a request once and the route's `onClosed`
 * (the access line, the body watch) runs once, after them.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayError, type PipelineObserver, type ProxyContext } from '../../core/contract';
import type { Pipeline } from '../../core/pipeline/pipeline';
import type { ProviderRegistry } from '../../core/registry/provider-registry';
import { createProxyHandler, type ProxyExchange } from '../../core/routes/proxy';

interface OneRouteGateway {
  readonly url: string;
  /** What observers and `onClosed` heard so far, in order. */
  readonly events: readonly string[];
  /** The events once `onClosed` ran, and long enough after it for a second report to show, were there one. */
  reported(): Promise<readonly string[]>;
}

/** Waits long enough for a second report to show, were there one. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** Runs `exercise` against a gateway of one route whose pipeline is `run`, then stops it. */
async function withGateway(run: (context: ProxyContext) => void | Promise<void>, exercise: (gateway: OneRouteGateway) => Promise<void>): Promise<void> {
  const events: string[] = [];
  let closed = false;
  let waiting: (() => void) | undefined;
  const observer: PipelineObserver = {
    onResponse: (context) => events.push(`response ${context.outcome.status}`),
    onError: (_context, error) => events.push(`error ${(error as GatewayError).reason}`),
  };
  const registry = { find: (slug: string) => (slug === 'fake' ? { manifest: { slug: 'fake', versions: { v1: {} } } } : undefined) } as unknown as ProviderRegistry;
  const handler = createProxyHandler({
    registry,
    pipeline: { run } as unknown as Pipeline,
    observers: [observer],
    clock: Date.now,
    onClosed: (exchange: ProxyExchange) => {
      closed = true;
      events.push(`closed ${exchange.context === undefined ? 'without context' : 'with context'}`);
      waiting?.();
    },
  });
  const server = http.createServer((request, response) => handler(request, response, 'request-1'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await exercise({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      events,
      async reported() {
        if (!closed) await new Promise<void>((resolve) => (waiting = resolve));
        await settle();
        return events;
      },
    });
  } finally {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}

describe('proxy route bookkeeping (ProxyExchange)', () => {
  it('a stage that answers: observers once, then onClosed once', () =>
    withGateway(
      (context) => {
        context.response.writeHead(200, { 'content-type': 'text/plain' });
        context.response.end('ok');
      },
      async (gateway) => {
        const response = await fetch(`${gateway.url}/v1/proxy/fake/v1/anything`);
        expect(await response.text()).to.equal('ok');
        expect(await gateway.reported()).to.deep.equal(['response 200', 'closed with context']);
      },
    ));

  it('a pipeline that answers later (a promise): observers once, then onClosed once', () =>
    withGateway(
      async (context) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        context.response.writeHead(201);
        context.response.end();
      },
      async (gateway) => {
        const response = await fetch(`${gateway.url}/v1/proxy/fake/v1/anything`, { method: 'POST', body: 'x' });
        expect(response.status).to.equal(201);
        expect(await gateway.reported()).to.deep.equal(['response 201', 'closed with context']);
      },
    ));

  it('a refusal: the protocol error goes out, the error and the response are heard once each, then onClosed', () =>
    withGateway(
      () => {
        throw new GatewayError('rateLimited', 'slow down', { retryAfterSeconds: 3, reason: 'rate_limited_device' });
      },
      async (gateway) => {
        const response = await fetch(`${gateway.url}/v1/proxy/fake/v1/anything`);
        expect(response.status).to.equal(429);
        expect(response.headers.get('tollgate-request-id')).to.equal('request-1');
        expect(((await response.json()) as { error: { reason: string } }).error.reason).to.equal('rate_limited_device');
        expect(await gateway.reported()).to.deep.equal(['error rate_limited_device', 'response 429', 'closed with context']);
      },
    ));

  it('a client gone while the pipeline was still working: reported once, when the pipeline settles', async () => {
    let fail: (error: unknown) => void = () => undefined;
    let markStarted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    await withGateway(
      () =>
        new Promise<void>((_resolve, reject) => {
          fail = reject;
          markStarted();
        }),
      async (gateway) => {
        const request = http.request(`${gateway.url}/v1/proxy/fake/v1/anything`, { method: 'POST', headers: { 'content-length': '10' } });
        request.on('error', () => undefined);
        request.write('12345');
        await started;
        request.destroy();
        // The response closed with the client while the pipeline is still pending: nothing is reported yet.
        await settle();
        expect(gateway.events).to.deep.equal([]);
        fail(new GatewayError('invalidRequest', 'the client went away', { status: 499, reason: 'client_aborted' }));
        expect(await gateway.reported()).to.deep.equal(['error client_aborted', 'response 499', 'closed with context']);
      },
    );
  });

  it('a refused route (unknown provider): the error goes out and onClosed runs once, without a context or observers', () =>
    withGateway(
      () => {
        throw new Error('the pipeline must not run');
      },
      async (gateway) => {
        const response = await fetch(`${gateway.url}/v1/proxy/nobody/v1/anything`);
        expect(response.status).to.equal(404);
        expect(await gateway.reported()).to.deep.equal(['closed without context']);
      },
    ));
});
