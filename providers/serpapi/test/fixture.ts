import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'SerpApi Google Search API (https://serpapi.com/search-api), checked 2026-11-22',
  secret: 'serpapi-conformance-0123456789abcdef',
  call: { method: 'GET', version: 'v1', path: 'search.json', query: 'engine=google&q=tollgate' },
  response: jsonResponse({ search_metadata: { status: 'Success' }, organic_results: [{ position: 1, title: 'Tollgate' }] }),
  error: jsonResponse({ error: 'Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key' }, 401),
};
