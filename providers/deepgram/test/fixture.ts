import { audioResponse, jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Deepgram pre-recorded transcription and text-to-speech REST (https://developers.deepgram.com/reference), checked 2026-11-22',
  secret: 'dg-conformance-0123456789abcdef',
  call: { method: 'POST', version: 'v1', path: 'listen', query: 'model=nova-3&smart_format=true', contentType: 'audio/wav', body: Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(64, 0x01)]) },
  response: jsonResponse({ metadata: { request_id: 'r1' }, results: { channels: [{ alternatives: [{ transcript: 'hello', confidence: 0.99 }] }] } }),
  stream: { call: { method: 'POST', version: 'v1', path: 'speak', query: 'model=aura-2-thalia-en', contentType: 'application/json', body: JSON.stringify({ text: 'Hello' }) }, response: audioResponse() },
  error: jsonResponse({ err_code: 'INVALID_AUTH', err_msg: 'Invalid credentials.' }, 401),
};
