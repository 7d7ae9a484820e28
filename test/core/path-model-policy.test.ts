/**
 * Model policy on models named in the request path (the manifests' `pathModels`), as the requests arrive at fake
 * providers: a model outside the allow-list is refused with the body case's error (400 `model_not_allowed`) and nothing
 * reaches the provider; an alias is replaced in the path the provider receives; Bedrock's SigV4 signature is over the
 * rewritten path; a path and a body that both name a model must both pass; without a policy the path arrives byte for
 * byte. Paths as documented: Gemini `POST /v1beta/models/{model}:generateContent`
 * (https://ai.google.dev/api/generate-content), Bedrock `POST /model/{modelId}/converse`
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html), Vertex AI
 * `POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent`
 * (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.publishers.models/generateContent), Azure
 * OpenAI `POST /openai/deployments/{deployment}/chat/completions`
 * (https://learn.microsoft.com/en-us/azure/ai-foundry/openai/reference).
 */
import aws4 from 'aws4';
import { expect } from 'chai';
import { PLUGIN_CONTRACT_VERSION, defineProvider, type ProviderManifest } from '../../core/contract';
import { validateManifest } from '../../core/registry/provider-registry';
import { serviceAccountKey } from '../../providers/vertex-ai/test/fixture';
import { FakeUpstream, respondJson, type RecordedRequest } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

const AWS = { accessKeyId: 'AKIAPATHMODELPOLICY0', secretAccessKey: 'path/model/policy/0123456789abcdefghij' };
const GEMINI_KEY = 'AIza-path-model-policy-0123456789';

/** A provider whose path and body both name a model (an engine route, as older completion APIs had). */
const ENGINES: ProviderManifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'engines-test',
  name: 'Engines test',
  baseUrl: 'https://engines.example.com',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'Authorization', scheme: 'Bearer' },
  capabilities: ['chat'],
  streaming: [],
  routes: { methods: ['POST'], account: [{ methods: ['POST'], path: 'engines/tuned-private/completions', why: "runs the account's private tuned engine" }] },
  requestFields: [{ methods: ['POST'], path: 'engines/{engine}/completions', model: 'model', outputLimit: ['max_tokens'] }],
  pathModels: [{ methods: ['POST'], path: 'engines/{model}/completions', doc: 'https://engines.example.com/docs' }],
});

