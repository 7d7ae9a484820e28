/** Hugging Face Inference Providers router (https://huggingface.co/docs/inference-providers): OpenAI-compatible. */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'huggingface',
  name: 'Hugging Face',
  baseUrl: 'https://router.huggingface.co',
  capabilities: ['chat', 'embeddings', 'image'],
});
