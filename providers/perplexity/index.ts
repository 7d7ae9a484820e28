/** Perplexity (https://docs.perplexity.ai): unversioned `/chat/completions`, OpenAI SSE framed with CRLF. */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'perplexity',
  name: 'Perplexity',
  baseUrl: 'https://api.perplexity.ai',
  versions: { v1: '' },
  capabilities: ['chat', 'search'],
  notes: 'Unversioned (v1 maps to the root). SSE framed with CRLF.',
});
