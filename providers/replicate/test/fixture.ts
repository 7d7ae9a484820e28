import { jsonResponse, sseResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Replicate HTTP API, predictions and streaming (https://replicate.com/docs/topics/predictions/streaming), checked 2026-11-22',
  secret: 'r8_replicate_conformance_0123456789',
  call: { method: 'POST', version: 'v1', path: 'predictions', contentType: 'application/json', body: JSON.stringify({ version: 'abc123', input: { prompt: 'Hello' }, stream: true }) },
  response: jsonResponse({ id: 'gm3qorzdhgbfurvjtvhg6dckhu', status: 'starting', urls: { stream: 'https://streaming.api.replicate.com/v1/predictions/gm3qorzdhgbfurvjtvhg6dckhu' } }, 201),
  // The stream lives on the second host: version v1-stream.
  stream: {
    call: { method: 'GET', version: 'v1-stream', path: 'predictions/gm3qorzdhgbfurvjtvhg6dckhu', headers: { accept: 'text/event-stream' } },
    response: sseResponse([['output', 'Hel'], ['output', 'lo!'], ['done', {}]]),
  },
  error: jsonResponse({ title: 'Unauthenticated', detail: 'You did not pass a valid authentication token', status: 401 }, 401),
};
