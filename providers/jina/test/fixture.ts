import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Jina Embeddings API (https://jina.ai/embeddings), checked 2026-11-22',
  secret: 'jina_conformance_0123456789abcdef',
  call: { method: 'POST', version: 'v1', path: 'embeddings', contentType: 'application/json', body: JSON.stringify({ model: 'jina-embeddings-v3', input: ['hello'] }) },
  response: jsonResponse({ model: 'jina-embeddings-v3', object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }] }),
  error: jsonResponse({ detail: 'Invalid API key' }, 401),
};
