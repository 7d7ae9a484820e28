/**
 * Token usage read from each provider's own usage data (issue 20): fake upstreams answer in the documented formats,
 * JSON and streamed; the usage event records exactly the tokens the provider reported, and the client gets the bytes
 * unchanged. The tap never holds back a stream: the client has the first chunk before the provider sends its usage.
 */
import { expect } from 'chai';
import http from 'node:http';
import { crc32, gzipSync } from 'node:zlib';
import { FakeUpstream, sseEvents, type Responder } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import type { UsageEvent } from '../../core/storage/repositories';

const SECRETS: Record<string, string> = {
  openai: 'sk-usage-tokens-0123456789abcdef',
  groq: 'gsk_usage_tokens_0123456789abcdef',
  mistral: 'mistral-usage-tokens-0123456789',
  anthropic: 'sk-ant-usage-tokens-0123456789',
  gemini: 'AIza-usage-tokens-0123456789',
  cohere: 'cohere-usage-tokens-0123456789',
  voyage: 'pa-usage-tokens-0123456789',
  jina: 'jina_usage_tokens_0123456789',
  bedrock: JSON.stringify({ accessKeyId: 'AKIAUSAGETOKENS00000', secretAccessKey: 'usage-tokens-secret-access-key-000000000000' }),
};

/** Answers with the given body as one response. */
function json(body: unknown, headers: Record<string, string> = {}): Responder {
  return (_request, response) => {
    const payload = JSON.stringify(body);
    response.writeHead(200, { 'content-type': 'application/json', ...headers });
    response.end(payload);
  };
}

