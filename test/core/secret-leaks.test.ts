/**
 * A canary secret appears in no log line and no response, on success and on every error path, including providers that
 * take the key in the query string. App, device and development tokens stay out of the logs too.
 */
import { expect } from 'chai';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';
import { FakeUpstream, respondJson, respondNever, respondReset } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest, type RawResponse } from '../support/http';

const CANARY = 'sk-CANARY-7f3c9a1e5b2d4c6e8f0a1b2c3d4e5f60';
const QUERY_CANARY = 'AIzaQUERYCANARY-9e8d7c6b5a4f3e2d1c0b';

/** A test-only provider that takes its key in the query string, as Google Translate and SerpApi do. */
const queryKeyProvider = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'query-key-test',
  name: 'Query-key test provider',
  baseUrl: 'https://query-key.invalid',
  versions: { v2: '/v2' },
  auth: { kind: 'query', parameter: 'key' },
  capabilities: ['translation'],
  streaming: [],
});

describe('secret leak checks (canary)', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  const responses: RawResponse[] = [];

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({
      upstreams: { openai: upstream.url, 'query-key-test': upstream.url, anthropic: 'http://127.0.0.1:9' },
      extraProviders: [queryKeyProvider],
      env: { TOLLGATE_UPSTREAM_TIMEOUT_MS: '200' },
    });
    device = await gateway.provision({ openai: CANARY, anthropic: CANARY, 'query-key-test': QUERY_CANARY });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  const send = async (path: string, method = 'POST') => {
    const response = await rawRequest(gateway.url, { method, path, headers: { ...device.headers, 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined });
    responses.push(response);
    return response;
  };

  it('the key reaches the upstream (so the canary is live)', async () => {
    // The fake upstream echoes its URL: these two answers are the provider's own words and are not leak-checked.
    upstream.respond(respondJson(200, { ok: true }));
    await send('/v1/proxy/openai/v1/chat/completions');
    expect(upstream.last().headers.authorization).to.equal(`Bearer ${CANARY}`);
    await send('/v1/proxy/query-key-test/v2/translate?q=hello&key=client-supplied', 'GET');
    expect(upstream.last().url).to.equal(`/v2/translate?q=hello&key=${QUERY_CANARY}`);
  });

  it('exercises every error path with the canary configured', async () => {
    upstream.respond(respondJson(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } }));
    expect((await send('/v1/proxy/openai/v1/chat/completions')).status).to.equal(401);
    upstream.respond(respondReset());
    expect((await send('/v1/proxy/openai/v1/chat/completions')).status).to.equal(502);
    expect((await send('/v1/proxy/query-key-test/v2/translate?q=x', 'GET')).status).to.equal(502);
    upstream.respond(respondNever());
    expect((await send('/v1/proxy/openai/v1/chat/completions')).status).to.equal(504);
    expect((await send('/v1/proxy/query-key-test/v2/translate?q=x', 'GET')).status).to.equal(504);
    expect((await send('/v1/proxy/anthropic/v1/messages')).status).to.equal(502);
    expect((await send('/v1/proxy/openai/v1/../x')).status).to.equal(400);
    upstream.reset();
  });

  it('no response and no log line holds a secret or a bearer token', async () => {
    await new Promise((resolve) => setTimeout(resolve, 50));
    gateway.gateway.logger.flush();
    const logs = gateway.logText();
    expect(logs.length).to.be.greaterThan(0);
    expect(logs).to.include('/v1/proxy/query-key-test/v2/translate?q=hello&key=[redacted]');
    for (const needle of [CANARY, QUERY_CANARY, device.appToken, device.deviceToken, 'CANARY']) {
      expect(logs, `log leaks ${needle.slice(0, 12)}`).not.to.include(needle);
      for (const response of responses) {
        expect(response.body.toString('latin1'), `response body leaks ${needle.slice(0, 12)}`).not.to.include(needle);
        expect(JSON.stringify(response.headers), 'response headers leak').not.to.include(needle);
      }
    }
  });

  it('management answers show the secret masked only', async () => {
    const listed = JSON.stringify(await gateway.gateway.management.listSecrets(device.appId));
    expect(listed).not.to.include(CANARY);
    expect(listed).to.include('sk-…5f60');
  });
});
