/** SambaNova Cloud (https://docs.sambanova.ai): OpenAI-compatible chat. */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({ slug: 'sambanova', name: 'SambaNova', baseUrl: 'https://api.sambanova.ai' });
