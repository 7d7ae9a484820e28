/**
 * Cartesia (https://docs.cartesia.ai/use-the-api/api-conventions): `Authorization: Bearer <key>` and the required
 * `Cartesia-Version` header (a date; the gateway sends the one the official `@cartesia/cartesia-js` 4.2 pins when the
 * client sends none). `/tts/bytes` answers audio bytes, `/tts/sse` streams SSE.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

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
  routes: { methods: ['GET', 'POST'], allow: ['tts/', 'voices', 'stt'] },
});
