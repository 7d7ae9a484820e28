/** Ideogram (https://developer.ideogram.ai). `Api-Key` header; image generation. */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'ideogram',
  name: 'Ideogram',
  baseUrl: 'https://api.ideogram.ai',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'Api-Key' },
  capabilities: ['image'],
  streaming: [],
  routes: { methods: ['POST'], allow: ['ideogram-v3/', 'generate', 'edit', 'remix', 'upscale', 'describe'] },
});
