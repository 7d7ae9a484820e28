/**
 * Shared building blocks for provider manifests. Most providers speak OpenAI's wire format; for them a manifest is a
 * call to {@link openAiCompatible} with the provider's own facts.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider, type AccountRoute, type Capability, type KeyCheck, type ProviderManifest, type ProviderPrices, type RequestBodyFields, type RoutePolicy, type StreamFormat } from '../../core/contract';
import { OPENAI_USAGE } from './usage';
import { OPENAI_REQUEST_FIELDS } from './request-fields';
import { openAiSdkHookExample } from './sdk-hooks';

export * from './usage';
export * from './request-fields';
export * from './realtime-usage';

/** `Authorization: Bearer <key>`, the most common auth style. */
export const BEARER = Object.freeze({ kind: 'header', header: 'Authorization', scheme: 'Bearer' } as const);

/**
 * Account routes of the OpenAI API shape that the compatible allow-list reaches: stored chat completions
 * (https://platform.openai.com/docs/api-reference/chat/list: `GET /chat/completions` lists completions created with
 * `store: true`, by any user of the key), stored responses (https://platform.openai.com/docs/api-reference/responses/get,
 * /delete, /input-items, /cancel) and model deletion (https://platform.openai.com/docs/api-reference/models/delete).
 * Providers that mirror OpenAI (xAI, Groq, OpenRouter…) expose the same shapes where they store data; where they do
 * not, closing a route they lack costs nothing.
 */
export const OPENAI_STORED_DATA_ROUTES: readonly AccountRoute[] = Object.freeze([
  { methods: ['GET'], path: 'chat/completions', why: 'lists the stored chat completions (store: true) of every user of the key' },
  { methods: ['GET', 'POST', 'DELETE'], path: 'chat/completions/{completion_id}/**', why: 'reads, changes or deletes any stored chat completion and its messages by id' },
  { methods: ['GET', 'DELETE'], path: 'responses/{response_id}/**', why: 'reads or deletes any stored response and its input items by id (also background-mode polling)' },
  { methods: ['POST'], path: 'responses/{response_id}/cancel', why: 'cancels any background response by id' },
  { methods: ['DELETE'], path: 'models/**', why: "deletes the operator's fine-tuned models" },
] satisfies AccountRoute[]);

/**
 * Every account route of OpenAI's own API (https://platform.openai.com/docs/api-reference): files (uploading one with
 * `POST /files` for a request stays inference), uploads, vector stores, conversations, fine-tuning, batches, the
 * Assistants API's assistants and threads, code-interpreter containers.
 */
export const OPENAI_ACCOUNT_ROUTES: readonly AccountRoute[] = Object.freeze([
  ...OPENAI_STORED_DATA_ROUTES,
  { methods: ['GET'], path: 'files', why: 'lists every file uploaded with the operator key, by any user' },
  { methods: ['GET', 'DELETE'], path: 'files/{file_id}/**', why: 'reads the metadata and content of, or deletes, any file of the account' },
  { methods: ['GET', 'POST', 'DELETE'], path: 'uploads/**', why: "creates, completes or cancels multi-part uploads into the account's file storage" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'vector_stores/**', why: "lists, searches, changes or deletes the account's vector stores and their files" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'conversations/**', why: 'creates, reads, changes or deletes any stored conversation and its items by id' },
  { methods: ['GET', 'POST', 'DELETE'], path: 'fine_tuning/**', why: 'lists, starts or cancels fine-tuning jobs billed to the account, and reads their results' },
  { methods: ['GET', 'POST'], path: 'batches/**', why: "lists, creates or cancels batches over the account's files" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'assistants/**', why: "lists, changes or deletes the account's assistants" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'threads/**', why: 'reads, changes or deletes any stored thread, its messages and runs by id' },
  { methods: ['GET', 'POST', 'DELETE'], path: 'containers/**', why: "lists, reads or deletes the account's code-interpreter containers and their files" },
] satisfies AccountRoute[]);

/** Product routes of the OpenAI API shape; account, billing and key-management routes stay out. */
export const OPENAI_COMPATIBLE_ROUTES: RoutePolicy = {
  methods: ['GET', 'POST'],
  allow: [
    'chat/completions',
    'completions',
    'embeddings',
    'images/',
    'audio/',
    'moderations',
    'models',
    'responses',
    'rerank',
  ],
  deny: ['organization/', 'dashboard/', 'billing/', 'api_keys', 'projects/', 'admin/'],
  account: OPENAI_STORED_DATA_ROUTES,
};

export interface OpenAiCompatibleOptions {
  slug: string;
  name: string;
  baseUrl: string;
  /** Default `{ v1: '/v1' }`. */
  versions?: Record<string, string>;
  capabilities?: Capability[];
  streaming?: StreamFormat[];
  routes?: RoutePolicy;
  defaultHeaders?: Record<string, string>;
  notes?: string;
  /** Model used in generated examples. */
  exampleModel?: string;
  /** The key check (see `KeyCheck`), with the page that documents it cited beside it. */
  keyCheck?: KeyCheck;
  /** Where request bodies name the model and output limit; default: OpenAI's shapes (request-fields.ts). */
  requestFields?: readonly RequestBodyFields[];
  /** Published prices (see `ProviderManifest.prices`). */
  prices?: ProviderPrices;
}

/** A manifest for an OpenAI-compatible provider: Bearer auth, OpenAI SSE streaming, the OpenAI route allow-list. */
export function openAiCompatible(options: OpenAiCompatibleOptions): ProviderManifest {
  return defineProvider({
    contractVersion: PLUGIN_CONTRACT_VERSION,
    slug: options.slug,
    name: options.name,
    baseUrl: options.baseUrl,
    versions: options.versions ?? { v1: '/v1' },
    auth: BEARER,
    capabilities: options.capabilities ?? ['chat'],
    streaming: options.streaming ?? ['sse'],
    routes: options.routes ?? OPENAI_COMPATIBLE_ROUTES,
    ...(options.defaultHeaders ? { defaultHeaders: options.defaultHeaders } : {}),
    ...(options.notes ? { notes: options.notes } : {}),
    examples: openAiExamples(options.exampleModel ?? 'MODEL_NAME', options.capabilities ?? ['chat']),
    usage: OPENAI_USAGE,
    requestFields: options.requestFields ?? OPENAI_REQUEST_FIELDS,
    ...(options.prices ? { prices: options.prices } : {}),
    // Every OpenAI-compatible API is reached by the OpenAI client libraries with its base URL.
    sdkHookExample: openAiSdkHookExample,
    ...(options.keyCheck ? { keyCheck: options.keyCheck } : {}),
  });
}

/** Generated-code examples for the OpenAI wire format. */
export function openAiExamples(model: string, capabilities: readonly Capability[]): ProviderManifest['examples'] {
  const messages = [{ role: 'user', content: 'Hello!' }];
  return {
    chat: { method: 'POST', version: 'v1', path: 'chat/completions', body: { model, messages } },
    streaming: { method: 'POST', version: 'v1', path: 'chat/completions', body: { model, messages, stream: true }, streams: true },
    ...(capabilities.includes('image') ? { image: { method: 'POST', version: 'v1', path: 'images/generations', body: { model, prompt: 'A lighthouse at dawn', size: '1024x1024' } } } : {}),
    ...(capabilities.includes('tts') ? { tts: { method: 'POST', version: 'v1', path: 'audio/speech', body: { model, input: 'Hello!', voice: 'alloy' }, streams: true } } : {}),
  };
}
