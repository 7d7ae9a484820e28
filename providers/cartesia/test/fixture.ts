import { audioResponse, jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

const body = JSON.stringify({ model_id: 'sonic-2', transcript: 'Hello', voice: { mode: 'id', id: 'a0e99841' }, output_format: { container: 'mp3', bit_rate: 128000, sample_rate: 44100 } });

export const fixture: ProviderFixture = {
  provenance: 'Cartesia TTS bytes endpoint (https://docs.cartesia.ai/api-reference/tts/bytes), checked 2026-11-22',
  secret: 'sk_car_conformance_0123456789',
  call: { method: 'POST', version: 'v1', path: 'tts/bytes', contentType: 'application/json', body },
  response: audioResponse(),
  stream: { call: { method: 'POST', version: 'v1', path: 'tts/bytes', contentType: 'application/json', body }, response: audioResponse() },
  error: jsonResponse({ error: 'Invalid API key' }, 401),
};
