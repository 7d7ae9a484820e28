/**
 * Route classes, end to end (issue 15, providers.md "Route classes"): a real gateway in front of a recording fake
 * upstream. With default settings every account route answers `invalidRequest` (`route_not_allowed`) and the provider
 * receives nothing; opened for one app through the management API it works for that app only; an extra route works for
 * its app only and still refuses unsafe paths; and a client's own credentials (AWS `x-amz-*`, `?key=`, `?api_key=`, any
 * auth header) never reach the provider.
 */
import { expect } from 'chai';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

/** The account routes the issue names (method, provider, version, path with query), each from the provider's docs. */
const ACCOUNT_CALLS: ReadonlyArray<readonly [string, string, string, string]> = [
  // https://platform.openai.com/docs/api-reference/files/list, /retrieve-contents, /delete
  ['GET', 'openai', 'v1', 'files'],
  ['GET', 'openai', 'v1', 'files/file-abc123/content'],
  ['DELETE', 'openai', 'v1', 'files/file-abc123'],
  // https://platform.openai.com/docs/api-reference/chat/list (stored completions of every user)
  ['GET', 'openai', 'v1', 'chat/completions?limit=100'],
  ['GET', 'openai', 'v1', 'chat/completions/chatcmpl-abc123/messages'],
  // https://platform.openai.com/docs/api-reference/models/delete
  ['DELETE', 'openai', 'v1', 'models/ft:gpt-4o-mini:acme:custom:abc123'],
  // https://platform.openai.com/docs/api-reference/vector-stores/list
  ['GET', 'openai', 'v1', 'vector_stores'],
  // https://platform.openai.com/docs/api-reference/responses/get, /delete
  ['GET', 'openai', 'v1', 'responses/resp_abc123'],
  ['DELETE', 'openai', 'v1', 'responses/resp_abc123'],
  // https://platform.openai.com/docs/api-reference/conversations/list-items
  ['GET', 'openai', 'v1', 'conversations/conv_abc123/items'],
  // https://platform.openai.com/docs/api-reference/fine-tuning/list, /batch/list
  ['GET', 'openai', 'v1', 'fine_tuning/jobs'],
  ['GET', 'openai', 'v1', 'batches'],
  // https://ai.google.dev/api/files#method:-files.list, https://ai.google.dev/api/caching#method:-cachedcontents.list
  ['GET', 'gemini', 'v1beta', 'files'],
  ['GET', 'gemini', 'v1beta', 'cachedContents'],
  ['DELETE', 'gemini', 'v1beta', 'files/abc-123'],
  // https://replicate.com/docs/reference/http#predictions.list
  ['GET', 'replicate', 'v1', 'predictions'],
  // https://www.assemblyai.com/docs/api-reference/transcripts/list, /delete
  ['GET', 'assemblyai', 'v2', 'transcript?limit=200'],
  ['DELETE', 'assemblyai', 'v2', 'transcript/5551722-f677-48a6-9287-39c0aafd9ac1'],
  // https://fal.ai/docs/inference-api/queue: the queue answers for one request id; a listing is not a per-request call
  ['GET', 'fal', 'v1-queue', 'fal-ai/flux/requests'],
  // https://docs.anthropic.com/en/api/files-list, /en/api/listing-message-batches
  ['GET', 'anthropic', 'v1', 'files'],
  ['GET', 'anthropic', 'v1', 'messages/batches'],
  // https://elevenlabs.io/docs/api-reference/history/list, /voices/delete
  ['GET', 'elevenlabs', 'v1', 'history'],
  ['DELETE', 'elevenlabs', 'v1', 'voices/21m00Tcm4TlvDq8ikWAM'],
];

/** Inference routes next to them stay open by default (a generation, one's own job by id, an upload for a request). */
const INFERENCE_CALLS: ReadonlyArray<readonly [string, string, string, string]> = [
  ['POST', 'openai', 'v1', 'chat/completions'],
  ['POST', 'openai', 'v1', 'responses'],
  ['POST', 'openai', 'v1', 'files'],
  ['GET', 'openai', 'v1', 'models'],
  ['POST', 'gemini', 'v1beta', 'models/gemini-2.0-flash:generateContent'],
  ['GET', 'gemini', 'v1beta', 'files/abc-123'],
  ['GET', 'replicate', 'v1', 'predictions/gm3qorzdhgbfurvjtvhg6dckhu'],
  ['POST', 'replicate', 'v1', 'predictions'],
  ['GET', 'assemblyai', 'v2', 'transcript/5551722-f677-48a6-9287-39c0aafd9ac1'],
  ['POST', 'assemblyai', 'v2', 'transcript'],
  ['GET', 'fal', 'v1-queue', 'fal-ai/flux/requests/764cabcf-b745-4b3e-ae38-1200304cf45b/status'],
  ['PUT', 'fal', 'v1-queue', 'fal-ai/flux/requests/764cabcf-b745-4b3e-ae38-1200304cf45b/cancel'],
  ['POST', 'fal', 'v1', 'fal-ai/flux/dev'],
  ['GET', 'elevenlabs', 'v1', 'voices'],
];

