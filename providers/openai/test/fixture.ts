import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'OpenAI API reference, Chat Completions (https://platform.openai.com/docs/api-reference/chat), checked 2026-11-22',
  model: 'gpt-4o-mini',
  secret: 'sk-openai-conformance-0123456789abcdef',
});
