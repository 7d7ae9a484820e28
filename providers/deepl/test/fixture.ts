import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

export const fixture: ProviderFixture = {
  provenance: 'DeepL API, translate text (https://developers.deepl.com/docs/api-reference/translate), checked 2026-11-22',
  secret: 'deepl-conformance-0123456789abcdef:fx',
  call: { method: 'POST', version: 'v2', path: 'translate', contentType: 'application/json', body: JSON.stringify({ text: ['Hello'], target_lang: 'DE' }) },
  response: jsonResponse({ translations: [{ detected_source_language: 'EN', text: 'Hallo' }] }),
  error: jsonResponse({ message: 'Wrong endpoint. Use https://api-free.deepl.com' }, 403),
};
