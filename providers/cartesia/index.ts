/** Cartesia (https://docs.cartesia.ai). `X-API-Key` and the required `Cartesia-Version` header; `/tts/bytes` streams audio. */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'cartesia',
  name: 'Cartesia',
  baseUrl: 'https://api.cartesia.ai',
  versions: { v1: '' },
  auth: { kind: 'header', header: 'X-API-Key' },
  defaultHeaders: { 'Cartesia-Version': '2024-06-10' },
  capabilities: ['tts'],
  streaming: ['binary', 'sse'],
  routes: { methods: ['GET', 'POST'], allow: ['tts/', 'voices', 'stt'] },
});
