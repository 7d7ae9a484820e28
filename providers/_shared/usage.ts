/**
 * Usage readers for the common answer formats (core/contract/manifest.ts, `UsageExtractor`). Each reads one parsed
 * document (a JSON body, an SSE event's data, an NDJSON line, an event-stream message) and returns the tokens it holds;
 * core merges the documents of one answer, later values winning. A reader never throws on odd input: it returns
 * undefined for what it does not recognise.
 */
import type { TokenUsage, UsageExtractor } from '../../core/contract';

type Json = Record<string, unknown>;
const object = (value: unknown): Json | undefined => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined);
const count = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined);
const text = (value: unknown): string | undefined => (typeof value === 'string' && value.length > 0 ? value : undefined);

/**
 * The fields that were found, in a new object (deleting the undefined ones instead would turn the reading into a
 * slow dictionary-mode object on every answer); undefined when nothing was found.
 */
function found(usage: TokenUsage): TokenUsage | undefined {
  let result: Record<string, unknown> | undefined;
  for (const key in usage) {
    const value = usage[key as keyof TokenUsage];
    if (value !== undefined) (result ??= {})[key] = value;
  }
  return result as TokenUsage | undefined;
}

/**
 * OpenAI's formats: Chat Completions `usage` {prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens,
 * completion_tokens_details.reasoning_tokens} in the JSON body and, streamed, in the last chunk when the client set
 * `stream_options.include_usage` (https://platform.openai.com/docs/api-reference/chat/object,
 * https://platform.openai.com/docs/api-reference/chat-streaming/streaming); embeddings `usage.prompt_tokens`
 * (https://platform.openai.com/docs/api-reference/embeddings/object); the Responses API `usage` {input_tokens,
 * output_tokens, input_tokens_details.cached_tokens, output_tokens_details.reasoning_tokens}, streamed inside the
 * `response.completed` event (https://platform.openai.com/docs/api-reference/responses/object,
 * https://platform.openai.com/docs/api-reference/responses-streaming/response/completed). The compatible providers
 * (Groq, Mistral, DeepSeek, Together, Fireworks, xAI…) answer in the same shape.
 */
export function readOpenAiUsage(document: unknown): TokenUsage | undefined {
  let root = object(document);
  if (!root) return undefined;
  // Responses API stream events carry the response object.
  const nested = object(root.response);
  if (nested && root.usage === undefined) root = nested;
  const usage = object(root.usage);
  const model = text(root.model);
  if (!usage) return model ? { model } : undefined;
  const inputDetails = object(usage.prompt_tokens_details) ?? object(usage.input_tokens_details);
  const outputDetails = object(usage.completion_tokens_details) ?? object(usage.output_tokens_details);
  return found({
    inputTokens: count(usage.prompt_tokens) ?? count(usage.input_tokens),
    outputTokens: count(usage.completion_tokens) ?? count(usage.output_tokens) ?? (count(usage.prompt_tokens) !== undefined ? 0 : undefined),
    cachedTokens: count(inputDetails?.cached_tokens),
    reasoningTokens: count(outputDetails?.reasoning_tokens),
    model,
  });
}

/** For OpenAI and every OpenAI-compatible provider. */
export const OPENAI_USAGE: UsageExtractor = Object.freeze({ read: readOpenAiUsage, markers: ['"usage"'], members: ['usage', 'model', 'response'] });

/**
 * Embeddings and rerank APIs that report only `usage.total_tokens` (all input): Voyage AI
 * (https://docs.voyageai.com/reference/embeddings-api, https://docs.voyageai.com/reference/reranker-api) and Jina AI
 * (https://jina.ai/embeddings, `usage: { total_tokens, prompt_tokens }`).
 */
export function readEmbeddingsUsage(document: unknown): TokenUsage | undefined {
  const reading = readOpenAiUsage(document);
  if (reading?.inputTokens !== undefined) return reading;
  const total = count(object(object(document)?.usage)?.total_tokens);
  return total === undefined ? reading : { ...reading, inputTokens: total, outputTokens: 0 };
}

export const EMBEDDINGS_USAGE: UsageExtractor = Object.freeze({ read: readEmbeddingsUsage, markers: ['"usage"'], members: ['usage', 'model', 'response'] });

/**
 * Anthropic Messages: the JSON body's `usage` {input_tokens, output_tokens, cache_read_input_tokens}
 * (https://docs.anthropic.com/en/api/messages); streamed, `message_start` carries `message.usage` and `message.model`,
 * and each `message_delta` carries the cumulative `usage.output_tokens` (https://docs.anthropic.com/en/docs/build-with-claude/streaming).
 */
export function readAnthropicUsage(document: unknown): TokenUsage | undefined {
  const root = object(document);
  if (!root) return undefined;
  const message = object(root.message) ?? root;
  const usage = object(message.usage) ?? object(root.usage);
  const model = text(message.model);
  if (!usage) return model ? { model } : undefined;
  return found({
    inputTokens: count(usage.input_tokens),
    outputTokens: count(usage.output_tokens),
    cachedTokens: count(usage.cache_read_input_tokens),
    model,
  });
}

export const ANTHROPIC_USAGE: UsageExtractor = Object.freeze({ read: readAnthropicUsage, markers: ['"usage"'], members: ['usage', 'model', 'message'] });

