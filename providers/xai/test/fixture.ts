import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'xAI API reference (https://docs.x.ai/docs/api-reference), OpenAI-compatible, checked 2026-11-22',
  model: 'grok-3-mini',
  secret: 'sk-xai-conformance-0123456789abcdef',
});
