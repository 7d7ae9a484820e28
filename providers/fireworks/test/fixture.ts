import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Fireworks AI API reference (https://docs.fireworks.ai/api-reference), checked 2026-11-22',
  model: 'accounts/fireworks/models/llama-v3p1-8b-instruct',
  secret: 'sk-fireworks-conformance-0123456789abcdef',
});
