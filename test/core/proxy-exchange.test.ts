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
import { classifyUpstreamError } from '../../core/pipeline/forward';

interface OneRouteGateway {
  readonly url: string;
  /** What observers and `onClosed` heard so far, in order, and the observer failures handed to `onObserverError`. */
  readonly events: readonly string[];
  /** The events once `onClosed` ran `closes` times (default 1), and long enough after for one more report to show. */
  reported(closes?: number): Promise<readonly string[]>;
}

/** How a test gateway's reporting misbehaves. */
interface Faults {
  /** Observers heard before the recording one (e.g. one that throws). */
  readonly observers?: readonly PipelineObserver[];
  /** `onClosed` throws (after recording) for the requests this picks. */
  readonly closeThrows?: (exchange: ProxyExchange) => boolean;
}

/** Waits long enough for a second report to show, were there one. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** Runs `exercise` against a gateway of one route whose pipeline is `run`, then stops it. */
async function withGateway(run: (context: ProxyContext) => void | Promise<void>, exercise: (gateway: OneRouteGateway) => Promise<void>, faults: Faults = {}): Promise<void> {
  const events: string[] = [];
  let closed = 0;
  let wanted = 1;
  let waiting: (() => void) | undefined;
  const observer: PipelineObserver = {
    onResponse: (context) => events.push(`response ${context.outcome.status}`),
    onError: (_context, error) => events.push(`error ${(error as GatewayError).reason}`),
  };
  const registry = { find: (slug: string) => (slug === 'fake' ? { manifest: { slug: 'fake', versions: { v1: {} } } } : undefined) } as unknown as ProviderRegistry;
  const handler = createProxyHandler({
    registry,
    pipeline: { run } as unknown as Pipeline,
    observers: [...(faults.observers ?? []), observer],
    clock: Date.now,
    onClosed: (exchange: ProxyExchange) => {
      closed += 1;
      events.push(`closed ${exchange.context === undefined ? 'without context' : 'with context'}`);
      if (closed >= wanted) waiting?.();
      if (faults.closeThrows?.(exchange)) throw new Error(`access line failed for ${exchange.request.url}`);
    },
    onObserverError: (error, hook) => events.push(`failed ${hook}: ${(error as Error).message}`),
  });
  const server = http.createServer((request, response) => handler(request, response, 'request-1'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await exercise({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      events,
      async reported(closes = 1) {
        wanted = closes;
        if (closed < closes) await new Promise<void>((resolve) => (waiting = resolve));
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

/** An observer that throws from both hooks for the requests whose path `fails` picks. */
function throwingObserver(fails: (path: string) => boolean): PipelineObserver {
  return {
    onResponse(context) {
      if (fails(context.request.url ?? '')) throw new Error(`observer bug on ${context.request.url}`);
    },
    onError(context) {
      if (fails(context.request.url ?? '')) throw new Error(`onError bug on ${context.request.url}`);
    },
  };
}

/** A pipeline that answers at once: 200, `ok`. */
const answerOk = (context: ProxyContext): void => {
  context.response.writeHead(200, { 'content-type': 'text/plain' });
  context.response.end('ok');
};

/** A pipeline that refuses: the device's rate limit, retry after 3 s. */
const refuseRateLimited = (): never => {
  throw new GatewayError('rateLimited', 'slow down', { retryAfterSeconds: 3, reason: 'rate_limited_device' });
};

/** Fetches `path` from the gateway and checks the `ok` answer. */
async function fetchOk(gateway: OneRouteGateway, path: string): Promise<void> {
  const response = await fetch(`${gateway.url}${path}`);
  expect(await response.text()).to.equal('ok');
}

/** Fetches `path`, refused by {@link refuseRateLimited}: checks the protocol error and returns the response. */
async function fetchRefused(gateway: OneRouteGateway, path: string): Promise<Response> {
  const response = await fetch(`${gateway.url}${path}`);
  expect(response.status).to.equal(429);
  expect(((await response.clone().json()) as { error: { reason: string } }).error.reason).to.equal('rate_limited_device');
  return response;
}

describe('proxy route bookkeeping (ProxyExchange)', () => {
  it('a stage that answers: observers once, then onClosed once', () =>
    withGateway(answerOk, async (gateway) => {
      await fetchOk(gateway, '/v1/proxy/fake/v1/anything');
      expect(await gateway.reported()).to.deep.equal(['response 200', 'closed with context']);
    }));

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
      refuseRateLimited,
      async (gateway) => {
        const response = await fetchRefused(gateway, '/v1/proxy/fake/v1/anything');
        expect(response.headers.get('tollgate-request-id')).to.equal('request-1');
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

  describe('an observer or the access line that throws (a plugin\'s bug)', () => {
    it('is skipped for that request: the answer, the other observers and onClosed go on, and the failure is handed over', () =>
      withGateway(
        answerOk,
        async (gateway) => {
          await fetchOk(gateway, '/v1/proxy/fake/v1/anything');
          expect(await gateway.reported()).to.deep.equal(['failed onResponse: observer bug on /v1/proxy/fake/v1/anything', 'response 200', 'closed with context']);
        },
        { observers: [throwingObserver(() => true)] },
      ));

    it('on a refusal too: the protocol error still goes out whole, and every hook is heard once', () =>
      withGateway(
        refuseRateLimited,
        async (gateway) => {
          const response = await fetchRefused(gateway, '/v1/proxy/fake/v1/refused');
          expect(response.headers.get('retry-after')).to.equal('3');
          expect(await gateway.reported()).to.deep.equal([
            'failed onError: onError bug on /v1/proxy/fake/v1/refused',
            'error rate_limited_device',
            'failed onResponse: observer bug on /v1/proxy/fake/v1/refused',
            'response 429',
            'closed with context',
          ]);
        },
        { observers: [throwingObserver(() => true)] },
      ));

    it('requests finished in the same turn: one request\'s failing observer and access line leave the others reported', async () => {
      const count = 6;
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      let arrived = 0;
      await withGateway(
        async (context) => {
          arrived += 1;
          if (arrived === count) release();
          await released;
          context.response.writeHead(200, { 'content-type': 'text/plain' });
          context.response.end(context.request.url);
        },
        async (gateway) => {
          const answers = await Promise.all(Array.from({ length: count }, (_, index) => fetch(`${gateway.url}/v1/proxy/fake/v1/r${index}`).then((response) => response.text())));
          expect(answers).to.deep.equal(Array.from({ length: count }, (_, index) => `/v1/proxy/fake/v1/r${index}`));
          const events = await gateway.reported(count);
          expect(events.filter((event) => event === 'response 200')).to.have.length(count);
          expect(events.filter((event) => event === 'closed with context')).to.have.length(count);
          expect(events.filter((event) => event.startsWith('failed'))).to.deep.equal(['failed onResponse: observer bug on /v1/proxy/fake/v1/r2', 'failed onClosed: access line failed for /v1/proxy/fake/v1/r4']);
        },
        { observers: [throwingObserver((path) => path.endsWith('/r2'))], closeThrows: (exchange) => exchange.request.url!.endsWith('/r4') },
      );
    });
  });
});

describe('upstream failures before the answer head, as typed errors (classifyUpstreamError)', () => {
  // undici's error codes: https://undici.nodejs.org/#/docs/api/Errors
  const undiciError = (code: string, cause?: string) => Object.assign(new Error(code), { code, ...(cause ? { cause: Object.assign(new Error(cause), { code: cause }) } : {}) });
  const shape = (error: GatewayError) => ({ type: error.type, status: error.status, reason: error.reason, retryAfterSeconds: error.retryAfterSeconds });

  it('names undici timeouts as the gateway deadlines they carry', () => {
    expect(shape(classifyUpstreamError(undiciError('UND_ERR_CONNECT_TIMEOUT'), 1024))).to.deep.equal({ type: 'upstreamUnavailable', status: 502, reason: 'connect_timeout', retryAfterSeconds: undefined });
    expect(shape(classifyUpstreamError(undiciError('UND_ERR_HEADERS_TIMEOUT'), 1024))).to.deep.equal({ type: 'upstreamTimeout', status: 504, reason: 'first_byte_timeout', retryAfterSeconds: undefined });
  });

  it('names a socket failure by its system cause, and out-of-descriptors as the gateway’s own limit', () => {
    expect(classifyUpstreamError(undiciError('UND_ERR_SOCKET', 'EPIPE'), 1024).reason).to.equal('upstream_epipe');
    expect(classifyUpstreamError(undiciError('UND_ERR_SOCKET'), 1024).reason).to.equal('upstream_econnreset');
    expect(classifyUpstreamError(undiciError('ECONNREFUSED'), 1024).reason).to.equal('upstream_econnrefused');
    expect(classifyUpstreamError(undiciError('UND_ERR_CLOSED'), 1024).reason).to.equal('upstream_closed');
    expect(classifyUpstreamError(new Error('no code'), 1024).reason).to.equal('upstream_unknown');
    expect(classifyUpstreamError(undefined, 1024).reason).to.equal('upstream_unknown');
    for (const cause of ['EMFILE', 'ENFILE']) {
      for (const error of [undiciError('UND_ERR_SOCKET', cause), undiciError(cause)]) {
        expect(shape(classifyUpstreamError(error, 1024)), cause).to.deep.equal({ type: 'serviceUnavailable', status: 503, reason: 'descriptors_exhausted', retryAfterSeconds: 1 });
      }
    }
  });
});
