/** Brave Search (https://api-dashboard.search.brave.com/app/documentation). `X-Subscription-Token`; GET with query. */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'brave',
  name: 'Brave Search',
  baseUrl: 'https://api.search.brave.com/res',
  versions: { v1: '/v1' },
  auth: { kind: 'header', header: 'X-Subscription-Token' },
  defaultHeaders: { accept: 'application/json' },
  capabilities: ['search'],
  streaming: [],
  examples: { search: { method: 'GET', version: 'v1', path: 'web/search?q=tollgate' } },
  routes: { methods: ['GET'], allow: ['web/search', 'news/search', 'images/search', 'videos/search', 'suggest/search', 'spellcheck/search', 'summarizer/search'] },
});
