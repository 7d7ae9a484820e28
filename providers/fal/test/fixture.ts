import { jsonResponse, sseResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

const body = JSON.stringify({ prompt: 'a lighthouse at dawn' });

export const fixture: ProviderFixture = {
  provenance: 'fal model APIs, synchronous and streaming calls (https://docs.fal.ai/model-apis), checked 2026-11-22',
  secret: 'fal-key-id:fal-key-secret-0123456789',
  call: { method: 'POST', version: 'v1', path: 'fal-ai/flux/dev', contentType: 'application/json', body },
  response: jsonResponse({ images: [{ url: 'https://v3.fal.media/files/x.png', width: 1024, height: 768 }], seed: 42 }),
  stream: {
    call: { method: 'POST', version: 'v1', path: 'fal-ai/flux/dev/stream', contentType: 'application/json', body, headers: { accept: 'text/event-stream' } },
    response: sseResponse([['', { status: 'IN_PROGRESS' }], ['', { images: [{ url: 'https://v3.fal.media/files/x.png' }] }]]),
  },
  error: jsonResponse({ detail: 'Unauthorized' }, 401),
};
