/**
 * Official Google Gen AI SDK (`@google/genai`) through the gateway: Gemini API (generateContent, streamed SSE,
 * embeddings, Imagen, resumable files.upload) and Vertex AI mode (the gateway mints the OAuth token from the operator's
 * service-account key; the SDK's own token never reaches Google).
 * Wire formats: https://ai.google.dev/api/generate-content (models/{m}:generateContent, :streamGenerateContent?alt=sse,
 * `x-goog-api-key`), https://ai.google.dev/api/embeddings (models/{m}:batchEmbedContents),
 * https://ai.google.dev/gemini-api/docs/image-generation (generateContent with an image model, inlineData parts), https://ai.google.dev/api/files#method:-media.upload
 * (POST /upload/v1beta/files with X-Goog-Upload-Protocol: resumable, answered with X-Goog-Upload-URL; the bytes then go to
 * that URL with X-Goog-Upload-Command: upload, finalize), and
 * https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/projects.locations.endpoints/generateContent.
 */
import { generateKeyPairSync } from 'node:crypto';
import { GoogleGenAI } from '@google/genai';
import { OAuth2Client } from 'google-auth-library';
import { startSuite, CLIENT_KEY, serverKey, assertUpstream, assertNoLeak, only, respondJson, respondChunks, assert } from './harness.mjs';

