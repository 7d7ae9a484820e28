/** Mistral AI (https://docs.mistral.ai/api/): OpenAI-compatible, Bearer, OpenAI SSE; also FIM and embeddings. */
import { openAiCompatible, OPENAI_COMPATIBLE_ROUTES } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'mistral',
  name: 'Mistral AI',
  baseUrl: 'https://api.mistral.ai',
  capabilities: ['chat', 'embeddings'],
  routes: { ...OPENAI_COMPATIBLE_ROUTES, allow: [...(OPENAI_COMPATIBLE_ROUTES.allow ?? []), 'fim/completions', 'agents/completions', 'ocr'] },
});
