import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Cloudflare Workers AI OpenAI-compatible endpoints (https://developers.cloudflare.com/workers-ai/configuration/open-ai-compatibility/), checked 2026-11-22',
  model: '@cf/meta/llama-3.1-8b-instruct',
  secret: 'sk-workers-ai-conformance-0123456789abcdef',
  baseUrl: 'https://api.cloudflare.com/client/v4/accounts/0123456789abcdef0123456789abcdef/ai',
});
