/**
 * Google Cloud Translation, Basic (https://cloud.google.com/translate/docs/reference/rest/v2/translate). The key travels
 * in the query string (`key=`): added by the gateway, a client's own `key` dropped, redacted in every logged URL.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'google-translate',
  name: 'Google Cloud Translation',
  baseUrl: 'https://translation.googleapis.com/language/translate',
  versions: { v2: '/v2' },
  auth: { kind: 'query', parameter: 'key' },
  capabilities: ['translation'],
  streaming: [],
  routes: { methods: ['GET', 'POST'], allow: ['', 'detect', 'languages'] },
  notes: 'POST v2 with {q, target, source?, format?}; key added to the query string by the gateway.',
});