const MINTED = 'ya29.gateway-minted-access-token';
const answer = (text) => ({ candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } });
const sse = (events) => events.map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`);

function serviceAccountKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return JSON.stringify({ type: 'service_account', project_id: 'demo-project', private_key_id: 'k1', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), client_email: 'tollgate@demo-project.iam.gserviceaccount.com' });
}

describe('official SDK: @google/genai', function () {
  let suite;
  let ai;
  const previousTokenUrl = process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL;
  const credential = ['x-goog-api-key', serverKey('gemini')];

  before(async function () {
    suite = await startSuite({ gemini: '', 'vertex-ai': '' }, { secrets: { 'vertex-ai': serviceAccountKey() } });
    process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL = `${suite.upstream.url}/oauth2/token`;
    // The SDK writes `/{apiVersion}/…` itself: its base URL is the provider root, the API version the gateway version.
    ai = new GoogleGenAI({ apiKey: CLIENT_KEY, httpOptions: { baseUrl: suite.base('gemini'), apiVersion: 'v1beta', headers: suite.headers } });
  });
  after(async function () {
    if (previousTokenUrl === undefined) delete process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL;
    else process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL = previousTokenUrl;
    await suite?.close();
  });
  beforeEach(() => suite.upstream.reset());

  it('models.generateContent', async function () {
    suite.upstream.on(/:generateContent/, respondJson(200, answer('Hello from the fake')));
    const result = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' });
    assert.equal(result.text, 'Hello from the fake');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1beta/models/gemini-2.5-flash:generateContent', header: credential });
  });

  it('models.generateContentStream (SSE, alt=sse)', async function () {
    suite.upstream.on(/:streamGenerateContent/, respondChunks(sse([answer('Hel'), answer('lo')])));
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Hi' });
    let text = '';
    for await (const part of stream) text += part.text ?? '';
    assert.equal(text, 'Hello');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1beta/models/gemini-2.5-flash:streamGenerateContent', query: { alt: 'sse' }, header: credential });
  });

  it('models.embedContent', async function () {
    suite.upstream.on(/Content/, respondJson(200, { embeddings: [{ values: [0.5, -0.25] }] }));
    const result = await ai.models.embedContent({ model: 'gemini-embedding-001', contents: 'Hi' });
    assert.deepEqual(result.embeddings[0].values, [0.5, -0.25]);
    const request = only(suite.upstream);
    assert.match(new URL(request.url, 'http://x').pathname, /^\/v1beta\/models\/gemini-embedding-001:(batchEmbedContents|embedContent)$/);
    assertUpstream(request, { method: 'POST', path: new URL(request.url, 'http://x').pathname, header: credential });
  });

  it('image generation: models.generateContent with an image model (inlineData)', async function () {
    const image = { candidates: [{ content: { role: 'model', parts: [{ inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }] }, finishReason: 'STOP', index: 0 }] };
    suite.upstream.on(/:generateContent/, respondJson(200, image));
    const result = await ai.models.generateContent({ model: 'gemini-2.5-flash-image', contents: 'A lighthouse' });
    assert.equal(result.data, 'iVBORw0KGgo=');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1beta/models/gemini-2.5-flash-image:generateContent', header: credential });
  });

  it("a client's own ?key= never reaches Google (the app cannot bring its own key)", async function () {
    // WAITS FOR the routes branch (client credential channels stripped in core).
    suite.upstream.on(/:generateContent/, respondJson(200, answer('Hello from the fake')));
    const response = await fetch(`${suite.base('gemini', 'v1beta')}/models/gemini-2.5-flash:generateContent?key=${CLIENT_KEY}`, { method: 'POST', headers: { ...suite.headers, 'content-type': 'application/json' }, body: JSON.stringify({ contents: [{ parts: [{ text: 'Hi' }] }] }) });
    assert.equal(response.status, 200);
    const request = only(suite.upstream);
    assertUpstream(request, { method: 'POST', path: '/v1beta/models/gemini-2.5-flash:generateContent', header: credential });
    assert.equal(new URL(request.url, 'http://x').searchParams.get('key'), null);
  });

  const uploadedFile = { name: 'files/abc', displayName: 'clip', mimeType: 'text/plain', sizeBytes: '5', uri: 'https://generativelanguage.googleapis.com/v1beta/files/abc', state: 'ACTIVE' };
  function answerUpload() {
    // Google answers the start with an upload URL on its own API host (the same origin as the API).
    suite.upstream.on((request) => request.headers['x-goog-upload-command'] === 'start', respondJson(200, {}, { 'x-goog-upload-url': `${suite.upstream.url}/upload/v1beta/files?upload_id=u-1&upload_protocol=resumable`, 'x-goog-upload-status': 'active' }));
    suite.upstream.on((request) => /finalize/.test(String(request.headers['x-goog-upload-command'])), respondJson(200, { file: uploadedFile }, { 'x-goog-upload-status': 'final' }));
  }
  const upload = () => ai.files.upload({ file: new Blob(['hello'], { type: 'text/plain' }), config: { mimeType: 'text/plain', displayName: 'clip', httpOptions: { baseUrl: suite.base('gemini', 'v1-root'), apiVersion: 'v1beta', headers: suite.headers } } });

  it('files.upload: the resumable start (POST /upload/v1beta/files) through v1-root with the gateway key', async function () {
    answerUpload();
    await upload().catch(() => undefined);
    const start = suite.upstream.requests[0];
    assert.ok(start, 'the upload start never reached the upstream');
    assertUpstream(start, { method: 'POST', path: '/upload/v1beta/files', header: credential });
    assert.equal(start.headers['x-goog-upload-protocol'], 'resumable');
    assert.equal(start.headers['x-goog-upload-command'], 'start');
    assert.equal(start.headers['x-goog-upload-header-content-length'], '5');
  });

  it('files.upload: the bytes go to the upload URL through the gateway with the gateway key', async function () {
    // The SDK keeps the upload URL's path and swaps in its base URL's host (_cross_uploader.ts), so the gateway must
    // rewrite X-Goog-Upload-URL to a path under /v1/proxy/gemini/v1-root/ for the bytes to arrive with the operator's
    // key. WAITS FOR a core change (rewriting that response header), which is outside this branch.
    answerUpload();
    const uploaded = await upload();
    assert.equal(uploaded.name, 'files/abc');
    const bytes = suite.upstream.requests[1];
    assertUpstream(bytes, { method: 'POST', path: '/upload/v1beta/files', query: { upload_id: 'u-1' }, header: credential });
    assert.equal(bytes.body.toString(), 'hello');
  });

  it('files.upload with the plain base URL: the start (POST /upload/v1beta/files) and the bytes both go through the gateway with its key', async function () {
    // The SDK writes `upload/{apiVersion}/files` below its base URL: with `<gateway>/v1/proxy/gemini` the first segment,
    // `upload`, is the gateway version mapped to `/upload`; the upload URL Google answers with comes back under it.
    answerUpload();
    const uploaded = await ai.files.upload({ file: new Blob(['hello'], { type: 'text/plain' }), config: { mimeType: 'text/plain', displayName: 'clip' } });
    assert.equal(uploaded.name, 'files/abc');
    const [start, bytes] = suite.upstream.requests;
    assertUpstream(start, { method: 'POST', path: '/upload/v1beta/files', header: credential });
    assert.equal(start.headers['x-goog-upload-command'], 'start');
    assertUpstream(bytes, { method: 'POST', path: '/upload/v1beta/files', query: { upload_id: 'u-1' }, header: credential });
    assert.equal(bytes.body.toString(), 'hello');
  });

  it('files.upload with the plain base URL given per call (httpOptions) works the same', async function () {
    answerUpload();
    const uploaded = await ai.files.upload({ file: new Blob(['hello'], { type: 'text/plain' }), config: { mimeType: 'text/plain', httpOptions: { baseUrl: suite.base('gemini'), apiVersion: 'v1beta', headers: suite.headers } } });
    assert.equal(uploaded.name, 'files/abc');
    assert.equal(suite.upstream.requests.length, 2);
    for (const request of suite.upstream.requests) assertUpstream(request, { method: 'POST', path: '/upload/v1beta/files', header: credential });
  });

  it('the upload as older @google/genai releases send it with a base URL (v1beta/upload/v1beta/files) reaches the upload route', async function () {
    // Those releases write `upload/v1beta/files` below `{baseUrl}/{apiVersion}` (Google itself answers that path 404);
    // the manifest's root path `upload/` sends it from the host root whatever version names it.
    answerUpload();
    const start = await fetch(`${suite.base('gemini', 'v1beta')}/upload/v1beta/files`, {
      method: 'POST',
      headers: { ...suite.headers, 'content-type': 'application/json', 'x-goog-upload-protocol': 'resumable', 'x-goog-upload-command': 'start', 'x-goog-upload-header-content-length': '5', 'x-goog-upload-header-content-type': 'text/plain' },
      body: JSON.stringify({ file: { displayName: 'clip' } }),
    });
    assert.equal(start.status, 200);
    const uploadUrl = start.headers.get('x-goog-upload-url');
    assert.equal(new URL(uploadUrl).pathname, '/v1/proxy/gemini/upload/v1beta/files');
    const bytes = await fetch(uploadUrl, { method: 'POST', headers: { ...suite.headers, 'x-goog-upload-command': 'upload, finalize', 'x-goog-upload-offset': '0' }, body: 'hello' });
    assert.equal(bytes.status, 200);
    assert.equal((await bytes.json()).file.name, 'files/abc');
    assert.equal(suite.upstream.requests.length, 2);
    for (const request of suite.upstream.requests) assertUpstream(request, { method: 'POST', path: '/upload/v1beta/files', header: credential });
  });

  it("an app's model policy holds for the model the SDK puts in the path: an alias replaced, another model refused", async function () {
    suite.upstream.on(/:generateContent/, respondJson(200, answer('Hello from the fake')));
    const { appId, appToken } = await suite.gateway.createApp({ modelPolicy: { gemini: { allow: ['gemini-2.5-flash'], aliases: { fast: 'gemini-2.5-flash' } } } });
    await suite.gateway.setSecret(appId, 'gemini', serverKey('gemini'));
    const headers = { 'Tollgate-App-Token': appToken, 'Tollgate-Device-Token': await suite.gateway.deviceToken(appId, appToken) };
    const policed = new GoogleGenAI({ apiKey: CLIENT_KEY, httpOptions: { baseUrl: suite.base('gemini'), apiVersion: 'v1beta', headers } });
    const result = await policed.models.generateContent({ model: 'fast', contents: 'Hi' });
    assert.equal(result.text, 'Hello from the fake');
    assertUpstream(only(suite.upstream), { method: 'POST', path: '/v1beta/models/gemini-2.5-flash:generateContent', header: credential });
    suite.upstream.reset();
    const refused = await policed.models.generateContent({ model: 'gemini-2.5-pro', contents: 'Hi' }).then(() => undefined, (error) => error);
    assert.equal(refused?.status, 400);
    assert.match(String(refused?.message), /model_not_allowed/);
    assert.equal(suite.upstream.requests.length, 0);
  });

  it('Vertex AI mode: models.generateContent and generateContentStream with the gateway-minted token', async function () {
    suite.upstream.on(/\/oauth2\/token/, respondJson(200, { access_token: MINTED, expires_in: 3599, token_type: 'Bearer' }));
    suite.upstream.on(/:generateContent/, respondJson(200, answer('Hello from Vertex')));
    suite.upstream.on(/:streamGenerateContent/, respondChunks(sse([answer('Hel'), answer('lo')])));
    // The SDK authenticates itself with its own OAuth client; that token must be dropped by the gateway.
    const authClient = new OAuth2Client();
    authClient.setCredentials({ access_token: CLIENT_KEY, expiry_date: Date.now() + 3_600_000 });
    const vertex = new GoogleGenAI({ vertexai: true, project: 'demo-project', location: 'us-central1', googleAuthOptions: { authClient }, httpOptions: { baseUrl: suite.base('vertex-ai'), apiVersion: 'v1', headers: suite.headers } });
    const result = await vertex.models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hi' });
    assert.equal(result.text, 'Hello from Vertex');
    const stream = await vertex.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'Hi' });
    let text = '';
    for await (const part of stream) text += part.text ?? '';
    assert.equal(text, 'Hello');
    const calls = suite.upstream.requests.filter((request) => !request.url.startsWith('/oauth2/'));
    assert.equal(calls.length, 2);
    const model = '/v1/projects/demo-project/locations/us-central1/publishers/google/models/gemini-2.5-flash';
    assertUpstream(calls[0], { method: 'POST', path: `${model}:generateContent`, header: ['Authorization', `Bearer ${MINTED}`] });
    assertUpstream(calls[1], { method: 'POST', path: `${model}:streamGenerateContent`, query: { alt: 'sse' }, header: ['Authorization', `Bearer ${MINTED}`] });
    for (const request of suite.upstream.requests) assertNoLeak(request);
  });
});
