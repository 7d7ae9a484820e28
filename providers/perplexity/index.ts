/**
 * Perplexity (https://docs.perplexity.ai): unversioned `/chat/completions`, OpenAI SSE framed with CRLF, and the Search
 * API `POST /search` (https://docs.perplexity.ai/api-reference/search-post). The official `@perplexity-ai/perplexity_ai`
 * client takes `…/v1/proxy/perplexity/v1` as its base URL.
 */
import { OPENAI_COMPATIBLE_ROUTES, openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'perplexity',
  name: 'Perplexity',
  baseUrl: 'https://api.perplexity.ai',
  versions: { v1: '' },
  capabilities: ['chat', 'search'],
  routes: { ...OPENAI_COMPATIBLE_ROUTES, allow: [...OPENAI_COMPATIBLE_ROUTES.allow!, 'search'] },
  notes: 'Unversioned (v1 maps to the root). SSE framed with CRLF.',
});