const SECRETS: Record<string, string> = {
  openai: 'sk-account-routes-0123456789abcdef',
  gemini: 'AIza-account-routes-0123456789',
  replicate: 'r8_account_routes_0123456789',
  assemblyai: 'aai-account-routes-0123456789',
  fal: 'fal-account-routes:0123456789',
  anthropic: 'sk-ant-account-routes-0123456789',
  elevenlabs: 'xi-account-routes-0123456789',
  bedrock: JSON.stringify({ accessKeyId: 'AKIAACCOUNTROUTES000', secretAccessKey: 'account-routes-secret-access-key-0000000000' }),
};

describe('route classes: account routes closed by default, opened per app; extra routes; client credentials stripped', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let adminKey: string;
  let closed: Provisioned;
  let opened: Provisioned;

  const send = (device: Provisioned, method: string, slug: string, version: string, path: string, headers: Record<string, string> = {}) =>
    fetch(`${gateway.url}/v1/proxy/${slug}/${version}/${path}`, {
      method,
      headers: { ...device.headers, ...(method === 'GET' || method === 'DELETE' ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }),
    });

  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}/v1/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  async function expectRefused(device: Provisioned, method: string, slug: string, version: string, path: string): Promise<void> {
    const before = upstream.requests.length;
    const response = await send(device, method, slug, version, path);
    const body = (await response.json()) as { error: { type: string; reason: string; message: string } };
    expect(response.status, `${method} ${slug}/${path}`).to.equal(400);
    expect(body.error, `${method} ${slug}/${path}`).to.deep.include({ type: 'invalidRequest', reason: 'route_not_allowed' });
    expect(upstream.requests.length, `${method} ${slug}/${path} reached the provider`).to.equal(before);
  }

  async function expectForwarded(device: Provisioned, method: string, slug: string, version: string, path: string): Promise<void> {
    const before = upstream.requests.length;
    const response = await send(device, method, slug, version, path);
    expect(response.status, `${method} ${slug}/${path}: ${await response.clone().text()}`).to.equal(200);
    expect(upstream.requests.length, `${method} ${slug}/${path}`).to.equal(before + 1);
    const received = upstream.last();
    expect(received.method).to.equal(method);
    expect(received.url.split('?')[0]!.endsWith(`/${path.split('?')[0]}`), `${received.url} ends with ${path}`).to.equal(true);
  }

  before(async () => {
    upstream = await FakeUpstream.start();
    upstream.respond(respondJson(200, { object: 'list', data: [] }));
    gateway = await TestGateway.start({ upstreams: Object.fromEntries(Object.keys(SECRETS).map((slug) => [slug, upstream.url])) });
    adminKey = (await gateway.gateway.management.createAdminKey({ name: 'account-routes' })).adminKey;
    const limits = { deviceLimitPerMinute: 100_000, appLimitPerMinute: 100_000 };
    closed = await gateway.provision(SECRETS, limits);
    opened = await gateway.provision(SECRETS, limits);
  });
  after(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  it('with default settings, answers every account route with invalidRequest (route_not_allowed); nothing reaches the provider', async () => {
    for (const [method, slug, version, path] of ACCOUNT_CALLS) await expectRefused(closed, method, slug, version, path);
    expect(upstream.requests).to.have.length(0);
  });

  it('refuses disguised account routes too: trailing slash, other case, matrix parameters, percent-encoding', async () => {
    for (const path of ['files/', 'FILES', 'Files;x=1', 'fil%65s', 'vector_stores/', 'chat/completions/?limit=100']) await expectRefused(closed, 'GET', 'openai', 'v1', path);
    expect(upstream.requests).to.have.length(0);
  });

  it('keeps inference routes open by default', async () => {
    for (const [method, slug, version, path] of INFERENCE_CALLS) await expectForwarded(closed, method, slug, version, path);
  });

  it('opens account routes for one app through the management API, and for that app only', async () => {
    const updated = await admin('PATCH', `/apps/${opened.appId}`, { openAccountRoutes: ['openai', 'gemini', 'replicate', 'assemblyai', 'fal', 'anthropic', 'elevenlabs'] });
    expect(updated.status, JSON.stringify(updated.json)).to.equal(200);
    expect((updated.json.settings as Record<string, unknown>).openAccountRoutes).to.deep.equal(['anthropic', 'assemblyai', 'elevenlabs', 'fal', 'gemini', 'openai', 'replicate']);
    await new Promise((resolve) => setTimeout(resolve, 150)); // the change feed reaches the hot-path cache
    for (const [method, slug, version, path] of ACCOUNT_CALLS) await expectForwarded(opened, method, slug, version, path);
    for (const [method, slug, version, path] of ACCOUNT_CALLS) await expectRefused(closed, method, slug, version, path);
    // Closing one provider again (null would close all) refuses its routes at once, for that app.
    expect((await admin('PATCH', `/apps/${opened.appId}`, { openAccountRoutes: ['gemini'] })).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await expectRefused(opened, 'GET', 'openai', 'v1', 'files');
    await expectForwarded(opened, 'GET', 'gemini', 'v1beta', 'files');
    expect((await admin('PATCH', `/apps/${opened.appId}`, { openAccountRoutes: null })).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await expectRefused(opened, 'GET', 'gemini', 'v1beta', 'files');
  });

  it('keeps deny absolute: an opened app still cannot reach organization or key routes', async () => {
    expect((await admin('PATCH', `/apps/${opened.appId}`, { openAccountRoutes: ['openai', 'replicate'] })).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await expectRefused(opened, 'GET', 'openai', 'v1', 'organization/api_keys');
    await expectRefused(opened, 'GET', 'openai', 'v1', 'organization/');
    await expectRefused(opened, 'GET', 'replicate', 'v1', 'account');
  });

  it('validates the settings: unknown slugs and unsafe or malformed extra routes answer 400 validation, and change nothing', async () => {
    const cases: unknown[] = [
      { openAccountRoutes: ['no-such-provider'] },
      { openAccountRoutes: ['Not A Slug'] },
      { extraRoutes: [{ provider: 'no-such-provider', methods: ['GET'], path: 'evals' }] },
      { extraRoutes: [{ provider: 'openai', methods: ['GET'], path: '../admin' }] },
      { extraRoutes: [{ provider: 'openai', methods: ['GET'], path: 'a//b' }] },
      { extraRoutes: [{ provider: 'openai', methods: ['GET'], path: '/evals' }] },
      { extraRoutes: [{ provider: 'openai', methods: ['GET'], path: 'a\\b' }] },
      { extraRoutes: [{ provider: 'openai', methods: ['GET'], path: '**/x' }] },
      { extraRoutes: [{ provider: 'openai', methods: ['TRACE'], path: 'evals' }] },
      { extraRoutes: [{ provider: 'openai', methods: [], path: 'evals' }] },
      { extraRoutes: [{ provider: 'openai', methods: ['GET'], path: 'evals', extra: true }] },
    ];
    const before = (await admin('GET', `/apps/${closed.appId}`)).json.settings;
    for (const body of cases) {
      const answer = await admin('PATCH', `/apps/${closed.appId}`, body);
      expect(answer.status, JSON.stringify(body)).to.equal(400);
      expect((answer.json.error as Record<string, unknown>).reason, JSON.stringify(body)).to.equal('validation');
    }
    expect((await admin('GET', `/apps/${closed.appId}`)).json.settings).to.deep.equal(before);
  });

  it('allows an extra route for its app only, still refusing unsafe paths and denied prefixes', async () => {
    const extraRoutes = [
      { provider: 'openai', methods: ['GET', 'POST'], path: 'evals/**' },
      { provider: 'openai', methods: ['GET'], path: 'organization/**' },
      { provider: 'replicate', methods: ['GET'], path: 'hardware' },
    ];
    const answer = await admin('PATCH', `/apps/${opened.appId}`, { openAccountRoutes: null, extraRoutes });
    expect(answer.status, JSON.stringify(answer.json)).to.equal(200);
    expect((answer.json.settings as Record<string, unknown>).extraRoutes).to.deep.equal(extraRoutes);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await expectForwarded(opened, 'GET', 'openai', 'v1', 'evals');
    await expectForwarded(opened, 'POST', 'openai', 'v1', 'evals/eval_123/runs');
    await expectForwarded(opened, 'GET', 'replicate', 'v1', 'hardware');
    await expectRefused(closed, 'GET', 'openai', 'v1', 'evals');
    await expectRefused(closed, 'GET', 'replicate', 'v1', 'hardware');
    // Methods the extra route does not name stay refused (DELETE: not among the provider's methods, 405).
    const deleted = await send(opened, 'DELETE', 'openai', 'v1', 'evals/eval_123');
    expect([400, 405]).to.include(deleted.status);
    // Deny stays absolute even against an extra route.
    await expectRefused(opened, 'GET', 'openai', 'v1', 'organization/usage');
    // Every path-safety rule still applies.
    const before = upstream.requests.length;
    for (const path of ['evals/../files', 'evals/%2e%2e/files', 'evals//x', 'evals/%2F%2Fevil.example', 'evals/..;/files', 'evals/a%5Cb']) {
      const response = await send(opened, 'GET', 'openai', 'v1', path);
      const body = (await response.json()) as { error: { type: string; reason: string } };
      expect(response.status, path).to.be.oneOf([400, 404]);
      expect(body.error.type, path).to.equal('invalidRequest');
      expect(body.error.reason, path).to.match(/^unsafe_path_|^route_not_allowed$|^malformed_route$/);
    }
    expect(upstream.requests.length).to.equal(before);
    // An extra route opens only the pattern it names: the account routes of the same provider stay closed.
    await expectRefused(opened, 'GET', 'openai', 'v1', 'files');
    expect((await admin('PATCH', `/apps/${opened.appId}`, { extraRoutes: null })).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await expectRefused(opened, 'GET', 'openai', 'v1', 'evals');
  });

  it("never lets a client's own credential reach the provider: x-amz-* before SigV4 signing, ?key=, ?api_key=, auth headers", async () => {
    const credentialHeaders = {
      'x-amz-security-token': 'client-own-credential-1',
      'x-amz-date': '20200101T000000Z',
      'x-amz-content-sha256': 'client-own-credential-2',
      'x-amz-target': 'client-own-credential-3',
      authorization: 'Bearer client-own-credential-4',
      'x-api-key': 'client-own-credential-5',
      'x-goog-api-key': 'client-own-credential-6',
      'xi-api-key': 'client-own-credential-7',
      'api-key': 'client-own-credential-8',
    };
    const query = 'key=client-own-credential-9&api_key=client-own-credential-10&API_KEY=client-own-credential-11&access_token=client-own-credential-12&kept=yes';
    const calls: Array<[string, string, string, string]> = [
      ['bedrock', 'v1', 'model/anthropic.claude-3-haiku-20240307-v1:0/converse', 'POST'],
      ['gemini', 'v1beta', 'models/gemini-2.0-flash:generateContent', 'POST'],
      ['openai', 'v1', 'chat/completions', 'POST'],
      ['elevenlabs', 'v1', 'voices', 'GET'],
      ['assemblyai', 'v2', 'transcript', 'POST'],
    ];
    for (const [slug, version, path, method] of calls) {
      // Query channels a manifest declares apply to that provider: AssemblyAI's temporary `?token=`, a presigned AWS
      // query (`X-Amz-Signature`, `X-Amz-Credential`: https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html).
      const own = {
        assemblyai: '&token=client-own-credential-15',
        bedrock: '&X-Amz-Signature=client-own-credential-13&X-Amz-Credential=client-own-credential-14&x-amz-security-token=client-own-credential-16',
      }[slug] ?? '';
      const response = await send(closed, method, slug, version, `${path}?${query}${own}`, credentialHeaders);
      expect(response.status, `${slug}: ${await response.clone().text()}`).to.equal(200);
      const received = upstream.last();
      const wire = `${received.url}\n${received.rawHeaders.join('\n')}`;
      expect(wire, `${slug}: ${wire}`).not.to.include('client-own-credential');
      expect(wire, slug).not.to.include('20200101T000000Z');
      expect(received.url, slug).to.include('kept=yes');
    }
    // Bedrock: the gateway's own SigV4 headers only, and the signature covers none of the client's.
    upstream.reset();
    upstream.respond(respondJson(200, {}));
    await send(closed, 'POST', 'bedrock', 'v1', 'model/anthropic.claude-3-haiku-20240307-v1:0/converse', credentialHeaders);
    const bedrock = upstream.last();
    expect(bedrock.headers['x-amz-security-token']).to.equal(undefined);
    expect(bedrock.headers['x-amz-target']).to.equal(undefined);
    expect(String(bedrock.headers.authorization)).to.match(/^AWS4-HMAC-SHA256 Credential=AKIAACCOUNTROUTES000\//);
    expect(String(bedrock.headers.authorization)).not.to.match(/x-amz-security-token|x-amz-target/);
    expect(bedrock.headers['x-amz-date']).to.match(/^\d{8}T\d{6}Z$/);
    expect(bedrock.headers['x-amz-date']).not.to.equal('20200101T000000Z');
    expect(bedrock.headers['x-amz-content-sha256']).to.equal(undefined); // aws4 signs the payload hash without sending it for bedrock
  });
});
