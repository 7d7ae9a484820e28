/**
 * SerpApi (https://serpapi.com/search-api). The key travels in the query string (`api_key=`): it is added by the
 * gateway, a client's own `api_key` is dropped, and every logged URL has it redacted.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'serpapi',
  name: 'SerpApi',
  baseUrl: 'https://serpapi.com',
  versions: { v1: '' },
  auth: { kind: 'query', parameter: 'api_key' },
  capabilities: ['search'],
  streaming: [],
  routes: { methods: ['GET'], allow: ['search.json', 'search', 'locations.json'], deny: ['account', 'account.json'] },
  notes: 'Unversioned (v1 maps to the root). Key in the query string, added by the gateway.',
});
