/**
 * OpenAI (https://platform.openai.com/docs/api-reference). `Authorization: Bearer <key>`; chat streams as SSE ending in
 * `data: [DONE]`; `/audio/speech` answers with audio bytes. Organization admin routes (`/v1/organization/...`) are refused.
 */
import { openAiCompatible, OPENAI_ACCOUNT_ROUTES, OPENAI_COMPATIBLE_ROUTES } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'openai',
  name: 'OpenAI',
  baseUrl: 'https://api.openai.com',
  capabilities: ['chat', 'embeddings', 'image', 'tts', 'stt', 'translation'],
  streaming: ['sse', 'binary'],
  routes: {
    ...OPENAI_COMPATIBLE_ROUTES,
    // Files and uploads back the Responses and Assistants features; vector stores back file search.
    allow: [...(OPENAI_COMPATIBLE_ROUTES.allow ?? []), 'files', 'uploads', 'vector_stores', 'conversations', 'realtime/sessions'],
    methods: ['GET', 'POST', 'DELETE'],
    // Account routes (providers.md, "Route classes"), from https://platform.openai.com/docs/api-reference: listing,
    // reading and deleting what the key stored for every user. `POST files` (a file input for one request) and
    // `GET models` (the catalog) stay inference.
    account: OPENAI_ACCOUNT_ROUTES,
  },
  // Where bodies name the model and the output limit (model policy, token budgets):
  // https://platform.openai.com/docs/api-reference/chat/create (`max_completion_tokens`, formerly `max_tokens`) and
  // https://platform.openai.com/docs/api-reference/responses/create (`max_output_tokens`).
  requestFields: [
    { methods: ['POST'], path: 'chat/completions', model: 'model', outputLimit: ['max_completion_tokens', 'max_tokens'], stream: 'stream', streamUsageRequest: { stream_options: { include_usage: true } } },
    { methods: ['POST'], path: 'responses', model: 'model', outputLimit: ['max_output_tokens'], stream: 'stream' },
  ],
  exampleModel: 'gpt-4o-mini',
  // "List models" needs the key and changes nothing: https://platform.openai.com/docs/api-reference/models/list
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
  notes: 'Chat: OpenAI SSE ending in [DONE]; Responses API: SSE with event names; /audio/speech: audio bytes.',
});
