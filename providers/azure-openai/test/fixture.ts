import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Azure OpenAI v1 API (https://learn.microsoft.com/azure/ai-services/openai/reference), OpenAI shapes, checked 2026-11-22',
  model: 'gpt-4o-mini',
  secret: 'sk-azure-openai-conformance-0123456789abcdef',
  baseUrl: 'https://contoso.openai.azure.com/openai',
});
