/**
 * The upstream host is never chosen by the client: every path that could leave the provider's base URL is refused with
 * `invalidRequest` and nothing is sent upstream (protocol.md, "Addresses"; style.md, "Known traps").
 */
import { expect } from 'chai';
import { checkProviderPath, hostMatches, joinUpstreamUrl } from '../../core/pipeline/proxy-path';
import { gatewayUrlFor, rewriteResponseUrls } from '../../core/pipeline/response-urls';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { rawRequest, type ErrorBody } from '../support/http';

const UNSAFE: ReadonlyArray<[string, string]> = [
  ['dot-dot segment', '../../admin'],
  ['dot-dot inside', 'chat/../../x'],
  ['single dot segment', './chat/completions'],
  ['encoded dot-dot', '%2e%2e/%2e%2e/x'],
  ['mixed-case encoded dot-dot', '%2E%2e/x'],
  ['encoded slash before dot-dot', 'chat%2F..%2F..%2Fx'],
  ['double-encoded dot-dot', '%252e%252e/x'],
  ['protocol-relative //host', '/evil.example/x'],
  ['encoded //host', '%2F%2Fevil.example/x'],
  ['userinfo @', '@evil.example/x'],
  ['encoded @', 'x%40evil.example'],
  ['@ in the first segment after a name', 'chat@evil.example/x'],
  ['double-encoded @ in the first segment', 'x%2540evil.example/y'],
  ['backslash', '%5Cevil.example/x'],
  ['encoded backslash pair', '%5C%5Cevil.example'],
  ['absolute URL', 'http://evil.example/x'],
  ['scheme without slashes', 'http:evil.example'],
  ['encoded absolute URL', 'https%3A%2F%2Fevil.example'],
  ['NUL', 'chat%00/completions'],
  ['CRLF', 'chat%0d%0aHost:%20evil'],
  ['tab', '%09//evil.example'],
  ['DEL', 'chat%7f'],
  ['malformed percent-encoding', 'chat%zz'],
];

describe('unsafe provider paths', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url } });
    device = await gateway.provision({ openai: 'sk-paths-0123456789abcdef' });
  });
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  for (const [name, providerPath] of UNSAFE) {
    it(`refuses ${name} (${providerPath}) with invalidRequest and sends nothing upstream`, async () => {
      const before = upstream.requests.length;
      const response = await rawRequest(gateway.url, { method: 'POST', path: `/v1/proxy/openai/v1/${providerPath}`, headers: device.headers, body: '{}' });
      expect(response.status, response.text()).to.equal(400);
      expect(response.headers['tollgate-error']).to.equal('invalidRequest');
      expect(response.json<ErrorBody>().error.type).to.equal('invalidRequest');
      expect(upstream.requests.length).to.equal(before);
    });
  }

  it('still forwards ordinary paths with colons, encoded spaces and query strings', async () => {
    const response = await rawRequest(gateway.url, {
      method: 'POST',
      path: '/v1/proxy/openai/v1/chat/completions?api-version=2024-02-01&x=a%20b',
      headers: device.headers,
      body: '{}',
    });
    expect(response.status).to.equal(200);
    expect(upstream.last().url).to.equal('/v1/chat/completions?api-version=2024-02-01&x=a%20b');
  });

  describe('checkProviderPath and joinUpstreamUrl (unit)', () => {
    it('accepts the shapes providers use', () => {
      for (const path of ['chat/completions', 'models/gemini-2.0-flash:streamGenerateContent', 'text-to-speech/21m00Tcm4TlvDq8ikWAM/stream', 'fal-ai/flux/dev', 'files/file-abc%20def', '']) {
        expect(checkProviderPath(path)).to.equal(path);
      }
    });
    it('refuses every unsafe form', () => {
      for (const [, path] of UNSAFE) expect(() => checkProviderPath(path), path).to.throw(/not allowed/);
    });
    it('keeps the base origin and path prefix', () => {
      expect(joinUpstreamUrl('https://api.groq.com/openai', '/v1', 'chat/completions', 'a=1')).to.deep.equal({ origin: 'https://api.groq.com', path: '/openai/v1/chat/completions?a=1' });
      expect(joinUpstreamUrl('https://api.perplexity.ai', '', 'chat/completions', '')).to.deep.equal({ origin: 'https://api.perplexity.ai', path: '/chat/completions' });
      // The version root goes upstream as documented, without a slash added (Google Translate: POST /language/translate/v2).
      expect(joinUpstreamUrl('https://translation.googleapis.com/language/translate', '/v2', '', 'q=1')).to.deep.equal({ origin: 'https://translation.googleapis.com', path: '/language/translate/v2?q=1' });
      expect(joinUpstreamUrl('https://api.perplexity.ai', '', '', '')).to.deep.equal({ origin: 'https://api.perplexity.ai', path: '/' });
    });
  });
});

