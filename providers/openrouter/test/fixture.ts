import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'OpenRouter API reference (https://openrouter.ai/docs); ": OPENROUTER PROCESSING" comments per providers.md, checked 2026-11-22',
  model: 'openai/gpt-4o-mini',
  secret: 'sk-openrouter-conformance-0123456789abcdef',
  comments: [': OPENROUTER PROCESSING\n\n'],
});
