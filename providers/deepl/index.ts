/**
 * DeepL (https://developers.deepl.com/docs). `Authorization: DeepL-Auth-Key <key>`. Free-plan keys end in `:fx` and
 * must use `api-free.deepl.com`; the host is chosen from the key, never by the client.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

const PRO = 'https://api.deepl.com';
const FREE = 'https://api-free.deepl.com';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'deepl',
  name: 'DeepL',
  baseUrl: PRO,
  alternateBaseUrls: [FREE],
  selectBaseUrl: (secret) => (secret.value.reveal().endsWith(':fx') ? FREE : PRO),
  versions: { v2: '/v2' },
  auth: { kind: 'header', header: 'Authorization', scheme: 'DeepL-Auth-Key' },
  capabilities: ['translation'],
  streaming: [],
  examples: { translation: { method: 'POST', version: 'v2', path: 'translate', body: { text: ['Hello!'], target_lang: 'DE' } } },
  routes: { methods: ['GET', 'POST'], allow: ['translate', 'languages', 'document', 'glossary-language-pairs', 'rephrase'] },
  notes: 'Keys ending in :fx use the Free host.',
});
