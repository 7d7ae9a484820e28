import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Tavily Search API (https://docs.tavily.com/documentation/api-reference/endpoint/search), checked 2026-11-22',
  secret: 'tvly-conformance-0123456789abcdef',
  call: { method: 'POST', version: 'v1', path: 'search', contentType: 'application/json', body: JSON.stringify({ query: 'tollgate', max_results: 3 }) },
  response: jsonResponse({ query: 'tollgate', results: [{ title: 'Tollgate', url: 'https://example.com', content: '…', score: 0.9 }] }),
  error: jsonResponse({ detail: { error: 'Unauthorized: missing or invalid API key.' } }, 401),
};
