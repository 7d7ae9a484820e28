/**
 * DeepInfra (https://deepinfra.com/docs/openai_api): OpenAI-compatible at `/v1/openai`. Sends `: ping` SSE comments
 * (which crashed a public gateway's parser, Portkey issue #1035); the gateway passes bytes and never parses them.
 */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'deepinfra',
  name: 'DeepInfra',
  baseUrl: 'https://api.deepinfra.com/v1/openai',
  versions: { v1: '' },
  capabilities: ['chat', 'embeddings'],
  notes: 'v1 maps to /v1/openai. SSE with ": ping" comments.',
});
