/**
 * Google Gemini API (https://ai.google.dev/api). The key goes in the `x-goog-api-key` header (Google also accepts a
 * `key=` query parameter; the header keeps it out of URLs and logs). `models/{m}:streamGenerateContent?alt=sse` streams
 * SSE without `[DONE]`; without `alt=sse` the same method streams one JSON array, element by element.
 *
 * Media over 20 MB goes through the Files API's resumable upload, `POST /upload/v1beta/files`
 * (https://ai.google.dev/api/files#method:-media.upload). That path starts with `upload/`, not a version: the `upload`
 * version maps to `/upload`, so `@google/genai` with the plain base URL `<gateway>/v1/proxy/gemini` (it writes
 * `/{apiVersion}/…` for calls and `/upload/{apiVersion}/files` for uploads) reaches both; the upload URL Google answers
 * with is rewritten to the same version. `v1-root` maps to the host root and allows the upload routes too (the earlier
 * documented per-call form, `httpOptions: { baseUrl: '<gateway>/v1/proxy/gemini/v1-root' }`, kept).
 */
import { GEMINI_LIVE_USAGE, GEMINI_USAGE } from '../_shared';
import { GEMINI_PRICES } from '../_shared/prices';
import { PLUGIN_CONTRACT_VERSION, defineProvider, type AccountRoute } from '../../core/contract';

/**
 * Account routes, from https://ai.google.dev/api/files, /api/caching and /api/batch-mode. Uploading a file for a request
 * (`POST files`, `upload/…`) and reading one file's state by name (`GET files/{name}`: a video is usable once it is
 * ACTIVE, https://ai.google.dev/gemini-api/docs/video-understanding) stay inference: the name is the uploader's own.
 * Listing and deleting files, context caches and batch jobs are account routes. `tunedModels` stays in `deny`.
 */
