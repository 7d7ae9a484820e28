/** Voyage AI (https://docs.voyageai.com/reference). Bearer; embeddings and rerank. */
import { BEARER, EMBEDDINGS_USAGE } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'voyage',
  name: 'Voyage AI',
  baseUrl: 'https://api.voyageai.com',
  versions: { v1: '/v1' },
  auth: BEARER,
  capabilities: ['embeddings', 'rerank'],
  streaming: [],
  routes: { methods: ['POST'], allow: ['embeddings', 'multimodalembeddings', 'contextualizedembeddings', 'rerank'] },
  usage: EMBEDDINGS_USAGE,
  // Embeddings and rerank (https://docs.voyageai.com/reference/embeddings-api): `model`; no output tokens.
  requestFields: [{ methods: ['POST'], path: 'embeddings', model: 'model' }, { methods: ['POST'], path: 'rerank', model: 'model' }],
});
