/**
 * Deepgram (https://developers.deepgram.com/reference). `Authorization: Token <key>`. `/v1/listen` takes raw audio and
 * answers JSON; `/v1/speak` streams audio bytes. (Live WebSocket APIs are not proxied.)
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'deepgram',
  name: 'Deepgram',
  baseUrl: 'https://api.deepgram.com',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'Authorization', scheme: 'Token' },
  capabilities: ['stt', 'tts'],
  streaming: ['binary'],
  routes: { methods: ['GET', 'POST'], allow: ['listen', 'speak', 'read', 'models'], deny: ['projects', 'auth/'] },
});
