/**
 * Where request bodies name the output limit (`requestFields` in the manifests) and what a reservation is estimated
 * from; the merge of `streamUsageRequest` into streaming bodies; the filter that keeps the usage-only SSE event the
 * gateway asked for from the client. Request shapes as each provider documents them (cited in its manifest).
 */
import { expect } from 'chai';
import type { ProviderManifest } from '../../core/contract';
import { validateManifest } from '../../core/registry/provider-registry';
import { BUILT_IN_PROVIDERS_DIRECTORY, discoverProviderFolders } from '../../core/server/plugin-loader';
import { BYTES_PER_INPUT_TOKEN, estimateTokens, requestFieldsFor } from '../../core/pipeline/token-reservation';
import { UsageEventFilter } from '../../core/pipeline/usage-event-filter';
import { OPENAI_USAGE } from '../../providers/_shared';

const manifests = new Map<string, ProviderManifest>(discoverProviderFolders(BUILT_IN_PROVIDERS_DIRECTORY).map((manifest) => [manifest.slug, manifest]));
const manifest = (slug: string) => manifests.get(slug)!;
const body = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('requestFields: the output limit a reservation counts', () => {
  it('every built-in provider that reads usage declares where its bodies name the output limit, and the declarations are valid', () => {
    const withUsage = [...manifests.values()].filter((candidate) => candidate.usage);
    expect(withUsage.length).to.be.greaterThan(20);
    for (const candidate of withUsage) {
      expect(candidate.requestFields?.length ?? 0, candidate.slug).to.be.greaterThan(0);
      validateManifest(candidate);
    }
    expect(() => validateManifest({ ...manifest('openai'), requestFields: [{ methods: ['POST'], path: '../x' }] })).to.throw(/requestFields route/);
    expect(() => validateManifest({ ...manifest('openai'), requestFields: [{ methods: ['POST'], path: 'x', outputLimit: ['a b'] }] })).to.throw(/dotted member path/);
  });

  const cases: Array<[slug: string, path: string, request: unknown, output: number]> = [
    ['openai', 'chat/completions', { model: 'gpt-4o-mini', max_completion_tokens: 50, max_tokens: 70, messages: [] }, 50],
    ['openai', 'chat/completions', { model: 'gpt-4o-mini', max_tokens: 70, messages: [] }, 70],
    ['openai', 'chat/completions', { model: 'gpt-4o-mini', messages: [] }, 4096],
    ['openai', 'completions', { model: 'gpt-3.5-turbo-instruct', prompt: 'x' }, 16],
    ['openai', 'responses', { model: 'gpt-4o-mini', input: 'x', max_output_tokens: 300 }, 300],
    ['openai', 'embeddings', { model: 'text-embedding-3-small', input: 'x' }, 0],
    ['groq', 'chat/completions', { model: 'llama', max_tokens: 33 }, 33],
    ['anthropic', 'messages', { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [] }, 1024],
    ['gemini', 'models/gemini-2.0-flash:generateContent', { contents: [], generationConfig: { maxOutputTokens: 256 } }, 256],
    ['gemini', 'models/gemini-2.0-flash:streamGenerateContent', { contents: [] }, 8192],
    ['vertex-ai', 'projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent', { contents: [], generationConfig: { maxOutputTokens: 77 } }, 77],
    ['cohere', 'chat', { model: 'command-r', max_tokens: 90, messages: [] }, 90],
    ['mistral', 'fim/completions', { model: 'codestral-latest', prompt: 'x', max_tokens: 12 }, 12],
    ['bedrock', 'model/anthropic.claude-3-haiku-20240307-v1:0/converse', { messages: [], inferenceConfig: { maxTokens: 64 } }, 64],
    ['bedrock', 'model/meta.llama3-8b-instruct-v1:0/invoke', { prompt: 'x', max_gen_len: 128 }, 128],
    ['azure-openai', 'deployments/my-gpt/chat/completions', { max_completion_tokens: 40, messages: [] }, 40],
  ];
  for (const [slug, path, request, output] of cases) {
    it(`${slug} ${path}: reserves ${output} output tokens and the body's bytes / ${BYTES_PER_INPUT_TOKEN} of input`, () => {
      const bytes = body(request);
      const estimate = estimateTokens(manifest(slug), 'POST', path, bytes, false);
      expect(estimate).to.deep.include({ inputTokens: Math.ceil(bytes.length / BYTES_PER_INPUT_TOKEN), outputTokens: output, addedStreamUsage: false });
      expect(estimate.body).to.equal(bytes);
    });
  }

  it('a body that is not a JSON object, another method or an undeclared route reserves its input only (or the default)', () => {
    expect(estimateTokens(manifest('openai'), 'POST', 'audio/speech', body({ input: 'x' }), true).outputTokens).to.equal(0);
    expect(estimateTokens(manifest('openai'), 'GET', 'chat/completions', Buffer.alloc(0), true)).to.deep.include({ inputTokens: 0, outputTokens: 0 });
    expect(estimateTokens(manifest('openai'), 'POST', 'chat/completions', Buffer.from('[1,2]'), true).outputTokens).to.equal(4096);
    expect(estimateTokens(manifest('openai'), 'POST', 'chat/completions', Buffer.from('{"max_tokens":'), true).outputTokens).to.equal(4096);
    expect(estimateTokens(manifest('openai'), 'POST', 'chat/completions', body({ max_tokens: -5 }), true).outputTokens).to.equal(4096);
    expect(requestFieldsFor(manifest('openai'), 'POST', 'chat/completions/')?.path).to.equal('chat/completions');
    // Read as the model policy and the route classes read the path: an encoded slash or a matrix parameter does not hide
    // the declared output limit from the reservation.
    for (const spelled of ['chat%2Fcompletions', 'chat/completions;v=1', 'Chat/Completions'])
      expect(estimateTokens(manifest('openai'), 'POST', spelled, body({ max_tokens: 7 }), false).outputTokens, spelled).to.equal(7);
  });

  it('merges stream_options.include_usage into an OpenAI-style streaming body only when asked to and not already there', () => {
    const streaming = body({ model: 'm', stream: true, stream_options: { other: 1 }, messages: [] });
    const merged = estimateTokens(manifest('openai'), 'POST', 'chat/completions', streaming, true);
    expect(merged.addedStreamUsage).to.equal(true);
    expect(JSON.parse(merged.body.toString())).to.deep.equal({ model: 'm', stream: true, stream_options: { other: 1, include_usage: true }, messages: [] });
    const asked = Buffer.from('{"stream":true, "stream_options":{"include_usage":true}}');
    expect(estimateTokens(manifest('openai'), 'POST', 'chat/completions', asked, true)).to.deep.include({ body: asked, addedStreamUsage: false });
    const notStreaming = body({ model: 'm', messages: [] });
    expect(estimateTokens(manifest('openai'), 'POST', 'chat/completions', notStreaming, true).body).to.equal(notStreaming);
    expect(estimateTokens(manifest('openai'), 'POST', 'chat/completions', streaming, false).body).to.equal(streaming);
    // Streams that report usage unasked: nothing is merged.
    for (const [slug, path] of [['mistral', 'chat/completions'], ['anthropic', 'messages'], ['openai', 'responses']] as const) {
      expect(estimateTokens(manifest(slug), 'POST', path, streaming, true).addedStreamUsage, slug).to.equal(false);
    }
  });
});

