import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Ideogram 3.0 generate (https://developer.ideogram.ai/api-reference/api-reference/generate-v3), checked 2026-11-22',
  secret: 'ideogram-conformance-0123456789abcdef',
  call: { method: 'POST', version: 'v1', path: 'ideogram-v3/generate', contentType: 'application/json', body: JSON.stringify({ prompt: 'a lighthouse at dawn' }) },
  response: jsonResponse({ created: '2026-11-22T00:00:00Z', data: [{ url: 'https://ideogram.ai/api/images/x.png', prompt: 'a lighthouse at dawn' }] }),
  error: jsonResponse({ error: 'Unauthorized' }, 401),
};
