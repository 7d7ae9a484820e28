import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'SambaNova Cloud API (https://docs.sambanova.ai), OpenAI-compatible, checked 2026-11-22',
  model: 'Meta-Llama-3.1-8B-Instruct',
  secret: 'sk-sambanova-conformance-0123456789abcdef',
});
