import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Recraft API, generate image (https://www.recraft.ai/docs#generate-image), checked 2026-11-22',
  secret: 'recraft-conformance-0123456789abcdef',
  call: { method: 'POST', version: 'v1', path: 'images/generations', contentType: 'application/json', body: JSON.stringify({ prompt: 'a lighthouse at dawn', style: 'digital_illustration' }) },
  response: jsonResponse({ created: 1732000000, data: [{ url: 'https://img.recraft.ai/x.webp' }] }),
  error: jsonResponse({ code: 'not_authorized', message: 'Invalid token' }, 401),
};
