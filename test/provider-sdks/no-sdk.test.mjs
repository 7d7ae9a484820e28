/**
 * Providers without an official JavaScript SDK on npm (or whose SDK cannot address the gateway), called as an app would
 * with fetch, through the real gateway, against a fake upstream answering in the documented format.
 * - Fireworks image: https://docs.fireworks.ai/guides/image-generation (FLUX: POST
 *   /inference/v1/workflows/accounts/fireworks/models/{model}/text_to_image; other models: POST
 *   /inference/v1/image_generation/accounts/fireworks/models/{model}); `Authorization: Bearer`.
 * - Cloudflare Workers AI image: https://developers.cloudflare.com/workers-ai/models/flux-1-schnell/ (POST
 *   /client/v4/accounts/{account_id}/ai/run/@cf/black-forest-labs/flux-1-schnell, JSON {result: {image: base64}}).
 *   The `cloudflare` npm SDK builds `/accounts/{id}/ai/run/{model}` from `/client/v4`, while the account id belongs to
 *   the operator's secret here, so apps use the declared `v1-cf` version instead.
 * - Ideogram: https://developer.ideogram.ai/api-reference/api-reference/generate-v4 (POST /v1/ideogram-v4/generate,
 *   multipart) and https://developer.ideogram.ai/api-reference/api-reference/generate (legacy POST /generate at the
 *   host root); `Api-Key`.
 * - Google Cloud Translation Basic: https://cloud.google.com/translate/docs/reference/rest/v2/translate (POST
 *   https://translation.googleapis.com/language/translate/v2, no trailing slash; key in `key=`).
 */
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, only, respondJson, respondBytes, assert } from './harness.mjs';

const ACCOUNT = '0123456789abcdef0123456789abcdef';

