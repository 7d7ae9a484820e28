import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Mistral API reference, Chat Completion (https://docs.mistral.ai/api/), OpenAI-compatible shapes, checked 2026-11-22',
  model: 'mistral-small-latest',
  secret: 'sk-mistral-conformance-0123456789abcdef',
});
