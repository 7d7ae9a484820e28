/**
 * Fireworks AI (https://docs.fireworks.ai/api-reference): inference under `/inference/v1`, OpenAI-compatible. Image
 * generation is not OpenAI-shaped: FLUX models at `workflows/accounts/{account}/models/{model}/text_to_image` (and
 * FLUX Kontext at `workflows/accounts/{account}/models/{model}` plus `…/get_result`), other diffusion models at
 * `image_generation/accounts/{account}/models/{model}` (https://docs.fireworks.ai/guides/image-generation).
 */
import { OPENAI_COMPATIBLE_ROUTES, openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'fireworks',
  name: 'Fireworks AI',
  baseUrl: 'https://api.fireworks.ai/inference',
  capabilities: ['chat', 'embeddings', 'image'],
  routes: { ...OPENAI_COMPATIBLE_ROUTES, allow: [...OPENAI_COMPATIBLE_ROUTES.allow!, 'workflows/accounts/', 'image_generation/accounts/'] },
  defaultHeaders: { accept: 'application/json' },
});
