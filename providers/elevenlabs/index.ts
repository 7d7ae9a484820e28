/**
 * ElevenLabs (https://elevenlabs.io/docs/api-reference). `xi-api-key: <key>`. `/v1/text-to-speech/{voice}/stream`
 * streams audio bytes (chunked); the non-stream path answers audio too. Account and workspace routes are refused.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

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
  routes: { methods: ['GET', 'POST'], allow: ['text-to-speech/', 'speech-to-text', 'speech-to-speech/', 'sound-generation', 'audio-isolation', 'voices', 'models'], deny: ['user', 'workspace/'] },
});
