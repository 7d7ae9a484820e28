/**
 * Shared building blocks for provider manifests. Most providers speak OpenAI's wire format; for them a manifest is a
 * call to {@link openAiCompatible} with the provider's own facts.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider, type Capability, type ProviderManifest, type RoutePolicy, type StreamFormat } from '../../core/contract';

/** `Authorization: Bearer <key>`, the most common auth style. */
export const BEARER = Object.freeze({ kind: 'header', header: 'Authorization', scheme: 'Bearer' } as const);

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
