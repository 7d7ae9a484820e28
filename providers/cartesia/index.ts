/**
 * Cartesia (https://docs.cartesia.ai/use-the-api/api-conventions): `Authorization: Bearer <key>` and the required
 * `Cartesia-Version` header (a date; the gateway sends the one the official `@cartesia/cartesia-js` 4.2 pins when the
 * client sends none). `/tts/bytes` answers audio bytes, `/tts/sse` streams SSE.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider, type AccountRoute } from '../../core/contract';

/**
 * Account routes, from https://docs.cartesia.ai/api-reference/voices: managing the voice library (create, clone,
 * localize, update, delete). Listing voices and reading one (to pick a voice for speech) stay inference.
 */
const ACCOUNT: AccountRoute[] = [
  { methods: ['POST'], path: 'voices', why: "adds voices to the account's library" },
  { methods: ['POST'], path: 'voices/clone', why: "clones a voice from uploaded audio into the account's library" },
  { methods: ['POST'], path: 'voices/localize', why: "creates localized voices in the account's library" },
  { methods: ['PATCH', 'DELETE'], path: 'voices/{voice_id}', why: "renames or deletes any voice of the account's library" },
];

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'cartesia',
  name: 'Cartesia',
  baseUrl: 'https://api.cartesia.ai',
  versions: { v1: '' },
  auth: { kind: 'header', header: 'Authorization', scheme: 'Bearer' },
  defaultHeaders: { 'Cartesia-Version': '2026-08-14' },
  capabilities: ['tts'],
  streaming: ['binary', 'sse'],
  routes: { methods: ['GET', 'POST'], allow: ['tts/', 'voices', 'stt'], account: ACCOUNT },
  // TTS over WebSocket (`wss://api.cartesia.ai/tts/websocket`, https://docs.cartesia.ai/api-reference/tts/websocket) and
  // streaming STT (`wss://api.cartesia.ai/stt/websocket`, https://docs.cartesia.ai/api-reference/stt/stt), the key and
  // `Cartesia-Version` as for HTTP. No token usage in their frames: the sessions are charged their seconds.
  // The model: each TTS generation request (a JSON text frame) names it in `model_id`; STT in the URL's `model` query
  // parameter (same pages). The app's model policy checks both.
  realtime: [
    { path: 'tts/websocket', doc: 'https://docs.cartesia.ai/api-reference/tts/websocket', model: { frames: [{ frame: [{ member: 'model_id' }], model: 'model_id' }] } },
    { path: 'stt/websocket', doc: 'https://docs.cartesia.ai/api-reference/stt/stt', model: { query: 'model' } },
  ],
  // Access tokens for client apps: `expires_in` seconds, at most 3600 (https://docs.cartesia.ai/api-reference/auth/access-token).
  credentialRoutes: [{ methods: ['POST'], path: 'access-token', lifetime: { kind: 'body-seconds', member: 'expires_in' }, doc: 'https://docs.cartesia.ai/api-reference/auth/access-token' }],
});
