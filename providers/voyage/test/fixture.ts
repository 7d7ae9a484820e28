import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Voyage AI embeddings API (https://docs.voyageai.com/reference/embeddings-api), checked 2026-11-22',
  secret: 'pa-voyage-conformance-0123456789',
  call: { method: 'POST', version: 'v1', path: 'embeddings', contentType: 'application/json', body: JSON.stringify({ input: ['hello'], model: 'voyage-3.5' }) },
  response: jsonResponse({ object: 'list', data: [{ object: 'embedding', embedding: [0.1, 0.2], index: 0 }], model: 'voyage-3.5', usage: { total_tokens: 1 } }),
  error: jsonResponse({ detail: 'Provided API key is invalid.' }, 401),
};
