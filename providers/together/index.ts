/**
 * Together AI (https://docs.together.ai/reference): OpenAI-compatible chat, embeddings and images. The documented host is
 * now `api.together.ai` (the official `together-ai` SDK defaults to `https://api.together.ai/v1`); `api.together.xyz`
 * was the earlier name.
 */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'together',
  name: 'Together AI',
  baseUrl: 'https://api.together.ai',
  capabilities: ['chat', 'embeddings', 'image'],
});
