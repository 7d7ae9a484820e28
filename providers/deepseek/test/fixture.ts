import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'DeepSeek API docs (https://api-docs.deepseek.com); ": keep-alive" comments per providers.md, checked 2026-11-22',
  model: 'deepseek-chat',
  secret: 'sk-deepseek-conformance-0123456789abcdef',
  comments: [': keep-alive\n\n'],
});