describe('providers without an official SDK: fixture calls through the gateway', function () {
  let suite;
  before(async function () {
    suite = await startSuite(
      { fireworks: '/inference', 'workers-ai': `/client/v4/accounts/${ACCOUNT}/ai`, ideogram: '', 'google-translate': '/language/translate' },
      { tenants: { 'workers-ai': `https://api.cloudflare.com/client/v4/accounts/${ACCOUNT}/ai` } },
    );
  });
  after(async () => suite?.close());
  beforeEach(() => suite.upstream.reset());

  const post = (url, body, headers = {}) => fetch(url, { method: 'POST', headers: { ...suite.headers, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  describe('fireworks image', function () {
    const bearer = ['Authorization', `Bearer ${serverKey('fireworks')}`];
    it('FLUX: workflows/accounts/fireworks/models/{model}/text_to_image (image bytes)', async function () {
      const jpeg = Buffer.from('\xff\xd8fake-jpeg');
      suite.upstream.on(/text_to_image/, respondBytes(jpeg, 'image/jpeg'));
      const response = await post(`${suite.base('fireworks', 'v1')}/workflows/accounts/fireworks/models/flux-1-schnell-fp8/text_to_image`, { prompt: 'A lighthouse', aspect_ratio: '1:1' }, { accept: 'image/jpeg', authorization: `Bearer ${CLIENT_KEY}` });
      assert.equal(response.status, 200);
      assert.deepEqual(Buffer.from(await response.arrayBuffer()), jpeg);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/inference/v1/workflows/accounts/fireworks/models/flux-1-schnell-fp8/text_to_image', header: bearer });
    });
    it('other models: image_generation/accounts/fireworks/models/{model}', async function () {
      suite.upstream.on(/image_generation/, respondJson(200, [{ base64: 'iVBORw0KGgo=', finishReason: 'SUCCESS', seed: 1 }]));
      const response = await post(`${suite.base('fireworks', 'v1')}/image_generation/accounts/fireworks/models/stable-diffusion-xl-1024-v1-0`, { prompt: 'A lighthouse' });
      assert.equal(response.status, 200);
      assert.equal((await response.json())[0].base64, 'iVBORw0KGgo=');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/inference/v1/image_generation/accounts/fireworks/models/stable-diffusion-xl-1024-v1-0', header: bearer });
    });
  });

  describe('workers-ai image', function () {
    const bearer = ['Authorization', `Bearer ${serverKey('workers-ai')}`];
    it('v1-cf maps to /ai/run/@cf: the @ comes from the manifest, never from the client', async function () {
      suite.upstream.on(/flux-1-schnell/, respondJson(200, { result: { image: 'iVBORw0KGgo=' }, success: true, errors: [], messages: [] }));
      const response = await post(`${suite.base('workers-ai', 'v1-cf')}/black-forest-labs/flux-1-schnell`, { prompt: 'A lighthouse', steps: 4 });
      assert.equal(response.status, 200);
      assert.equal((await response.json()).result.image, 'iVBORw0KGgo=');
      assertUpstream(only(suite.upstream), { method: 'POST', path: `/client/v4/accounts/${ACCOUNT}/ai/run/@cf/black-forest-labs/flux-1-schnell`, header: bearer });
    });
    it('a client path cannot name the @cf root itself: "@" in its first segment is refused, other models stay outside the allow-list', async function () {
      for (const path of ['v1-cf/%40cf/black-forest-labs/flux-1-schnell', 'v1-cf/@cf/black-forest-labs/flux-1-schnell']) {
        const response = await post(`${suite.base('workers-ai')}/${path}`, { prompt: 'x' });
        assert.equal(response.status, 400, path);
        assert.equal((await response.json()).error.reason, 'unsafe_path_at_sign', path);
      }
      // "@" below the first segment is a path character (Vertex AI's Anthropic models are named with one), but v1 has
      // no run/ route: a text model under run/@cf stays unreachable.
      const response = await post(`${suite.base('workers-ai')}/v1/run/@cf/meta/llama-3.1-8b-instruct`, { prompt: 'x' });
      assert.equal(response.status, 400);
      assert.equal((await response.json()).error.reason, 'route_not_allowed');
      assert.equal(suite.upstream.requests.length, 0);
    });
  });

  describe('ideogram', function () {
    const credential = ['Api-Key', serverKey('ideogram')];
    const answer = { created: '2026-01-01T00:00:00Z', data: [{ prompt: 'A lighthouse', resolution: '2048x2048', is_image_safe: true, seed: 1, url: 'https://ideogram.ai/api/images/ephemeral/x.png' }] };
    it('current API: POST /v1/ideogram-v4/generate (multipart)', async function () {
      suite.upstream.on(/ideogram-v4\/generate/, respondJson(200, answer));
      const form = new FormData();
      form.set('text_prompt', 'A lighthouse');
      const response = await fetch(`${suite.base('ideogram', 'v1')}/ideogram-v4/generate`, { method: 'POST', headers: { ...suite.headers, 'api-key': CLIENT_KEY }, body: form });
      assert.equal(response.status, 200);
      assert.equal((await response.json()).data[0].url, answer.data[0].url);
      const request = only(suite.upstream);
      assertUpstream(request, { method: 'POST', path: '/v1/ideogram-v4/generate', header: credential });
      assert.match(request.headers['content-type'], /^multipart\/form-data/);
    });
    it('legacy API at the host root: POST /generate', async function () {
      suite.upstream.on(/generate/, respondJson(200, answer));
      const response = await post(`${suite.base('ideogram', 'v1-root')}/generate`, { image_request: { prompt: 'A lighthouse', model: 'V_2' } });
      assert.equal(response.status, 200);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/generate', header: credential });
    });
  });

  describe('google-translate', function () {
    it('the root route goes upstream as /language/translate/v2, without a trailing slash (key in the query)', async function () {
      // WAITS FOR a core change: joinUpstreamUrl (core/pipeline/proxy-path.ts) always joins `${prefix}/${path}`.
      suite.upstream.on(/translate/, respondJson(200, { data: { translations: [{ translatedText: 'Hallo', detectedSourceLanguage: 'en' }] } }));
      const response = await post(`${suite.base('google-translate', 'v2')}?key=${CLIENT_KEY}`, { q: 'Hello', target: 'de' });
      assert.equal(response.status, 200);
      assert.equal((await response.json()).data.translations[0].translatedText, 'Hallo');
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/language/translate/v2', queryKey: ['key', serverKey('google-translate')] });
    });
    it('detect: POST /language/translate/v2/detect', async function () {
      suite.upstream.on(/detect/, respondJson(200, { data: { detections: [[{ language: 'en', confidence: 1, isReliable: false }]] } }));
      const response = await post(`${suite.base('google-translate', 'v2')}/detect`, { q: 'Hello' });
      assert.equal(response.status, 200);
      assertUpstream(only(suite.upstream), { method: 'POST', path: '/language/translate/v2/detect', queryKey: ['key', serverKey('google-translate')] });
    });
  });
});
