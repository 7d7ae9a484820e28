/** Cerebras (https://inference-docs.cerebras.ai/api-reference): OpenAI-compatible chat. */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({ slug: 'cerebras', name: 'Cerebras', baseUrl: 'https://api.cerebras.ai' });
