import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Brave Search API, web search (https://api-dashboard.search.brave.com/app/documentation/web-search), checked 2026-11-22',
  secret: 'BSA-conformance-0123456789abcdef',
  call: { method: 'GET', version: 'v1', path: 'web/search', query: 'q=tollgate&count=3' },
  response: jsonResponse({ type: 'search', web: { results: [{ title: 'Tollgate', url: 'https://example.com' }] } }),
  error: jsonResponse({ type: 'ErrorResponse', error: { code: 'SUBSCRIPTION_TOKEN_INVALID', status: 401 } }, 401),
};
