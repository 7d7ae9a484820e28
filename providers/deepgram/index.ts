/**
 * Deepgram (https://developers.deepgram.com/reference). `Authorization: Token <key>`. `/v1/listen` takes raw audio and
 * answers JSON; `/v1/speak` streams audio bytes. Live transcription and live text-to-speech are realtime sessions.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';
import { DEEPGRAM_LIVE_USAGE } from '../_shared';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'deepgram',
  name: 'Deepgram',
  baseUrl: 'https://api.deepgram.com',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'Authorization', scheme: 'Token' },
  capabilities: ['stt', 'tts'],
  streaming: ['binary'],
  // `auth/grant` is a credential route (below); every other `auth/` path stays outside the allow-list.
  routes: { methods: ['GET', 'POST'], allow: ['listen', 'speak', 'read', 'models'], deny: ['projects'] },
  // Live STT (`wss://api.deepgram.com/v1/listen`, https://developers.deepgram.com/reference/speech-to-text/listen-streaming)
  // and live TTS (`wss://api.deepgram.com/v1/speak`, https://developers.deepgram.com/reference/text-to-speech/speak-streaming),
  // `Authorization: Token <key>` for servers. Browsers send the subprotocols `token`, `<key>` instead.
  // Both name their model in the URL's `model` query parameter (`?model=nova-3`, `?model=aura-2-thalia-en`, same pages):
  // the app's model policy checks it at the upgrade.
  realtime: [
    { path: 'listen', doc: 'https://developers.deepgram.com/reference/speech-to-text/listen-streaming', usage: DEEPGRAM_LIVE_USAGE, credentialSubprotocols: { announcers: ['token', 'bearer'] }, model: { query: 'model' } },
    { path: 'speak', doc: 'https://developers.deepgram.com/reference/text-to-speech/speak-streaming', credentialSubprotocols: { announcers: ['token', 'bearer'] }, model: { query: 'model' } },
  ],
  // Temporary tokens: `ttl_seconds` 1-3600, default 30 (https://developers.deepgram.com/reference/token-based-auth-api/grant-token).
  credentialRoutes: [{ methods: ['POST'], path: 'auth/grant', lifetime: { kind: 'body-seconds', member: 'ttl_seconds' }, doc: 'https://developers.deepgram.com/reference/token-based-auth-api/grant-token' }],
});
