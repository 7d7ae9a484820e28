import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'AssemblyAI transcript API (https://www.assemblyai.com/docs/api-reference/transcripts/submit), checked 2026-11-22',
  secret: 'assemblyai-conformance-0123456789abcdef',
  call: { method: 'POST', version: 'v2', path: 'transcript', contentType: 'application/json', body: JSON.stringify({ audio_url: 'https://example.com/a.mp3' }) },
  response: jsonResponse({ id: 't1', status: 'queued' }),
  error: jsonResponse({ error: 'Invalid API key' }, 401),
};
