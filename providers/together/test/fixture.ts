import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Together AI reference, Chat Completions (https://docs.together.ai/reference), checked 2026-11-22',
  model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
  secret: 'sk-together-conformance-0123456789abcdef',
});