/** Streams `frames` one write each (a few ms apart, so they arrive as separate chunks). */
function stream(frames: readonly (string | Buffer)[], contentType = 'text/event-stream'): Responder {
  return async (_request, response) => {
    response.writeHead(200, { 'content-type': contentType });
    response.flushHeaders();
    for (const frame of frames) {
      response.write(frame);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    response.end();
  };
}

/** Named SSE events (`event:` then `data:`), as Anthropic and Cohere v2 send them. */
function namedEvents(events: ReadonlyArray<readonly [string, unknown]>): string[] {
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * One AWS event-stream message (https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream):
 * prelude (total length, headers length, CRC32), string headers (type 7), payload, message CRC32.
 */
function eventStreamMessage(eventType: string, payload: unknown): Buffer {
  const headers = Buffer.concat(
    Object.entries({ ':event-type': eventType, ':content-type': 'application/json', ':message-type': 'event' }).map(([name, value]) => {
      const nameBytes = Buffer.from(name);
      const valueBytes = Buffer.from(value);
      const length = Buffer.alloc(2);
      length.writeUInt16BE(valueBytes.length);
      return Buffer.concat([Buffer.from([nameBytes.length]), nameBytes, Buffer.from([7]), length, valueBytes]);
    }),
  );
  const body = Buffer.from(JSON.stringify(payload));
  const total = 12 + headers.length + body.length + 4;
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(total, 0);
  prelude.writeUInt32BE(headers.length, 4);
  const preludeCrc = Buffer.alloc(4);
  preludeCrc.writeUInt32BE(crc32(prelude));
  const withoutCrc = Buffer.concat([prelude, preludeCrc, headers, body]);
  const messageCrc = Buffer.alloc(4);
  messageCrc.writeUInt32BE(crc32(withoutCrc));
  return Buffer.concat([withoutCrc, messageCrc]);
}

interface Case {
  readonly name: string;
  readonly slug: string;
  readonly path: string;
  readonly body: unknown;
  readonly answer: Responder;
  readonly expected: { inputTokens: number; outputTokens: number; cachedTokens?: number; reasoningTokens?: number; model: string };
}

const CASES: readonly Case[] = [
  {
    // https://platform.openai.com/docs/api-reference/chat/object
    name: 'OpenAI chat completion (JSON)',
    slug: 'openai',
    path: 'v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] },
    answer: json({
      id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
      object: 'chat.completion',
      created: 1741570283,
      model: 'gpt-4o-mini-2024-07-18',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: 1117,
        completion_tokens: 46,
        total_tokens: 1163,
        prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
    }),
    expected: { inputTokens: 1117, outputTokens: 46, cachedTokens: 1024, reasoningTokens: 0, model: 'gpt-4o-mini-2024-07-18' },
  },
  {
    // https://platform.openai.com/docs/api-reference/chat-streaming/streaming: with stream_options.include_usage the
    // last chunk before [DONE] has empty choices and the usage.
    name: 'OpenAI chat completion (SSE, include_usage)',
    slug: 'openai',
    path: 'v1/chat/completions',
    body: { model: 'o4-mini', stream: true, stream_options: { include_usage: true }, messages: [] },
    answer: stream(
      sseEvents([
        { id: 'chatcmpl-1', object: 'chat.completion.chunk', model: 'o4-mini-2025-04-16', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }], usage: null },
        { id: 'chatcmpl-1', object: 'chat.completion.chunk', model: 'o4-mini-2025-04-16', choices: [{ index: 0, delta: { content: 'Hello' } }], usage: null },
        { id: 'chatcmpl-1', object: 'chat.completion.chunk', model: 'o4-mini-2025-04-16', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null },
        {
          id: 'chatcmpl-1',
          object: 'chat.completion.chunk',
          model: 'o4-mini-2025-04-16',
          choices: [],
          usage: { prompt_tokens: 19, completion_tokens: 210, total_tokens: 229, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 192 } },
        },
      ]),
    ),
    expected: { inputTokens: 19, outputTokens: 210, cachedTokens: 0, reasoningTokens: 192, model: 'o4-mini-2025-04-16' },
  },
  {
    // https://platform.openai.com/docs/api-reference/responses-streaming/response/completed
    name: 'OpenAI Responses API (SSE, response.completed)',
    slug: 'openai',
    path: 'v1/responses',
    body: { model: 'gpt-4.1', stream: true, input: 'Hi' },
    answer: stream(
      namedEvents([
        ['response.created', { type: 'response.created', sequence_number: 0, response: { id: 'resp_1', status: 'in_progress', model: 'gpt-4.1-2025-04-14', usage: null } }],
        ['response.output_text.delta', { type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Hello' }],
        [
          'response.completed',
          {
            type: 'response.completed',
            sequence_number: 2,
            response: {
              id: 'resp_1',
              status: 'completed',
              model: 'gpt-4.1-2025-04-14',
              usage: { input_tokens: 37, input_tokens_details: { cached_tokens: 0 }, output_tokens: 11, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 48 },
            },
          },
        ],
      ]),
    ),
    expected: { inputTokens: 37, outputTokens: 11, cachedTokens: 0, reasoningTokens: 0, model: 'gpt-4.1-2025-04-14' },
  },
  {
    // https://platform.openai.com/docs/api-reference/embeddings/object: no completion tokens.
    name: 'OpenAI embeddings (JSON)',
    slug: 'openai',
    path: 'v1/embeddings',
    body: { model: 'text-embedding-3-small', input: 'The food was delicious' },
    answer: json({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.0023, -0.0093] }], model: 'text-embedding-3-small', usage: { prompt_tokens: 8, total_tokens: 8 } }),
    expected: { inputTokens: 8, outputTokens: 0, model: 'text-embedding-3-small' },
  },
  {
    // https://console.groq.com/docs/api-reference#chat-create (OpenAI shape plus Groq's timing fields)
    name: 'Groq chat (JSON, OpenAI-compatible)',
    slug: 'groq',
    path: 'v1/chat/completions',
    body: { model: 'llama-3.3-70b-versatile', messages: [] },
    answer: json({
      id: 'chatcmpl-f51b2cd2',
      object: 'chat.completion',
      model: 'llama-3.3-70b-versatile',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Fast' }, finish_reason: 'stop' }],
      usage: { queue_time: 0.037, prompt_tokens: 18, prompt_time: 0.0007, completion_tokens: 556, completion_time: 0.46, total_tokens: 574, total_time: 0.46 },
      x_groq: { id: 'req_01jbd6g2qdfw2adyrt2az8hz4w' },
    }),
    expected: { inputTokens: 18, outputTokens: 556, model: 'llama-3.3-70b-versatile' },
  },
  {
    // https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post: streamed chunks, the
    // last with usage before [DONE].
    name: 'Mistral chat (SSE, OpenAI-compatible)',
    slug: 'mistral',
    path: 'v1/chat/completions',
    body: { model: 'mistral-small-latest', stream: true, messages: [] },
    answer: stream(
      sseEvents([
        { id: 'cmpl-1', object: 'chat.completion.chunk', model: 'mistral-small-latest', choices: [{ index: 0, delta: { role: 'assistant', content: 'Bon' } }] },
        { id: 'cmpl-1', object: 'chat.completion.chunk', model: 'mistral-small-latest', choices: [{ index: 0, delta: { content: 'jour' }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, total_tokens: 14, completion_tokens: 4 } },
      ]),
    ),
    expected: { inputTokens: 10, outputTokens: 4, model: 'mistral-small-latest' },
  },
  {
    // https://docs.anthropic.com/en/api/messages (response body)
    name: 'Anthropic message (JSON)',
    slug: 'anthropic',
    path: 'v1/messages',
    body: { model: 'claude-sonnet-4-20250514', max_tokens: 1024, messages: [] },
    answer: json({
      id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-20250514',
      content: [{ type: 'text', text: 'Hi! My name is Claude.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 2095, output_tokens: 503, cache_creation_input_tokens: 0, cache_read_input_tokens: 1800 },
    }),
    expected: { inputTokens: 2095, outputTokens: 503, cachedTokens: 1800, model: 'claude-sonnet-4-20250514' },
  },
  {
    // https://docs.anthropic.com/en/docs/build-with-claude/streaming#basic-streaming-request: input tokens in
    // message_start, the cumulative output count in message_delta.
    name: 'Anthropic message (SSE)',
    slug: 'anthropic',
    path: 'v1/messages',
    body: { model: 'claude-opus-4-1', stream: true, max_tokens: 256, messages: [] },
    answer: stream(
      namedEvents([
        ['message_start', { type: 'message_start', message: { id: 'msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY', type: 'message', role: 'assistant', content: [], model: 'claude-opus-4-1-20250805', stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, output_tokens: 1 } } }],
        ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
        ['ping', { type: 'ping' }],
        ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } }],
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 15 } }],
        ['message_stop', { type: 'message_stop' }],
      ]),
    ),
    expected: { inputTokens: 25, outputTokens: 15, model: 'claude-opus-4-1-20250805' },
  },
  {
    // https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse and #UsageMetadata
    name: 'Gemini generateContent (JSON)',
    slug: 'gemini',
    path: 'v1beta/models/gemini-2.5-flash:generateContent',
    body: { contents: [{ parts: [{ text: 'Hi' }] }] },
    answer: json({
      candidates: [{ content: { parts: [{ text: 'Hello' }], role: 'model' }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 9, totalTokenCount: 40, thoughtsTokenCount: 27, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 4 }] },
      modelVersion: 'gemini-2.5-flash',
      responseId: 'rM6HaMHOG-jGjMcPkMm40A0',
    }),
    expected: { inputTokens: 4, outputTokens: 9, reasoningTokens: 27, model: 'gemini-2.5-flash' },
  },
  {
    // https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent (alt=sse): every chunk carries
    // the running usageMetadata, the last one complete.
    name: 'Gemini streamGenerateContent (SSE)',
    slug: 'gemini',
    path: 'v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse',
    body: { contents: [] },
    answer: stream(
      sseEvents(
        [
          { candidates: [{ content: { parts: [{ text: 'Once' }], role: 'model' }, index: 0 }], usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 }, modelVersion: 'gemini-2.0-flash' },
          { candidates: [{ content: { parts: [{ text: ' upon' }], role: 'model' }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 8, candidatesTokenCount: 31, totalTokenCount: 39 }, modelVersion: 'gemini-2.0-flash' },
        ],
        { done: false },
      ).map((frame) => frame.replace(/\n\n$/, '\r\n\r\n')),
    ),
    expected: { inputTokens: 8, outputTokens: 31, model: 'gemini-2.0-flash' },
  },
  {
    // Without alt=sse the stream is one JSON array, element by element.
    name: 'Gemini streamGenerateContent (JSON array)',
    slug: 'gemini',
    path: 'v1beta/models/gemini-2.0-flash-lite:streamGenerateContent',
    body: { contents: [] },
    answer: stream(
      [
        '[{"candidates": [{"content": {"parts": [{"text": "A"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 5,"totalTokenCount": 5},"modelVersion": "gemini-2.0-flash-lite"}\r\n',
        ',\r\n{"candidates": [{"content": {"parts": [{"text": "B"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 5,"candidatesTokenCount": 12,"totalTokenCount": 17},"modelVersion": "gemini-2.0-flash-lite"}\r\n',
        ']',
      ],
      'application/json; charset=UTF-8',
    ),
    expected: { inputTokens: 5, outputTokens: 12, model: 'gemini-2.0-flash-lite' },
  },
  {
    // https://docs.cohere.com/reference/chat (v2 response: usage.billed_units and usage.tokens)
    name: 'Cohere chat v2 (JSON)',
    slug: 'cohere',
    path: 'v2/chat',
    body: { model: 'command-a-03-2025', messages: [] },
    answer: json({
      id: 'c14c80c3-18eb-4519-9460-6c92edd8cfb4',
      finish_reason: 'COMPLETE',
      message: { role: 'assistant', content: [{ type: 'text', text: 'LLMs are…' }] },
      usage: { billed_units: { input_tokens: 17, output_tokens: 12 }, tokens: { input_tokens: 215, output_tokens: 12 } },
    }),
    expected: { inputTokens: 17, outputTokens: 12, model: 'command-a-03-2025' },
  },
  {
    // https://docs.cohere.com/reference/chat-stream: the message-end event's delta.usage.
    name: 'Cohere chat v2 (SSE)',
    slug: 'cohere',
    path: 'v2/chat',
    body: { model: 'command-r-plus-08-2024', stream: true, messages: [] },
    answer: stream(
      namedEvents([
        ['message-start', { id: '29f14a5a-11de-4cae-9800-25e4747408ea', type: 'message-start', delta: { message: { role: 'assistant', content: [] } } }],
        ['content-delta', { type: 'content-delta', index: 0, delta: { message: { content: { text: 'Hi' } } } }],
        ['message-end', { type: 'message-end', delta: { finish_reason: 'COMPLETE', usage: { billed_units: { input_tokens: 3, output_tokens: 9 }, tokens: { input_tokens: 69, output_tokens: 9 } } } }],
      ]),
    ),
    expected: { inputTokens: 3, outputTokens: 9, model: 'command-r-plus-08-2024' },
  },
  {
    // https://docs.cohere.com/v1/reference/embed: meta.billed_units.
    name: 'Cohere embed v1 (JSON, meta)',
    slug: 'cohere',
    path: 'v1/embed',
    body: { model: 'embed-english-v3.0', texts: ['hello'], input_type: 'search_query' },
    answer: json({ id: 'da6e531f-83d0-4c6d-9d5f-1dc6e7e9d5c8', embeddings: [[0.1, 0.2]], texts: ['hello'], meta: { api_version: { version: '1' }, billed_units: { input_tokens: 2 } } }),
    expected: { inputTokens: 2, outputTokens: 0, model: 'embed-english-v3.0' },
  },
  {
    // https://docs.voyageai.com/reference/embeddings-api (response: usage.total_tokens only)
    name: 'Voyage embeddings (JSON, total_tokens)',
    slug: 'voyage',
    path: 'v1/embeddings',
    body: { model: 'voyage-3.5', input: ['Sample text 1', 'Sample text 2'] },
    answer: json({ object: 'list', data: [{ object: 'embedding', embedding: [0.1, 0.2], index: 0 }, { object: 'embedding', embedding: [0.3, 0.4], index: 1 }], model: 'voyage-3.5', usage: { total_tokens: 10 } }),
    expected: { inputTokens: 10, outputTokens: 0, model: 'voyage-3.5' },
  },
  {
    // https://jina.ai/embeddings (response: usage.total_tokens and prompt_tokens)
    name: 'Jina embeddings (JSON)',
    slug: 'jina',
    path: 'v1/embeddings',
    body: { model: 'jina-embeddings-v3', input: ['Hello'] },
    answer: json({ model: 'jina-embeddings-v3', object: 'list', usage: { total_tokens: 7, prompt_tokens: 7 }, data: [{ object: 'embedding', index: 0, embedding: [0.1] }] }),
    expected: { inputTokens: 7, outputTokens: 0, model: 'jina-embeddings-v3' },
  },
  {
    // https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html (response syntax)
    name: 'Bedrock Converse (JSON)',
    slug: 'bedrock',
    path: 'v1/model/anthropic.claude-3-haiku-20240307-v1:0/converse',
    body: { messages: [{ role: 'user', content: [{ text: 'Hi' }] }] },
    answer: json({
      output: { message: { role: 'assistant', content: [{ text: 'Hello' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 12, outputTokens: 6, totalTokens: 18 },
      metrics: { latencyMs: 345 },
    }),
    expected: { inputTokens: 12, outputTokens: 6, model: 'anthropic.claude-3-haiku-20240307-v1:0' },
  },
  {
    // https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html: the `metadata` event
    // (ConverseStreamMetadataEvent) carries usage; frames are AWS event-stream messages.
    name: 'Bedrock ConverseStream (AWS event-stream)',
    slug: 'bedrock',
    path: 'v1/model/amazon.nova-lite-v1:0/converse-stream',
    body: { messages: [{ role: 'user', content: [{ text: 'Hi' }] }] },
    answer: stream(
      [
        eventStreamMessage('messageStart', { p: 'abcd', role: 'assistant' }),
        eventStreamMessage('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello' }, p: 'abcdefgh' }),
        eventStreamMessage('messageStop', { p: 'abc', stopReason: 'end_turn' }),
        eventStreamMessage('metadata', { metrics: { latencyMs: 281 }, p: 'abcdefghijk', usage: { inputTokens: 14, outputTokens: 22, totalTokens: 36 } }),
      ],
      'application/vnd.amazon.eventstream',
    ),
    expected: { inputTokens: 14, outputTokens: 22, model: 'amazon.nova-lite-v1:0' },
  },
  {
    // https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html: `chunk`
    // events with base64 `bytes` of the vendor's events (here Anthropic's), the last with Bedrock's invocation metrics.
    name: 'Bedrock InvokeModelWithResponseStream (AWS event-stream, invocation metrics)',
    slug: 'bedrock',
    path: 'v1/model/anthropic.claude-3-5-haiku-20241022-v1:0/invoke-with-response-stream',
    body: { anthropic_version: 'bedrock-2023-05-31', max_tokens: 100, messages: [] },
    answer: stream(
      [
        { type: 'message_start', message: { id: 'msg_bdrk_1', type: 'message', role: 'assistant', model: 'claude-3-5-haiku-20241022', content: [], usage: { input_tokens: 21, output_tokens: 2 } } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } },
        { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } },
        { type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 21, outputTokenCount: 9, invocationLatency: 412, firstByteLatency: 290 } },
      ].map((event) => eventStreamMessage('chunk', { bytes: Buffer.from(JSON.stringify(event)).toString('base64') })),
      'application/vnd.amazon.eventstream',
    ),
    expected: { inputTokens: 21, outputTokens: 9, model: 'claude-3-5-haiku-20241022' },
  },
];

