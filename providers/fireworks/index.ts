/** Fireworks AI (https://docs.fireworks.ai/api-reference): inference under `/inference/v1`, OpenAI-compatible. */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'fireworks',
  name: 'Fireworks AI',
  baseUrl: 'https://api.fireworks.ai/inference',
  capabilities: ['chat', 'embeddings', 'image'],
  defaultHeaders: { accept: 'application/json' },
});
