/** Jina AI (https://jina.ai/embeddings). Bearer; embeddings and rerank. */
import { BEARER, EMBEDDINGS_USAGE } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'jina',
  name: 'Jina AI',
  baseUrl: 'https://api.jina.ai',
  versions: { v1: '/v1' },
  auth: BEARER,
  capabilities: ['embeddings', 'rerank'],
  streaming: [],
  routes: { methods: ['POST'], allow: ['embeddings', 'rerank', 'classify'] },
  usage: EMBEDDINGS_USAGE,
  // Embeddings (https://jina.ai/embeddings): `model`; no output tokens.
  requestFields: [{ methods: ['POST'], path: 'embeddings', model: 'model' }, { methods: ['POST'], path: 'rerank', model: 'model' }],
});
