/** Together AI (https://docs.together.ai/reference): OpenAI-compatible chat, embeddings and images. */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'together',
  name: 'Together AI',
  baseUrl: 'https://api.together.xyz',
  capabilities: ['chat', 'embeddings', 'image'],
});