describe('model policy on models named in the path', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let previousTokenUrl: string | undefined;

  before(async () => {
    upstream = await FakeUpstream.start();
    previousTokenUrl = process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL;
    process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL = `${upstream.url}/oauth2/token`;
    gateway = await TestGateway.start({
      upstreams: { gemini: upstream.url, bedrock: upstream.url, 'vertex-ai': upstream.url, 'azure-openai': upstream.url, 'workers-ai': upstream.url, 'engines-test': upstream.url },
      extraProviders: [ENGINES],
    });
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    if (previousTokenUrl === undefined) delete process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL;
    else process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL = previousTokenUrl;
    await gateway.close();
    await upstream.close();
  });

  const send = async (device: Provisioned, path: string, body = '{"contents":[{"parts":[{"text":"Hi"}]}]}') => {
    const response = await fetch(`${gateway.url}/v1/proxy/${path}`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, body });
    const json = (await response.json()) as { error?: { type?: string; reason?: string } };
    return { status: response.status, type: json.error?.type, reason: json.error?.reason };
  };
  const refused = { status: 400, type: 'invalidRequest', reason: 'model_not_allowed' };
  const modelCalls = () => upstream.requests.filter((request) => request.url !== '/oauth2/token');

  it('Gemini: a model outside the allow-list is refused in every spelling of the path, nothing reaches the provider', async () => {
    const device = await gateway.provision({ gemini: GEMINI_KEY }, { modelPolicy: { gemini: { allow: ['gemini-2.0-flash'] } } });
    for (const path of [
      'gemini/v1beta/models/gemini-2.5-pro:generateContent',
      'gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse',
      'gemini/v1beta/models/gemini-2.5-pro:countTokens',
      'gemini/v1beta/models/text-embedding-004:embedContent',
      'gemini/v1beta/models/imagen-3.0-generate-002:predict',
      // Encoded, upper-case, a trailing slash, and below the root version: the same upstream call.
      'gemini/v1beta/models/gemini-2.5-pro%3AgenerateContent',
      'gemini/v1beta/models%2Fgemini-2.5-pro:generateContent',
      'gemini/v1beta/MODELS/gemini-2.5-pro:generateContent/',
      'gemini/v1-root/v1beta/models/gemini-2.5-pro:generateContent',
    ]) {
      expect(await send(device, path), path).to.deep.equal(refused);
    }
    expect(upstream.requests).to.have.length(0);
    expect((await send(device, 'gemini/v1beta/models/gemini-2.0-flash:generateContent')).status).to.equal(200);
    expect(upstream.last().url).to.equal('/v1beta/models/gemini-2.0-flash:generateContent');
  });

  it('Gemini: an alias is replaced in the path the provider receives, the query and body kept as sent', async () => {
    const device = await gateway.provision({ gemini: GEMINI_KEY }, { modelPolicy: { gemini: { allow: ['gemini-2.0-flash'], aliases: { fast: 'gemini-2.0-flash' } } } });
    const body = '{ "contents": [ {"parts":[{"text":"Hi"}]} ] }';
    expect((await send(device, 'gemini/v1beta/models/fast:streamGenerateContent?alt=sse', body)).status).to.equal(200);
    expect(upstream.last().url).to.equal('/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
    expect(upstream.last().body.toString('utf8')).to.equal(body);
    expect(upstream.last().headers['x-goog-api-key']).to.equal(GEMINI_KEY);
    expect((await send(device, 'gemini/v1/models/fast:countTokens')).status).to.equal(200);
    expect(upstream.last().url).to.equal('/v1/models/gemini-2.0-flash:countTokens');
  });

  it('Bedrock: refused outside the allow-list; an alias rewritten before signing, the signature over the rewritten path', async () => {
    const device = await gateway.provision({ bedrock: JSON.stringify(AWS) }, { modelPolicy: { bedrock: { allow: ['anthropic.claude-3-haiku-20240307-v1:0', 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-haiku-20240307-v1:0'], aliases: { haiku: 'anthropic.claude-3-haiku-20240307-v1:0' } } } });
    const converse = '{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}';
    expect(await send(device, 'bedrock/v1/model/anthropic.claude-3-opus-20240229-v1:0/converse', converse)).to.deep.equal(refused);
    expect(await send(device, 'bedrock/v1/model/anthropic.claude-3-opus-20240229-v1%3A0/invoke', '{"max_tokens":10}')).to.deep.equal(refused);
    expect(await send(device, 'bedrock/v1/model/meta.llama3-8b-instruct-v1:0/invoke-with-response-stream', '{"prompt":"x"}')).to.deep.equal(refused);
    expect(upstream.requests).to.have.length(0);

    expect((await send(device, 'bedrock/v1/model/haiku/converse', converse)).status).to.equal(200);
    const received = upstream.last();
    expect(received.url).to.equal('/model/anthropic.claude-3-haiku-20240307-v1:0/converse');
    expect(received.body.toString('utf8')).to.equal(converse);
    expectSignedAsReceived(received);

    // An inference profile's ARN, percent-encoded in one segment as the AWS SDKs send it, is the model the allow-list names.
    const arn = 'model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-haiku-20240307-v1%3A0/converse';
    expect((await send(device, `bedrock/v1/${arn}`, converse)).status).to.equal(200);
    expect(upstream.last().url).to.equal(`/${arn}`);
  });

  it('Vertex AI: a publisher model and a deployed endpoint are checked, an alias replaced in the path', async () => {
    upstream.on((request) => request.url === '/oauth2/token', respondJson(200, { access_token: 'ya29.path-model', expires_in: 3599, token_type: 'Bearer' }));
    const device = await gateway.provision({}, { modelPolicy: { 'vertex-ai': { allow: ['gemini-2.0-flash'], aliases: { fast: 'gemini-2.0-flash' } } } });
    await gateway.setSecret(device.appId, 'vertex-ai', serviceAccountKey());
    const models = 'vertex-ai/v1/projects/demo-project/locations/us-central1/publishers';
    expect(await send(device, `${models}/google/models/gemini-2.5-pro:generateContent`)).to.deep.equal(refused);
    expect(await send(device, `${models}/anthropic/models/claude-3-5-haiku:rawPredict`, '{"anthropic_version":"vertex-2023-10-16","messages":[],"max_tokens":5}')).to.deep.equal(refused);
    expect(await send(device, 'vertex-ai/v1/projects/demo-project/locations/us-central1/endpoints/1234567890:predict', '{"instances":[]}')).to.deep.equal(refused);
    expect(modelCalls()).to.have.length(0);
    expect((await send(device, `${models}/google/models/fast:generateContent`)).status).to.equal(200);
    expect(modelCalls().at(-1)!.url).to.equal('/v1/projects/demo-project/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent');
  });

  it('Vertex AI: an Anthropic model named with its "@" version passes the path rules and the allow-list', async () => {
    // Claude on Vertex AI: `publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict`
    // (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude).
    upstream.on((request) => request.url === '/oauth2/token', respondJson(200, { access_token: 'ya29.path-model', expires_in: 3599, token_type: 'Bearer' }));
    const device = await gateway.provision({}, { modelPolicy: { 'vertex-ai': { allow: ['claude-sonnet-4@20250514'] } } });
    await gateway.setSecret(device.appId, 'vertex-ai', serviceAccountKey());
    const models = 'vertex-ai/v1/projects/demo-project/locations/us-east5/publishers/anthropic/models';
    const body = '{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":"Hi"}],"max_tokens":5}';
    expect(await send(device, `${models}/claude-opus-4@20250514:rawPredict`, body)).to.deep.equal(refused);
    const before = modelCalls().length;
    expect((await send(device, `${models}/claude-sonnet-4@20250514:rawPredict`, body)).status).to.equal(200);
    expect(modelCalls()).to.have.length(before + 1);
    expect(modelCalls().at(-1)!.url).to.equal('/v1/projects/demo-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict');
  });

  it('Azure OpenAI: the deployment is the model the allow-list names; the body needs no model there', async () => {
    const device = await gateway.provision({}, { modelPolicy: { 'azure-openai': { allow: ['gpt-4o-mini-prod'], aliases: { chat: 'gpt-4o-mini-prod' } } } });
    await gateway.setSecret(device.appId, 'azure-openai', 'azure-path-model-0123456789abcdef', 'https://path-model.openai.azure.com/openai');
    const body = '{"messages":[{"role":"user","content":"Hi"}]}';
    expect(await send(device, 'azure-openai/v1-deployments/deployments/gpt-4o-big/chat/completions?api-version=2024-10-21', body)).to.deep.equal(refused);
    expect(upstream.requests).to.have.length(0);
    expect((await send(device, 'azure-openai/v1-deployments/deployments/chat/chat/completions?api-version=2024-10-21', body)).status).to.equal(200);
    expect(upstream.last().url).to.equal('/deployments/gpt-4o-mini-prod/chat/completions?api-version=2024-10-21');
    expect(upstream.last().body.toString('utf8')).to.equal(body);
  });

  it('a request whose path and body both name a model must satisfy the policy with both', async () => {
    const device = await gateway.provision({ 'engines-test': 'sk-engines-0123456789abcdef' }, { modelPolicy: { 'engines-test': { allow: ['small'], aliases: { s: 'small' } } } });
    expect(await send(device, 'engines-test/v1/engines/large/completions', '{"model":"small","prompt":"x"}')).to.deep.equal(refused);
    expect(await send(device, 'engines-test/v1/engines/small/completions', '{"model":"large","prompt":"x"}')).to.deep.equal(refused);
    expect(upstream.requests).to.have.length(0);
    expect((await send(device, 'engines-test/v1/engines/s/completions', '{"model":"s","prompt":"x"}')).status).to.equal(200);
    expect(upstream.last().url).to.equal('/v1/engines/small/completions');
    expect(JSON.parse(upstream.last().body.toString('utf8'))).to.deep.equal({ model: 'small', prompt: 'x' });
  });

  it('the rewritten path is judged by the route classes and the path safety rules, not the one the client sent', async () => {
    const device = await gateway.provision({ 'engines-test': 'sk-engines-0123456789abcdef' }, { modelPolicy: { 'engines-test': { aliases: { tuned: 'tuned-private', up: '..' } } } });
    const closed = await send(device, 'engines-test/v1/engines/tuned/completions', '{"prompt":"x"}');
    expect(closed).to.deep.include({ status: 400, reason: 'route_not_allowed' });
    const dots = await send(device, 'engines-test/v1/engines/up/completions', '{"prompt":"x"}');
    expect(dots).to.deep.include({ status: 400, reason: 'unsafe_path_dot_segment' });
    expect(upstream.requests).to.have.length(0);
  });

  it('without a policy for the provider (or with only an output cap) the path arrives byte for byte', async () => {
    const device = await gateway.provision({ gemini: GEMINI_KEY, bedrock: JSON.stringify(AWS) }, { modelPolicy: { openai: { allow: ['gpt-4o-mini'] }, bedrock: { maxOutputTokens: 100 } } });
    for (const [path, sent] of [
      ['gemini/v1beta/models/Any-Model%2Dname:generateContent', '/v1beta/models/Any-Model%2Dname:generateContent'],
      ['gemini/v1beta/models/fast:generateContent', '/v1beta/models/fast:generateContent'],
      ['bedrock/v1/model/anthropic.claude-3-opus-20240229-v1%3A0/converse', '/model/anthropic.claude-3-opus-20240229-v1%3A0/converse'],
    ] as const) {
      expect((await send(device, path, '{"messages":[]}')).status, path).to.equal(200);
      expect(upstream.last().url).to.equal(sent);
    }
  });

  it("usage rows record the model the path named as sent: an alias's model, a declared path model the answer does not name", async () => {
    const gemini = await gateway.provision({ gemini: GEMINI_KEY }, { modelPolicy: { gemini: { aliases: { fast: 'gemini-2.0-flash' } } } });
    // A generateContent answer without `modelVersion` (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse).
    upstream.respond(respondJson(200, { candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 } }));
    let startedAt = Date.now();
    expect((await send(gemini, 'gemini/v1beta/models/fast:generateContent')).status).to.equal(200);
    const geminiEvent = await gateway.recordedEvent(gemini.appId, startedAt - 1000, (event) => event.provider === 'gemini');
    expect(geminiEvent.model).to.equal('gemini-2.0-flash');

    // Workers AI `run` of an image model answers `{result: {image}, success}` with no model
    // (https://developers.cloudflare.com/workers-ai/models/flux-1-schnell/): the row names the model the path called.
    const workers = await gateway.provision({}, {});
    await gateway.setSecret(workers.appId, 'workers-ai', 'cf-path-model-0123456789abcdef', 'https://api.cloudflare.com/client/v4/accounts/0123456789abcdef0123456789abcdef/ai');
    upstream.respond(respondJson(200, { result: { image: 'aGVsbG8=' }, success: true, errors: [], messages: [] }));
    startedAt = Date.now();
    expect((await send(workers, 'workers-ai/v1-cf/black-forest-labs/flux-1-schnell', '{"prompt":"a cat"}')).status).to.equal(200);
    expect(upstream.last().url).to.equal('/run/@cf/black-forest-labs/flux-1-schnell');
    const workersEvent = await gateway.recordedEvent(workers.appId, startedAt - 1000, (event) => event.provider === 'workers-ai');
    expect(workersEvent.model).to.equal('@cf/black-forest-labs/flux-1-schnell');
  });

  it('manifests declaring path models are validated at registration', () => {
    expect(() => validateManifest(ENGINES)).not.to.throw();
    expect(() => validateManifest({ ...ENGINES, pathModels: [{ methods: ['POST'], path: 'engines/{engine}/completions', doc: 'https://x.example' }] })).to.throw(/must hold a \{model\}/);
    expect(() => validateManifest({ ...ENGINES, pathModels: [{ methods: ['POST'], path: '../{model}', doc: 'https://x.example' }] })).to.throw(/pathModels route/);
    expect(() => validateManifest({ ...ENGINES, pathModels: [{ methods: ['POST'], path: 'engines/{model}', doc: '' }] })).to.throw(/cite its documentation/);
    expect(() => validateManifest({ ...ENGINES, pathModels: [{ methods: ['POST'], path: 'engines/{model}', versions: ['v9'], doc: 'https://x.example' }] })).to.throw(/declared versions/);
    expect(() => validateManifest({ ...ENGINES, pathModels: [{ methods: ['POST'], path: 'e/{model}{model}', doc: 'https://x.example' }] })).to.throw(/one \{model\} per segment/);
  });
});

/**
 * Recomputes the AWS Signature Version 4 over the request exactly as the fake provider received it (method, path,
 * query, the headers the signature names, the body) and compares it with the one sent: the gateway signed what it sent
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html).
 */
function expectSignedAsReceived(request: RecordedRequest): void {
  const authorization = String(request.headers.authorization);
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)![1]!.split(';');
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) headers[name] = String(request.headers[name]);
  const again = aws4.sign({ host: headers.host, method: request.method, path: request.url, service: 'bedrock', region: 'us-east-1', headers, body: request.body }, AWS);
  expect(again.headers!.Authorization ?? again.headers!.authorization).to.equal(authorization);
}
