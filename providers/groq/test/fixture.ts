import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Groq API reference, Chat (https://console.groq.com/docs/api-reference), OpenAI-compatible shapes, checked 2026-11-22',
  model: 'llama-3.1-8b-instant',
  secret: 'sk-groq-conformance-0123456789abcdef',
});
