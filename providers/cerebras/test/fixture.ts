import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Cerebras Inference API reference (https://inference-docs.cerebras.ai/api-reference), checked 2026-11-22',
  model: 'llama3.1-8b',
  secret: 'sk-cerebras-conformance-0123456789abcdef',
});
