/**
 * Conformance fixture for OpenAI-compatible providers: the chat-completion, chunk and error shapes of the OpenAI API
 * reference (https://platform.openai.com/docs/api-reference/chat), which these providers document as compatible.
 */
import type { ProviderFixture } from './fixture';

export interface OpenAiFixtureOptions {
  readonly provenance: string;
  readonly model: string;
  readonly secret: string;
  readonly version?: string;
  /** Extra SSE lines the provider is known to send (comments, pings), inserted after the first chunk. */
  readonly comments?: readonly string[];
  /** Frame separator: `\n\n` by default, `\r\n\r\n` for CRLF-framed providers. */
  readonly separator?: string;
  readonly baseUrl?: string;
}

export function openAiFixture(options: OpenAiFixtureOptions): ProviderFixture {
  const separator = options.separator ?? '\n\n';
  const chunk = (content: string, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-fixture', object: 'chat.completion.chunk', created: 1_732_000_000, model: options.model, choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}${separator}`;
  const body = JSON.stringify({ model: options.model, messages: [{ role: 'user', content: 'Hello' }] });
  const call = { method: 'POST' as const, version: options.version ?? 'v1', path: 'chat/completions', contentType: 'application/json' };
  return {
    provenance: options.provenance,
    secret: options.secret,
    ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
    call: { ...call, body },
    response: {
      status: 200,
      contentType: 'application/json',
      chunks: [
        JSON.stringify({
          id: 'chatcmpl-fixture',
          object: 'chat.completion',
          created: 1_732_000_000,
          model: options.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 8, completion_tokens: 2, total_tokens: 10 },
        }),
      ],
    },
    stream: {
      call: { ...call, body: JSON.stringify({ model: options.model, stream: true, messages: [{ role: 'user', content: 'Hello' }] }) },
      response: {
        status: 200,
        contentType: 'text/event-stream',
        chunks: [chunk('Hel', null), ...(options.comments ?? []), chunk('lo!', 'stop'), `data: [DONE]${separator}`],
      },
    },
    error: {
      status: 401,
      contentType: 'application/json',
      chunks: [JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } })],
    },
  };
}