describe('token usage read from provider answers', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let device: Provisioned;

  before(async () => {
    upstream = await FakeUpstream.start();
    gateway = await TestGateway.start({ upstreams: Object.fromEntries(Object.keys(SECRETS).map((slug) => [slug, upstream.url])) });
    device = await gateway.provision(SECRETS);
  });
  beforeEach(() => upstream.reset());
  after(async () => {
    await gateway.close();
    await upstream.close();
  });

  /** Sends one request and returns the client's bytes and the usage event recorded for it. */
  async function call(slug: string, path: string, body: unknown): Promise<{ status: number; bytes: Buffer; event: UsageEvent }> {
    const startedAt = Date.now();
    const response = await fetch(`${gateway.url}/v1/proxy/${slug}/${path}`, {
      method: 'POST',
      headers: { ...device.headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const event = await gateway.recordedEvent(device.appId, startedAt - 1000, (candidate) => candidate.createdAt >= startedAt - 5 && candidate.provider === slug);
    return { status: response.status, bytes, event };
  }

  for (const testCase of CASES) {
    it(`${testCase.name}: records the tokens the provider reported`, async () => {
      let sent = Buffer.alloc(0);
      upstream.respond(async (request, response, raw) => {
        const write = response.write.bind(response);
        const end = response.end.bind(response);
        response.write = ((chunk: string | Buffer, ...rest: never[]) => {
          sent = Buffer.concat([sent, Buffer.from(chunk)]);
          return write(chunk, ...rest);
        }) as typeof response.write;
        response.end = ((chunk?: string | Buffer, ...rest: never[]) => {
          if (chunk !== undefined && typeof chunk !== 'function') sent = Buffer.concat([sent, Buffer.from(chunk)]);
          return end(chunk as never, ...rest);
        }) as typeof response.end;
        await testCase.answer(request, response, raw);
      });
      const { status, bytes, event } = await call(testCase.slug, testCase.path, testCase.body);
      expect(status).to.equal(200);
      expect(bytes.equals(sent), 'the client gets the provider bytes unchanged').to.equal(true);
      expect(event.inputTokens, 'input tokens').to.equal(testCase.expected.inputTokens);
      expect(event.outputTokens, 'output tokens').to.equal(testCase.expected.outputTokens);
      expect(event.cachedTokens ?? undefined, 'cached tokens').to.equal(testCase.expected.cachedTokens);
      expect(event.reasoningTokens ?? undefined, 'reasoning tokens').to.equal(testCase.expected.reasoningTokens);
      expect(event.model).to.equal(testCase.expected.model);
    });
  }

  it('a stream reaches the client before the provider sends its usage: the client has the first chunk first', async () => {
    let clientHasFirstChunk: () => void = () => undefined;
    const firstChunkSeen = new Promise<void>((resolve) => (clientHasFirstChunk = resolve));
    const order: string[] = [];
    const events = sseEvents([
      { id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'Hi' } }], usage: null },
      { id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } },
    ]);
    upstream.respond(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(events[0]);
      // The usage chunk is sent only once the client holds the first one: a tap that waited for usage would deadlock.
      await firstChunkSeen;
      order.push('provider sends usage');
      response.write(events[1]);
      response.end(events[2]);
    });
    const startedAt = Date.now();
    const body = await new Promise<string>((resolve, reject) => {
      const request = http.request(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'content-type': 'application/json' }, agent: false }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => {
          if (text === '') {
            order.push('client has first chunk');
            clientHasFirstChunk();
          }
          text += chunk.toString();
        });
        response.on('end', () => resolve(text));
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end('{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true}}');
    });
    expect(order).to.deep.equal(['client has first chunk', 'provider sends usage']);
    expect(body).to.equal(events.join(''));
    const recorded = await gateway.recordedEvent(device.appId, startedAt - 1000, (event) => event.createdAt >= startedAt - 5);
    expect(recorded.inputTokens).to.equal(5);
    expect(recorded.outputTokens).to.equal(1);
  });

  it('records "usage unknown" (no error) for an answer it cannot read: compressed, or not JSON', async () => {
    const compressed = gzipSync(JSON.stringify({ model: 'gpt-4o', usage: { prompt_tokens: 3, completion_tokens: 4 } }));
    upstream.respond((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      response.end(compressed);
    });
    const first = await call('openai', 'v1/chat/completions', { model: 'gpt-4o' });
    expect(first.status).to.equal(200);
    expect(first.event.inputTokens ?? null).to.equal(null);
    expect(first.event.outputTokens ?? null).to.equal(null);

    upstream.respond(stream(['data: {"usage": {"prompt_tokens": 3,', ' broken\n\n', 'data: [DONE]\n\n']));
    const second = await call('openai', 'v1/chat/completions', { model: 'gpt-4o', stream: true });
    expect(second.status).to.equal(200);
    expect(second.bytes.toString()).to.equal('data: {"usage": {"prompt_tokens": 3, broken\n\ndata: [DONE]\n\n');
    expect(second.event.inputTokens ?? null).to.equal(null);
    // The model the client asked for is still recorded.
    expect(second.event.model).to.equal('gpt-4o');
  });

  it('the usage summary adds tokens per device, provider and model', async () => {
    const summary = await gateway.gateway.management.usageSummary(device.appId, 0, Date.now() + 1000);
    const anthropic = summary.tokens.byProvider.find((row) => row.provider === 'anthropic');
    expect(anthropic).to.deep.include({ inputTokens: 2095 + 25, outputTokens: 503 + 15 });
    const haiku = summary.tokens.byModel.find((row) => row.model === 'anthropic.claude-3-haiku-20240307-v1:0');
    expect(haiku).to.deep.include({ inputTokens: 12, outputTokens: 6, requests: 1 });
    const total = CASES.reduce((sum, testCase) => sum + testCase.expected.inputTokens, 0) + 5;
    expect(summary.tokens.inputTokens).to.equal(total);
    expect(summary.tokens.byDevice).to.have.length(1);
    expect(summary.tokens.byDevice[0]).to.deep.include({ deviceId: device.deviceId, inputTokens: total });
  });
});