/** `models/{model}:generateContent`, `…/models/{model}:streamGenerateContent`: the model named in the path. */
export function modelFromGooglePath(path: string): string | undefined {
  const match = /(?:^|\/)models\/([^/:?]+)/.exec(path);
  return match ? safeDecode(match[1]!) : undefined;
}

/**
 * Gemini (and Vertex AI's Gemini): `usageMetadata` {promptTokenCount, candidatesTokenCount, cachedContentTokenCount,
 * thoughtsTokenCount} and `modelVersion` in the JSON body and in every streamed chunk, cumulative, the last one complete
 * (https://ai.google.dev/api/generate-content#UsageMetadata). `candidatesTokenCount` excludes thinking tokens; the output
 * count recorded is what the API reports there.
 */
export function readGeminiUsage(document: unknown): TokenUsage | undefined {
  const root = object(document);
  if (!root) return undefined;
  const usage = object(root.usageMetadata);
  const model = text(root.modelVersion);
  if (!usage) return model ? { model } : undefined;
  return found({
    inputTokens: count(usage.promptTokenCount),
    outputTokens: count(usage.candidatesTokenCount) ?? (count(usage.promptTokenCount) !== undefined ? 0 : undefined),
    cachedTokens: count(usage.cachedContentTokenCount),
    reasoningTokens: count(usage.thoughtsTokenCount),
    model,
  });
}

export const GEMINI_USAGE: UsageExtractor = Object.freeze({ read: readGeminiUsage, modelFromPath: modelFromGooglePath, markers: ['"usageMetadata"'], members: ['usageMetadata', 'modelVersion'] });

/**
 * Cohere: v2 chat `usage` {billed_units, tokens} in the JSON body and in the `message-end` stream event's `delta.usage`
 * (https://docs.cohere.com/reference/chat, https://docs.cohere.com/reference/chat-stream); v1 and embed `meta`
 * {billed_units, tokens}, streamed in `stream-end`'s `response.meta` (https://docs.cohere.com/v1/reference/chat). The
 * billed units are recorded (what the account pays for), the raw token counts when no billed units are given.
 */
export function readCohereUsage(document: unknown): TokenUsage | undefined {
  const root = object(document);
  if (!root) return undefined;
  const holder = object(object(root.delta)?.usage) ?? object(root.usage) ?? object(root.meta) ?? object(object(root.response)?.meta);
  const model = text(root.model);
  if (!holder) return model ? { model } : undefined;
  const billed = object(holder.billed_units);
  const tokens = object(holder.tokens);
  return found({
    inputTokens: count(billed?.input_tokens) ?? count(tokens?.input_tokens),
    outputTokens: count(billed?.output_tokens) ?? count(tokens?.output_tokens) ?? (count(billed?.input_tokens) !== undefined ? 0 : undefined),
    model,
  });
}

export const COHERE_USAGE: UsageExtractor = Object.freeze({ read: readCohereUsage, markers: ['"usage"', '"meta"', '"billed_units"'], members: ['delta', 'usage', 'meta', 'response', 'model'] });

/** `model/{modelId}/converse[-stream]`, `model/{modelId}/invoke…`: the Bedrock model id in the path. */
export function modelFromBedrockPath(path: string): string | undefined {
  const match = /(?:^|\/)model\/([^/]+)\//.exec(path);
  return match ? safeDecode(match[1]!) : undefined;
}

/**
 * Bedrock: Converse's JSON `usage` {inputTokens, outputTokens, cacheReadInputTokens}
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html); ConverseStream's `metadata`
 * event with the same `usage` (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html,
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamMetadataEvent.html). InvokeModel
 * answers in the model vendor's own body; an Anthropic-shaped `usage` there is read too, and the invocation metrics
 * Bedrock adds to the last chunk of a streamed InvokeModel.
 */
export function readBedrockUsage(document: unknown): TokenUsage | undefined {
  const root = object(document);
  if (!root) return undefined;
  // InvokeModelWithResponseStream: `chunk` events carry the model vendor's JSON in base64 `bytes`; the last one adds
  // `amazon-bedrock-invocationMetrics` {inputTokenCount, outputTokenCount}
  // (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html).
  const bytes = object(root.chunk)?.bytes;
  if (typeof bytes === 'string') {
    let inner: unknown;
    try {
      inner = JSON.parse(Buffer.from(bytes, 'base64').toString('utf8'));
    } catch {
      return undefined;
    }
    const metrics = object(object(inner)?.['amazon-bedrock-invocationMetrics']);
    if (metrics) return found({ inputTokens: count(metrics.inputTokenCount), outputTokens: count(metrics.outputTokenCount) });
    return readAnthropicUsage(inner);
  }
  const usage = object(root.usage) ?? object(object(root.metadata)?.usage);
  if (!usage) return undefined;
  if (usage.inputTokens !== undefined || usage.outputTokens !== undefined) {
    return found({ inputTokens: count(usage.inputTokens), outputTokens: count(usage.outputTokens), cachedTokens: count(usage.cacheReadInputTokens) });
  }
  return readAnthropicUsage(root);
}

export const BEDROCK_USAGE: UsageExtractor = Object.freeze({ read: readBedrockUsage, modelFromPath: modelFromBedrockPath, members: ['usage', 'metadata', 'chunk', 'message', 'model'] });

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
