import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

const candidate = (text: string) => ({ candidates: [{ content: { parts: [{ text }], role: 'model' }, index: 0 }] });

export const fixture: ProviderFixture = {
  provenance: 'Gemini API reference, models.generateContent / streamGenerateContent (https://ai.google.dev/api/generate-content); JSON-array stream framing per providers.md, checked 2026-11-22',
  secret: 'AIzaSy-gemini-conformance-0123456789',
  call: { method: 'POST', version: 'v1beta', path: 'models/gemini-2.0-flash:generateContent', contentType: 'application/json', body: JSON.stringify({ contents: [{ parts: [{ text: 'Hello' }] }] }) },
  response: jsonResponse(candidate('Hello!')),
  stream: {
    // Without alt=sse the stream is one JSON array, sent element by element.
    call: { method: 'POST', version: 'v1beta', path: 'models/gemini-2.0-flash:streamGenerateContent', contentType: 'application/json', body: JSON.stringify({ contents: [{ parts: [{ text: 'Hello' }] }] }) },
    response: { status: 200, contentType: 'application/json; charset=UTF-8', chunks: [`[${JSON.stringify(candidate('Hel'))}`, `\r\n,${JSON.stringify(candidate('lo!'))}`, '\r\n]'] },
  },
  error: jsonResponse({ error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' } }, 400),
};
