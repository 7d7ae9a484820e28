/**
 * OpenAI (https://platform.openai.com/docs/api-reference). `Authorization: Bearer <key>`; chat streams as SSE ending in
 * `data: [DONE]`; `/audio/speech` answers with audio bytes. Organization admin routes (`/v1/organization/...`) are refused.
 */
import { defineProvider } from '../../core/contract';
import { openAiCompatible, OPENAI_ACCOUNT_ROUTES, OPENAI_COMPATIBLE_ROUTES, OPENAI_REALTIME_USAGE } from '../_shared';
import { OPENAI_PRICES } from '../_shared/prices';

const base = openAiCompatible({
  slug: 'openai',
  // Published prices, read from the provider's price page (providers/_shared/prices.ts).
  prices: OPENAI_PRICES,
  name: 'OpenAI',
  baseUrl: 'https://api.openai.com',
  capabilities: ['chat', 'embeddings', 'image', 'tts', 'stt', 'translation'],
  streaming: ['sse', 'binary'],
  routes: {
    ...OPENAI_COMPATIBLE_ROUTES,
    // Files and uploads back the Responses and Assistants features; vector stores back file search.
    allow: [...(OPENAI_COMPATIBLE_ROUTES.allow ?? []), 'files', 'uploads', 'vector_stores', 'conversations', 'realtime/calls'],
    methods: ['GET', 'POST', 'DELETE'],
    // Account routes (providers.md, "Route classes"), from https://platform.openai.com/docs/api-reference: listing,
    // reading and deleting what the key stored for every user. `POST files` (a file input for one request) and
    // `GET models` (the catalog) stay inference.
    account: OPENAI_ACCOUNT_ROUTES,
  },
  // Where bodies name the model and the output limit (model policy, token budgets): the OpenAI shapes of
  // openAiCompatible's default (providers/_shared/request-fields.ts, each with its reference page).
  exampleModel: 'gpt-4o-mini',
  // "List models" needs the key and changes nothing: https://platform.openai.com/docs/api-reference/models/list
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
  notes: 'Chat: OpenAI SSE ending in [DONE]; Responses API: SSE with event names; /audio/speech: audio bytes.',
});

/**
 * Realtime: the WebSocket API at `wss://api.openai.com/v1/realtime`, a conversation (`?model=`) or a transcription
 * (`?intent=transcription`) session, `Authorization: Bearer` for servers
 * (https://platform.openai.com/docs/guides/realtime-websocket). `realtime/calls` (a WebRTC SDP offer answered with the
 * operator key, https://platform.openai.com/docs/guides/realtime-webrtc) is an inference route. Routes that mint a
 * client secret for the device are `credential` routes: `realtime/client_secrets` takes `expires_after.seconds`
 * (10-7200, default 600: https://platform.openai.com/docs/api-reference/realtime-sessions/create-realtime-client-secret);
 * the older `realtime/sessions` and `realtime/transcription_sessions` secrets expire after one minute, fixed
 * (https://platform.openai.com/docs/api-reference/realtime-sessions/create).
 */
export const manifest = defineProvider({
  ...base,
  realtime: [
    {
      path: 'realtime',
      doc: 'https://platform.openai.com/docs/guides/realtime-websocket',
      usage: OPENAI_REALTIME_USAGE,
      // Browsers authenticate with the subprotocol `openai-insecure-api-key.<key>` (the SDK's browser client).
      credentialSubprotocols: { prefixes: ['openai-insecure-api-key.'] },
      // Where a session names its model (the app's model policy): the URL's `?model=`
      // (https://platform.openai.com/docs/guides/realtime-websocket); the client events
      // (https://platform.openai.com/docs/api-reference/realtime-client-events): `session.update` carries the session
      // (`session.model`, `session.max_output_tokens` of a `session.type` "realtime" session, an integer up to 4096 or
      // "inf", and the input transcription's model `session.audio.input.transcription.model`), `response.create` a
      // response's own `response.max_output_tokens`. Audio travels base64 in JSON events; binary frames are not events.
      model: {
        query: 'model',
        frames: [
          { frame: [{ member: 'type', equals: 'session.update' }], model: 'session.model' },
          { frame: [{ member: 'type', equals: 'session.update' }], model: 'session.audio.input.transcription.model' },
          { frame: [{ member: 'type', equals: 'session.update' }, { member: 'session.type', equals: 'realtime' }], outputLimit: ['session.max_output_tokens'] },
          { frame: [{ member: 'type', equals: 'response.create' }], outputLimit: ['response.max_output_tokens'] },
        ],
      },
    },
  ],
  credentialRoutes: [
    { methods: ['POST'], path: 'realtime/client_secrets', lifetime: { kind: 'body-seconds', member: 'expires_after.seconds' }, doc: 'https://platform.openai.com/docs/api-reference/realtime-sessions/create-realtime-client-secret' },
    { methods: ['POST'], path: 'realtime/sessions', doc: 'https://platform.openai.com/docs/api-reference/realtime-sessions/create' },
    { methods: ['POST'], path: 'realtime/transcription_sessions', doc: 'https://platform.openai.com/docs/api-reference/realtime-sessions/create-transcription' },
  ],
});