describe('the usage-only stream event the gateway asked for', () => {
  const chunk = { id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Hi' } }], usage: null };
  const usageOnly = { id: 'c', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } };
  const events = (newline: string) => [chunk, usageOnly].map((event) => `data: ${JSON.stringify(event)}${newline}${newline}`).join('') + `data: [DONE]${newline}${newline}`;

  for (const newline of ['\n', '\r\n']) {
    it(`is dropped however the stream is cut into chunks (${JSON.stringify(newline)} line ends), the rest relayed byte for byte`, () => {
      const stream = Buffer.from(events(newline));
      const expected = `data: ${JSON.stringify(chunk)}${newline}${newline}data: [DONE]${newline}${newline}`;
      for (const size of [1, 7, 64, stream.length]) {
        const filter = new UsageEventFilter(OPENAI_USAGE);
        const relayed: Buffer[] = [];
        for (let at = 0; at < stream.length; at += size) relayed.push(filter.push(stream.subarray(at, at + size)));
        relayed.push(filter.flush());
        expect(Buffer.concat(relayed).toString(), `chunks of ${size}`).to.equal(expected);
      }
    });
  }

  it('keeps an event that reports usage beside content (a last chunk with its finish reason), and an unterminated last event', () => {
    const withChoice = `data: ${JSON.stringify({ choices: [{ index: 0, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2 } })}\n\n`;
    const filter = new UsageEventFilter(OPENAI_USAGE);
    expect(filter.push(Buffer.from(withChoice)).toString()).to.equal(withChoice);
    expect(filter.push(Buffer.from('data: {"choices":[{"index":0}]}')).length).to.equal(0);
    expect(filter.flush().toString()).to.equal('data: {"choices":[{"index":0}]}');
    const unterminatedUsage = new UsageEventFilter(OPENAI_USAGE);
    unterminatedUsage.push(Buffer.from(`data: ${JSON.stringify(usageOnly)}`));
    expect(unterminatedUsage.flush().length).to.equal(0);
  });
});
