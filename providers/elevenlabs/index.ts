/**
 * ElevenLabs (https://elevenlabs.io/docs/api-reference). `xi-api-key: <key>`. `/v1/text-to-speech/{voice}/stream`
 * streams audio bytes (chunked); the non-stream path answers audio too. Account and workspace routes are refused.
 * - `v2` maps to `/v2`: `GET /v2/voices` (voices.search in the official SDK, https://elevenlabs.io/docs/api-reference/voices/search).
 * - `text-to-dialogue` and `text-to-dialogue/stream` (https://elevenlabs.io/docs/api-reference/text-to-dialogue/convert).
 * - Data residency (https://elevenlabs.io/docs/product-guides/administration/data-residency): an isolated-environment
 *   key works only on its own host, so the operator may set one of the declared hosts as the secret's base URL
 *   (`api.us.elevenlabs.io`, `api.eu.residency.elevenlabs.io`, `api.in.residency.elevenlabs.io`,
 *   `api.sg.residency.elevenlabs.io`); the client never picks it. The official SDKs name the same hosts.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider, type AccountRoute } from '../../core/contract';

/**
 * Account routes, from https://elevenlabs.io/docs/api-reference/voices and /history: managing the voice library (add,
 * clone, edit, delete, professional clones) and the generation history (every text any user had spoken, with its
 * audio). Listing voices and reading one (to pick a voice) stay inference; a voice's samples
 * (https://elevenlabs.io/docs/api-reference/voices/samples/audio/get: `GET /v1/voices/{voice_id}/samples/{sample_id}/audio`)
 * are the recordings a cloned voice was made from, someone's own voice, and are not needed to speak with it.
 */
const ACCOUNT: AccountRoute[] = [
  { methods: ['POST'], path: 'voices/add/**', why: "adds cloned or shared voices to the account's library" },
  { methods: ['POST'], path: 'voices/{voice_id}/edit', why: "changes any voice of the account's library" },
  { methods: ['POST'], path: 'voices/{voice_id}/settings/edit', why: "changes the default settings of any voice of the account's library" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'voices/{voice_id}/samples/**', why: 'lists, downloads or deletes the recordings behind cloned voices (the voice of a real person)' },
  { methods: ['DELETE'], path: 'voices/{voice_id}/**', why: "deletes any voice of the account's library (and its samples)" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'voices/pvc/**', why: "creates, trains or deletes the account's professional voice clones and their recordings" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'history/**', why: 'lists, downloads or deletes the generation history: every text any user had spoken, with its audio' },
];

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'elevenlabs',
  name: 'ElevenLabs',
  baseUrl: 'https://api.elevenlabs.io',
  versions: { v1: '/v1', v2: '/v2' },
  auth: { kind: 'header', header: 'xi-api-key' },
  capabilities: ['tts', 'stt'],
  streaming: ['binary'],
  tenant: {
    baseUrl: 'optional',
    allowedHosts: ['api.elevenlabs.io', 'api.us.elevenlabs.io', 'api.eu.residency.elevenlabs.io', 'api.in.residency.elevenlabs.io', 'api.sg.residency.elevenlabs.io'],
    pathPattern: '^$',
  },
  examples: { tts: { method: 'POST', version: 'v1', path: 'text-to-speech/21m00Tcm4TlvDq8ikWAM/stream', body: { text: 'Hello!', model_id: 'eleven_multilingual_v2' }, streams: true } },
  routes: { methods: ['GET', 'POST'], allow: ['text-to-speech/', 'text-to-dialogue', 'speech-to-text', 'speech-to-speech/', 'sound-generation', 'audio-isolation', 'voices', 'models'], deny: ['user', 'workspace/'], account: ACCOUNT },
  // Input streaming text-to-speech (`wss://api.elevenlabs.io/v1/text-to-speech/{voice_id}/stream-input` and
  // `multi-stream-input`) and realtime speech-to-text (`wss://api.elevenlabs.io/v1/speech-to-text/realtime`), the key
  // in `xi-api-key` for servers. Their frames report no token usage: the sessions are charged their seconds.
  // Each names its model in the URL's `model_id` query parameter (same pages): the app's model policy checks it at the upgrade.
  realtime: [
    { path: 'text-to-speech/{voice_id}/stream-input', doc: 'https://elevenlabs.io/docs/api-reference/text-to-speech/v-1-text-to-speech-voice-id-stream-input', model: { query: 'model_id' } },
    { path: 'text-to-speech/{voice_id}/multi-stream-input', doc: 'https://elevenlabs.io/docs/api-reference/text-to-speech/v-1-text-to-speech-voice-id-multi-stream-input', model: { query: 'model_id' } },
    { path: 'speech-to-text/realtime', doc: 'https://elevenlabs.io/docs/api-reference/speech-to-text/v-1-speech-to-text-realtime', model: { query: 'model_id' } },
  ],
  // The JSON routes that name their model in `model_id` (https://elevenlabs.io/docs/api-reference/text-to-speech/convert,
  // https://elevenlabs.io/docs/api-reference/text-to-dialogue/convert,
  // https://elevenlabs.io/docs/api-reference/text-to-sound-effects/convert): the app's model policy checks it (a request
  // that names none, leaving ElevenLabs to pick its default, is refused under an allow-list). Speech-to-text and
  // speech-to-speech send `model_id` as a multipart field, which model policy does not read.
  requestFields: [
    { methods: ['POST'], path: 'text-to-speech/{voice_id}', model: 'model_id' },
    { methods: ['POST'], path: 'text-to-speech/{voice_id}/stream', model: 'model_id' },
    { methods: ['POST'], path: 'text-to-speech/{voice_id}/with-timestamps', model: 'model_id' },
    { methods: ['POST'], path: 'text-to-speech/{voice_id}/stream/with-timestamps', model: 'model_id' },
    { methods: ['POST'], path: 'text-to-dialogue/**', model: 'model_id' },
    { methods: ['POST'], path: 'sound-generation', model: 'model_id' },
  ],
  // Single-use tokens for the realtime APIs; they expire after 15 minutes, fixed (https://elevenlabs.io/docs/api-reference/tokens/create).
  credentialRoutes: [{ methods: ['POST'], path: 'single-use-token/{token_type}', doc: 'https://elevenlabs.io/docs/api-reference/tokens/create' }],
});
