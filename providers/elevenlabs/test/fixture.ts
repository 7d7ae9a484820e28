import { audioResponse, jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

const body = JSON.stringify({ text: 'Hello', model_id: 'eleven_multilingual_v2' });

export const fixture: ProviderFixture = {
  provenance: 'ElevenLabs Text to Speech and stream reference (https://elevenlabs.io/docs/api-reference/text-to-speech), checked 2026-11-22',
  secret: 'sk_elevenlabs_conformance_0123456789',
  call: { method: 'POST', version: 'v1', path: 'text-to-speech/21m00Tcm4TlvDq8ikWAM', query: 'output_format=mp3_44100_128', contentType: 'application/json', body },
  response: audioResponse(),
  stream: { call: { method: 'POST', version: 'v1', path: 'text-to-speech/21m00Tcm4TlvDq8ikWAM/stream', contentType: 'application/json', body }, response: audioResponse() },
  error: jsonResponse({ detail: { status: 'invalid_api_key', message: 'Invalid API key' } }, 401),
};