const ACCOUNT: AccountRoute[] = [
  { methods: ['GET'], path: 'files', why: 'lists every file uploaded with the operator key, by any user, for 48 hours' },
  { methods: ['DELETE'], path: 'files/{file}', why: 'deletes any uploaded file by name' },
  { methods: ['GET'], path: 'files/{file}:download', why: 'downloads any generated file of the project' },
  { methods: ['POST'], path: 'files:register', why: "registers Cloud Storage files into the project's file list" },
  { methods: ['GET', 'POST', 'PATCH', 'DELETE'], path: 'cachedContents/**', why: "lists, reads, changes or deletes the project's context caches (their contents are other users' prompts)" },
  { methods: ['POST'], path: 'models/{model}:batchGenerateContent', why: 'starts a batch job billed to the project, listed with every other batch' },
  { methods: ['POST'], path: 'models/{model}:asyncBatchEmbedContent', why: 'starts a batch embedding job billed to the project, listed with every other batch' },
  { methods: ['GET', 'POST', 'DELETE'], path: 'batches/**', why: "lists, reads, cancels or deletes the project's batch jobs and their results" },
];

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'gemini',
  // Published prices, read from the provider's price page (providers/_shared/prices.ts).
  prices: GEMINI_PRICES,
  name: 'Google Gemini',
  baseUrl: 'https://generativelanguage.googleapis.com',
  versions: { v1beta: '/v1beta', v1: '/v1', v1alpha: '/v1alpha', upload: '/upload', 'v1-root': '' },
  // Older @google/genai releases given a base URL write the upload below the API version (`v1beta/upload/v1beta/files`,
  // which Google answers 404): the upload routes live at the host root whatever version names them.
  rootPaths: ['upload/'],
  auth: { kind: 'header', header: 'x-goog-api-key' },
  capabilities: ['chat', 'embeddings', 'image'],
  streaming: ['sse', 'json-array'],
  // The resumable upload's start answers with the URL that takes the bytes (https://ai.google.dev/api/files#method:-media.upload):
  // the gateway hands the client its own route for it instead.
  responseUrlHeaders: ['x-goog-upload-url'],
  routes: { methods: ['GET', 'POST'], allow: ['models', 'cachedContents', 'files', 'v1beta/files', 'v1/files', 'v1alpha/files', 'upload/v1beta/files', 'upload/v1/files', 'upload/v1alpha/files'], deny: ['tunedModels', 'operations', 'corpora'], account: ACCOUNT },
  examples: {
    chat: { method: 'POST', version: 'v1beta', path: 'models/gemini-2.0-flash:generateContent', body: { contents: [{ parts: [{ text: 'Hello!' }] }] } },
    streaming: { method: 'POST', version: 'v1beta', path: 'models/gemini-2.0-flash:streamGenerateContent?alt=sse', body: { contents: [{ parts: [{ text: 'Hello!' }] }] }, streams: true },
  },
  notes: 'Stream with models/{model}:streamGenerateContent?alt=sse (SSE); without alt=sse the stream is a JSON array.',
  // "models.list" needs the key and changes nothing: https://ai.google.dev/api/models#method:-models.list
  keyCheck: { method: 'GET', version: 'v1beta', path: 'models' },
  usage: GEMINI_USAGE,
  // generateContent and streamGenerateContent (https://ai.google.dev/api/generate-content#generationconfig): the model is
  // in the path, the limit is `generationConfig.maxOutputTokens` (absent: the model's own maximum, 8,192 for the 2.x
  // Flash models, https://ai.google.dev/gemini-api/docs/models); streams always carry `usageMetadata`.
  requestFields: [
    { methods: ['POST'], path: 'models/{model}:generateContent', outputLimit: ['generationConfig.maxOutputTokens'], defaultOutputTokens: 8192 },
    { methods: ['POST'], path: 'models/{model}:streamGenerateContent', outputLimit: ['generationConfig.maxOutputTokens'], defaultOutputTokens: 8192 },
  ],
  // Every model method names the model in the path, `models/{model}:{method}` (generateContent, streamGenerateContent,
  // countTokens, embedContent, batchEmbedContents, predict, predictLongRunning…: https://ai.google.dev/api/generate-content,
  // https://ai.google.dev/api/embeddings, https://ai.google.dev/api/models): the app's model policy holds for it. One
  // pattern for every method, so that a method added later cannot step around an allow-list. Reading a model's own
  // description (`GET models/{model}`) uses none.
  pathModels: [{ methods: ['POST'], path: 'models/{model}:*', doc: 'https://ai.google.dev/api/generate-content' }],
  // Live API: `wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent`,
  // the API key in `x-goog-api-key` for servers (https://ai.google.dev/api/live). The SDK builds the socket URL as its
  // base URL + `/ws/…`, so with the base `<gateway>/v1/proxy/gemini/v1beta` the path arrives below a version; upstream
  // the socket sits at the host root.
  realtime: [
    {
      path: 'ws/google.ai.generativelanguage.*.GenerativeService.BidiGenerateContent',
      url: 'wss://generativelanguage.googleapis.com',
      doc: 'https://ai.google.dev/api/live',
      usage: GEMINI_LIVE_USAGE,
      // Where a session names its model (the app's model policy): the first message, `setup`
      // (BidiGenerateContentSetup, https://ai.google.dev/api/live#bidigeneratecontentsetup), names the model as a
      // resource name `models/{model}` in `setup.model` and may cap the output in `setup.generationConfig.maxOutputTokens`.
      // The messages are protobuf JSON, whose parser also takes the proto field names (`generation_config`,
      // `max_output_tokens`: https://protobuf.dev/programming-guides/json/), so both spellings are clamped. Google sends its
      // own JSON in binary frames; its reader is not assumed to refuse JSON in the client's binary frames.
      model: {
        modelPrefix: 'models/',
        jsonInBinaryFrames: true,
        frames: [
          {
            frame: [{ member: 'setup' }],
            model: 'setup.model',
            outputLimit: ['setup.generationConfig.maxOutputTokens', 'setup.generation_config.max_output_tokens', 'setup.generationConfig.max_output_tokens', 'setup.generation_config.maxOutputTokens'],
          },
        ],
      },
    },
  ],
  // Ephemeral tokens for the Live API (v1alpha): `expireTime` defaults to 30 minutes ahead
  // (https://ai.google.dev/gemini-api/docs/ephemeral-tokens).
  credentialRoutes: [{ methods: ['POST'], path: 'auth_tokens', lifetime: { kind: 'body-expire-time', member: 'expireTime' }, doc: 'https://ai.google.dev/gemini-api/docs/ephemeral-tokens' }],
});
