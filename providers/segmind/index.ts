/** Segmind (https://docs.segmind.com). `x-api-key`; `/v1/{model}` answers image bytes or JSON. */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'segmind',
  name: 'Segmind',
  baseUrl: 'https://api.segmind.com',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'x-api-key' },
  capabilities: ['image'],
  streaming: [],
  routes: { methods: ['POST'] },
});
