import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Exa search API (https://docs.exa.ai/reference/search), checked 2026-11-22',
  secret: 'exa-conformance-0123456789abcdef',
  call: { method: 'POST', version: 'v1', path: 'search', contentType: 'application/json', body: JSON.stringify({ query: 'tollgate', numResults: 3 }) },
  response: jsonResponse({ requestId: 'r1', results: [{ id: 'https://example.com', title: 'Tollgate', url: 'https://example.com' }] }),
  error: jsonResponse({ error: 'Invalid API key' }, 401),
};
