/**
 * Where the OpenAI request shapes name the model, the output-token limit and streaming (core/contract/manifest.ts,
 * `RequestBodyFields`), for OpenAI and the providers that mirror it. Token budgets reserve the declared output limit;
 * a stream is asked for its usage with `stream_options.include_usage` when a budget applies.
 */
import type { RequestBodyFields } from '../../core/contract';

/**
 * OpenAI documents no default output limit for Chat Completions or Responses (without one the model may write up to
 * its own maximum): 4,096 is what the gateway reserves for a request that sets none. A request that sets one is
 * reserved exactly that.
 */
export const OPENAI_DEFAULT_OUTPUT_TOKENS = 4096;

/** `stream_options.include_usage`: the stream's last chunk reports the usage (https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options). */
export const OPENAI_STREAM_USAGE_REQUEST = Object.freeze({ stream_options: Object.freeze({ include_usage: true }) });

/**
 * The OpenAI shapes, each from its reference page:
 * - Chat Completions (https://platform.openai.com/docs/api-reference/chat/create): `model`, `max_completion_tokens`
 *   (and the older `max_tokens`), `stream`, `stream_options.include_usage`.
 * - Completions (https://platform.openai.com/docs/api-reference/completions/create): `max_tokens`, whose documented
 *   default is 16; `stream`, `stream_options`.
 * - Responses (https://platform.openai.com/docs/api-reference/responses/create): `max_output_tokens`, `stream` (the
 *   `response.completed` event always carries the usage, so nothing is merged).
 * - Embeddings (https://platform.openai.com/docs/api-reference/embeddings/create): `model`; no output.
 */
export function openAiRequestFields(options: { streamUsageRequest?: boolean; prefix?: string; bodyModel?: boolean } = {}): RequestBodyFields[] {
  const prefix = options.prefix ?? '';
  // Where the path names the model (an Azure deployment), the body's `model` is not the one used.
  const model = options.bodyModel === false ? {} : { model: 'model' };
  const usage = options.streamUsageRequest === false ? {} : { streamUsageRequest: OPENAI_STREAM_USAGE_REQUEST };
  return [
    { methods: ['POST'], path: `${prefix}chat/completions`, ...model, outputLimit: ['max_completion_tokens', 'max_tokens'], defaultOutputTokens: OPENAI_DEFAULT_OUTPUT_TOKENS, stream: 'stream', ...usage },
    { methods: ['POST'], path: `${prefix}completions`, ...model, outputLimit: ['max_tokens'], defaultOutputTokens: 16, stream: 'stream', ...usage },
    { methods: ['POST'], path: `${prefix}responses`, ...model, outputLimit: ['max_output_tokens'], defaultOutputTokens: OPENAI_DEFAULT_OUTPUT_TOKENS, stream: 'stream' },
    { methods: ['POST'], path: `${prefix}embeddings`, ...model },
  ];
}

/** The OpenAI shapes with the include-usage request: OpenAI and the compatible providers that accept `stream_options`. */
export const OPENAI_REQUEST_FIELDS: readonly RequestBodyFields[] = Object.freeze(openAiRequestFields());
