/** Tavily (https://docs.tavily.com). Bearer; POST JSON `/search` and `/extract`. */
import { BEARER } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'tavily',
  name: 'Tavily',
  baseUrl: 'https://api.tavily.com',
  versions: { v1: '' },
  auth: BEARER,
  capabilities: ['search'],
  streaming: [],
  examples: { search: { method: 'POST', version: 'v1', path: 'search', body: { query: 'tollgate', max_results: 5 } } },
  routes: { methods: ['POST'], allow: ['search', 'extract', 'crawl', 'map'] },
});
