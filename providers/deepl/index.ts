/**
 * DeepL (https://developers.deepl.com/docs). `Authorization: DeepL-Auth-Key <key>`. Free-plan keys end in `:fx` and
 * must use `api-free.deepl.com`; the host is chosen from the key, never by the client.
 * Routes (https://developers.deepl.com/api-reference): `translate`, `document`, `languages`, `glossary-language-pairs`;
 * DeepL API for Write `write/rephrase` and `write/correct` (https://developers.deepl.com/api-reference/improve-text);
 * `usage`; glossaries (`/v2/glossaries`, and the multilingual `/v3/glossaries`,
 * https://developers.deepl.com/api-reference/multilingual-glossaries). The official `deepl-node` client writes
 * `/v2/…` and `/v3/…` itself, so its `serverUrl` is the provider root `…/v1/proxy/deepl`.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider, type AccountRoute } from '../../core/contract';

/**
 * Account routes, from https://developers.deepl.com/api-reference/multilingual-glossaries: glossaries are the account's
 * shared dictionaries. Translating with one (`glossary_id`) and a document's own status and result (its
 * `document_key` is the uploader's) stay inference.
 */
const ACCOUNT: AccountRoute[] = [
  // https://developers.deepl.com/api-reference/usage-and-quota: the account's characters used and its limit (and, for
  // Pro, its cost control settings): the operator's billing, not one request's.
  { methods: ['GET', 'POST'], path: 'usage', why: "reads the account's usage, quota and billing period" },
  { methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], path: 'glossaries/**', why: "lists, reads, creates, changes or deletes the account's glossaries and their entries" },
];

const PRO = 'https://api.deepl.com';
const FREE = 'https://api-free.deepl.com';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'deepl',
  name: 'DeepL',
  baseUrl: PRO,
  alternateBaseUrls: [FREE],
  selectBaseUrl: (secret) => (secret.value.reveal().endsWith(':fx') ? FREE : PRO),
  versions: { v2: '/v2', v3: '/v3' },
  auth: { kind: 'header', header: 'Authorization', scheme: 'DeepL-Auth-Key' },
  capabilities: ['translation'],
  streaming: [],
  examples: { translation: { method: 'POST', version: 'v2', path: 'translate', body: { text: ['Hello!'], target_lang: 'DE' } } },
  routes: { methods: ['GET', 'POST'], allow: ['translate', 'languages', 'document', 'glossary-language-pairs', 'write/rephrase', 'write/correct', 'usage', 'glossaries'], account: ACCOUNT },
  notes: 'Keys ending in :fx use the Free host.',
});
