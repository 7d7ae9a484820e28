import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Segmind serverless API (https://docs.segmind.com), image bytes answer, checked 2026-11-22',
  secret: 'SG_segmind_conformance_0123456789',
  call: { method: 'POST', version: 'v1', path: 'flux-schnell', contentType: 'application/json', body: JSON.stringify({ prompt: 'a lighthouse at dawn' }) },
  response: { status: 200, contentType: 'image/jpeg', chunks: [Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(1024, 0x22), Buffer.from([0xff, 0xd9])] },
  error: jsonResponse({ 'html-message': 'Invalid API key' }, 401),
};
