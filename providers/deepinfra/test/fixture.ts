import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'DeepInfra OpenAI API (https://deepinfra.com/docs/openai_api); ": ping" comments per providers.md (Portkey issue #1035), checked 2026-11-22',
  model: 'meta-llama/Meta-Llama-3.1-8B-Instruct',
  secret: 'sk-deepinfra-conformance-0123456789abcdef',
  comments: [': ping\n\n'],
});
