/** xAI (https://docs.x.ai/docs/api-reference): OpenAI-compatible chat and embeddings. */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({ slug: 'xai', name: 'xAI', baseUrl: 'https://api.x.ai', capabilities: ['chat', 'embeddings', 'image'] });