describe('provider URLs in response headers (response-urls.ts)', () => {
  const rewrite = {
    headers: ['x-goog-upload-url'],
    upstreamOrigin: 'https://generativelanguage.googleapis.com',
    versions: [{ name: 'v1beta', prefix: '/v1beta' }, { name: 'v1', prefix: '/v1' }, { name: 'v1-root', prefix: '' }],
    proxyBase: 'https://gateway.example.com/v1/proxy/gemini',
  };
  it('maps a provider URL to the gateway route of the longest matching version', () => {
    expect(gatewayUrlFor('https://generativelanguage.googleapis.com/upload/v1beta/files?upload_id=u-1&upload_protocol=resumable', rewrite)).to.equal('https://gateway.example.com/v1/proxy/gemini/v1-root/upload/v1beta/files?upload_id=u-1&upload_protocol=resumable');
    expect(gatewayUrlFor('https://generativelanguage.googleapis.com/v1beta/files/abc', rewrite)).to.equal('https://gateway.example.com/v1/proxy/gemini/v1beta/files/abc');
  });
  it('never hands the client another host, userinfo or garbage', () => {
    expect(gatewayUrlFor('https://evil.example.com/upload/v1beta/files', rewrite)).to.equal(null);
    expect(gatewayUrlFor('https://user:pw@generativelanguage.googleapis.com/v1beta/files', rewrite)).to.equal(null);
    expect(gatewayUrlFor('not a url', rewrite)).to.equal(null);
    // Either half of a userinfo is enough to refuse the URL.
    expect(gatewayUrlFor('https://user@generativelanguage.googleapis.com/v1beta/files', rewrite)).to.equal(null);
    expect(gatewayUrlFor('https://:pw@generativelanguage.googleapis.com/v1beta/files', rewrite)).to.equal(null);
  });
  it('matches a version prefix on whole path segments only', () => {
    expect(gatewayUrlFor('https://generativelanguage.googleapis.com/v1beta', rewrite)).to.equal('https://gateway.example.com/v1/proxy/gemini/v1beta/');
    // `/v1betafoo` is not under `/v1beta` (nor `/v1`): only the host-root version takes it.
    expect(gatewayUrlFor('https://generativelanguage.googleapis.com/v1betafoo/x?a=1', rewrite)).to.equal('https://gateway.example.com/v1/proxy/gemini/v1-root/v1betafoo/x?a=1');
    // Without a host-root version, a URL under no declared prefix is refused.
    const noRoot = { ...rewrite, versions: rewrite.versions.filter((version) => version.prefix !== '') };
    expect(gatewayUrlFor('https://generativelanguage.googleapis.com/upload/v1beta/files', noRoot)).to.equal(null);
    expect(gatewayUrlFor('https://generativelanguage.googleapis.com/v1/files/abc', noRoot)).to.equal('https://gateway.example.com/v1/proxy/gemini/v1/files/abc');
  });
  it('rewrites the declared headers of an answer, removes the unmappable ones and leaves the others', () => {
    const headers: Record<string, string | string[] | undefined> = {
      'x-goog-upload-url': 'https://generativelanguage.googleapis.com/upload/v1beta/files?upload_id=u-2',
      'x-goog-upload-status': 'active',
      location: 'https://evil.example.com/x',
    };
    rewriteResponseUrls(headers, rewrite);
    expect(headers).to.deep.equal({
      'x-goog-upload-url': 'https://gateway.example.com/v1/proxy/gemini/v1-root/upload/v1beta/files?upload_id=u-2',
      'x-goog-upload-status': 'active',
      location: 'https://evil.example.com/x',
    });
    const foreign: Record<string, string | string[] | undefined> = { 'x-goog-upload-url': 'https://evil.example.com/upload', other: 'kept' };
    rewriteResponseUrls(foreign, rewrite);
    expect(foreign).to.deep.equal({ other: 'kept' });
    // A repeated header is not a URL the gateway can vouch for.
    const repeated: Record<string, string | string[] | undefined> = { 'x-goog-upload-url': ['https://generativelanguage.googleapis.com/v1beta/files/a', 'https://generativelanguage.googleapis.com/v1beta/files/b'] };
    rewriteResponseUrls(repeated, rewrite);
    expect(repeated).to.deep.equal({});
  });

  it('a secret\'s base URL host must match the provider\'s declared host patterns, label by label', () => {
    // The patterns the manifests declare (Azure resources, Bedrock regions, Vertex AI regional hosts).
    const cases: Array<[string, string, boolean]> = [
      ['api.elevenlabs.io', 'api.elevenlabs.io', true],
      ['API.ElevenLabs.IO', 'api.elevenlabs.io', true],
      ['api.elevenlabs.io.evil.example', 'api.elevenlabs.io', false],
      ['evil.example', 'api.elevenlabs.io', false],
      // A leading `*.` is one or more labels, never none.
      ['acme.openai.azure.com', '*.openai.azure.com', true],
      ['a.b.openai.azure.com', '*.openai.azure.com', true],
      ['openai.azure.com', '*.openai.azure.com', false],
      ['acme.openai.azure.com.evil.example', '*.openai.azure.com', false],
      ['acme.openai-azure.com', '*.openai.azure.com', false],
      // A `*` label elsewhere is exactly one label.
      ['bedrock-runtime.us-east-1.amazonaws.com', 'bedrock-runtime.*.amazonaws.com', true],
      ['bedrock-runtime.amazonaws.com', 'bedrock-runtime.*.amazonaws.com', false],
      ['bedrock-runtime.a.b.amazonaws.com', 'bedrock-runtime.*.amazonaws.com', false],
      ['bedrock.us-east-1.amazonaws.com', 'bedrock-runtime.*.amazonaws.com', false],
      // A `*` inside a label is one or more label characters.
      ['us-central1-aiplatform.googleapis.com', '*-aiplatform.googleapis.com', true],
      ['-aiplatform.googleapis.com', '*-aiplatform.googleapis.com', false],
      ['us.central1-aiplatform.googleapis.com', '*-aiplatform.googleapis.com', false],
      ['us-central1-aiplatformx.googleapis.com', '*-aiplatform.googleapis.com', false],
      // Labels must be labels: no empty ones, no leading or trailing hyphen, nothing else.
      ['acme..openai.azure.com', '*.openai.azure.com', false],
      ['-acme.openai.azure.com', '*.openai.azure.com', false],
      ['acme-.openai.azure.com', '*.openai.azure.com', false],
      ['ac_me.openai.azure.com', '*.openai.azure.com', false],
      ['a.openai.azure.com', '*.openai.azure.com', true],
    ];
    for (const [host, pattern, expected] of cases) expect(hostMatches(host, pattern), `${host} ~ ${pattern}`).to.equal(expected);
  });
});
