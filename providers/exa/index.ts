/** Exa (https://docs.exa.ai). `x-api-key`; POST JSON `/search`, `/contents`, `/findSimilar`, `/answer`. */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'exa',
  name: 'Exa',
  baseUrl: 'https://api.exa.ai',
  versions: { v1: '' },
  auth: { kind: 'header', header: 'x-api-key' },
  capabilities: ['search'],
  streaming: ['sse'],
  routes: { methods: ['POST'], allow: ['search', 'contents', 'findSimilar', 'answer'] },
});
