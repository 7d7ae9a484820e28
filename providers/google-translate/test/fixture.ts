import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'Cloud Translation Basic v2, translate (https://cloud.google.com/translate/docs/reference/rest/v2/translate), checked 2026-11-22',
  secret: 'AIzaSy-translate-conformance-0123456789',
  call: { method: 'POST', version: 'v2', path: '', contentType: 'application/json', body: JSON.stringify({ q: ['Hello'], target: 'de' }) },
  response: jsonResponse({ data: { translations: [{ translatedText: 'Hallo', detectedSourceLanguage: 'en' }] } }),
  error: jsonResponse({ error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' } }, 400),
};
