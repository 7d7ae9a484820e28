/**
 * Provider route lists tightened: Vertex AI allows only inference methods, in the service account's own project;
 * ElevenLabs voice samples (the recordings behind cloned voices) and DeepL `usage` are account routes. A real gateway in
 * front of a recording fake upstream (which also plays Google's OAuth token endpoint): every refusal answers 400
 * `route_not_allowed` and nothing, not even a token request, reaches the fake.
 */
import { expect } from 'chai';
import { serviceAccountKey } from '../../providers/vertex-ai/test/fixture';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';

const LOCATION = 'projects/demo-project/locations/us-central1';

/**
 * Management calls of https://cloud.google.com/vertex-ai/docs/reference/rest/v1 (and v1beta1) outside the old block-list:
 * several create billed compute (persistent resources, notebook runtimes, NAS jobs, feature online stores).
 */
const VERTEX_MANAGEMENT: ReadonlyArray<readonly [string, string, string]> = [
  ['POST', 'v1', `${LOCATION}/persistentResources?persistentResourceId=big`],
  ['GET', 'v1', `${LOCATION}/persistentResources`],
  ['POST', 'v1', `${LOCATION}/notebookRuntimes:assign`],
  ['POST', 'v1', `${LOCATION}/notebookRuntimeTemplates`],
  ['POST', 'v1', `${LOCATION}/nasJobs`],
  ['POST', 'v1', `${LOCATION}/featureOnlineStores?featureOnlineStoreId=x`],
  ['POST', 'v1', `${LOCATION}/featureGroups`],
  ['POST', 'v1', `${LOCATION}/deploymentResourcePools`],
  ['POST', 'v1', `${LOCATION}/modelDeploymentMonitoringJobs`],
  ['POST', 'v1', `${LOCATION}/dataLabelingJobs`],
  ['POST', 'v1', `${LOCATION}/specialistPools`],
  ['POST', 'v1', `${LOCATION}/tensorboards`],
  ['POST', 'v1', `${LOCATION}/studies`],
  ['GET', 'v1', `${LOCATION}/schedules`],
  ['POST', 'v1beta1', `${LOCATION}/extensions:import`],
  ['GET', 'v1', 'projects/demo-project/locations'],
  ['POST', 'v1', `${LOCATION}/publishers/google/models/gemini-2.0-flash:batchGenerateContent`],
  ['POST', 'v1', `${LOCATION}/endpoints/123:deployModel`],
];

describe('provider route lists: Vertex AI inference only and pinned to its project; ElevenLabs samples and DeepL usage closed', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;
  let previousTokenUrl: string | undefined;

  const send = (method: string, slug: string, version: string, path: string) =>
    fetch(`${gateway.url}/v1/proxy/${slug}/${version}/${path}`, {
      method,
      headers: { ...device.headers, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      ...(method === 'POST' ? { body: '{"contents":[]}' } : {}),
    });

  async function expectRefused(method: string, slug: string, version: string, path: string): Promise<void> {
    const response = await send(method, slug, version, path);
    const body = (await response.json()) as { error: { reason: string } };
    expect(response.status, `${method} ${slug}/${version}/${path}`).to.equal(400);
    expect(body.error.reason, `${method} ${slug}/${version}/${path}`).to.equal('route_not_allowed');
  }

  before(async () => {
    upstream = await FakeUpstream.start();
    previousTokenUrl = process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL;
    process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL = `${upstream.url}/oauth2/token`;
    gateway = await TestGateway.start({ upstreams: { 'vertex-ai': upstream.url, elevenlabs: upstream.url, deepl: upstream.url } });
    device = await gateway.provision(
      { 'vertex-ai': serviceAccountKey(), elevenlabs: 'xi-route-lists-0123456789', deepl: 'deepl-route-lists-0123456789' },
      { deviceLimitPerMinute: 100_000, appLimitPerMinute: 100_000 },
    );
  });
  beforeEach(() => {
    upstream.reset();
    // https://developers.google.com/identity/protocols/oauth2/service-account#httprest: the token answer's shape
    upstream.on((request) => request.url === '/oauth2/token', respondJson(200, { access_token: 'ya29.route-lists', expires_in: 3599, token_type: 'Bearer' }));
  });
  after(async () => {
    if (previousTokenUrl === undefined) delete process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL;
    else process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL = previousTokenUrl;
    await gateway?.close();
    await upstream?.close();
  });

  it('Vertex AI: refuses every management call; nothing reaches Google, not even a token request', async () => {
    for (const [method, version, path] of VERTEX_MANAGEMENT) await expectRefused(method, 'vertex-ai', version, path);
    expect(upstream.requests.map((request) => `${request.method} ${request.url}`)).to.deep.equal([]);
  });

  it("Vertex AI: refuses an inference call into another project (also percent-encoded), before minting a token", async () => {
    await expectRefused('POST', 'vertex-ai', 'v1', 'projects/other-project/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent');
    await expectRefused('POST', 'vertex-ai', 'v1', 'projects/demo-project2/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent');
    await expectRefused('POST', 'vertex-ai', 'v1', 'projects/%256Fther-project/locations/us-central1/endpoints/123:predict');
    expect(upstream.requests).to.have.length(0);
  });

  it('Vertex AI: forwards the inference methods of its own project', async () => {
    for (const path of [
      `${LOCATION}/publishers/google/models/gemini-2.0-flash:generateContent`,
      `${LOCATION}/publishers/google/models/gemini-2.0-flash:streamGenerateContent?alt=sse`,
      `${LOCATION}/publishers/google/models/gemini-2.0-flash:countTokens`,
      `${LOCATION}/endpoints/123:predict`,
      `${LOCATION}/endpoints/openapi/chat/completions`,
    ]) {
      const response = await send('POST', 'vertex-ai', 'v1', path);
      expect(response.status, `${path}: ${await response.clone().text()}`).to.equal(200);
      expect(upstream.requests.at(-1)!.url).to.equal(`/v1/${path}`);
    }
  });

  it('ElevenLabs: voice samples are account routes; reading a voice to speak with it is not', async () => {
    // https://elevenlabs.io/docs/api-reference/voices/samples/audio/get
    await expectRefused('GET', 'elevenlabs', 'v1', 'voices/21m00Tcm4TlvDq8ikWAM/samples/sample1/audio');
    await expectRefused('GET', 'elevenlabs', 'v1', 'voices/21m00Tcm4TlvDq8ikWAM/samples');
    await expectRefused('DELETE', 'elevenlabs', 'v1', 'voices/21m00Tcm4TlvDq8ikWAM/samples/sample1');
    expect(upstream.requests).to.have.length(0);
    expect((await send('GET', 'elevenlabs', 'v1', 'voices/21m00Tcm4TlvDq8ikWAM')).status).to.equal(200);
  });

  it('DeepL: usage is an account route; translating is not', async () => {
    // https://developers.deepl.com/api-reference/usage-and-quota
    await expectRefused('GET', 'deepl', 'v2', 'usage');
    await expectRefused('POST', 'deepl', 'v2', 'usage');
    expect(upstream.requests).to.have.length(0);
    expect((await send('POST', 'deepl', 'v2', 'translate')).status).to.equal(200);
  });
});
