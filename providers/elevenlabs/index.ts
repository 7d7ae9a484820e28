/**
 * ElevenLabs (https://elevenlabs.io/docs/api-reference). `xi-api-key: <key>`. `/v1/text-to-speech/{voice}/stream`
 * streams audio bytes (chunked); the non-stream path answers audio too. Account and workspace routes are refused.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider, type AccountRoute } from '../../core/contract';

/**
 * Account routes, from https://elevenlabs.io/docs/api-reference/voices and /history: managing the voice library (add,
 * clone, edit, delete, professional clones) and the generation history (every text any user had spoken, with its
 * audio). Listing voices and reading one (to pick a voice) stay inference.
 */
const ACCOUNT: AccountRoute[] = [
  { methods: ['POST'], path: 'voices/add/**', why: "adds cloned or shared voices to the account's library" },
  { methods: ['POST'], path: 'voices/{voice_id}/edit', why: "changes any voice of the account's library" },
  { methods: ['POST'], path: 'voices/{voice_id}/settings/edit', why: "changes the default settings of any voice of the account's library" },
  { methods: ['DELETE'], path: 'voices/{voice_id}/**', why: "deletes any voice of the account's library (and its samples)" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'voices/pvc/**', why: "creates, trains or deletes the account's professional voice clones and their recordings" },
  { methods: ['GET', 'POST', 'DELETE'], path: 'history/**', why: 'lists, downloads or deletes the generation history: every text any user had spoken, with its audio' },
];

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'elevenlabs',
  name: 'ElevenLabs',
  baseUrl: 'https://api.elevenlabs.io',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'xi-api-key' },
  capabilities: ['tts', 'stt'],
  streaming: ['binary'],
  examples: { tts: { method: 'POST', version: 'v1', path: 'text-to-speech/21m00Tcm4TlvDq8ikWAM/stream', body: { text: 'Hello!', model_id: 'eleven_multilingual_v2' }, streams: true } },
  routes: { methods: ['GET', 'POST'], allow: ['text-to-speech/', 'speech-to-text', 'speech-to-speech/', 'sound-generation', 'audio-isolation', 'voices', 'models'], deny: ['user', 'workspace/'], account: ACCOUNT },
});
