import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Perplexity API reference (https://docs.perplexity.ai); CRLF framing per providers.md (Portkey splits on \\r\\n\\r\\n), checked 2026-11-22',
  model: 'sonar',
  secret: 'sk-perplexity-conformance-0123456789abcdef',
  separator: '\r\n\r\n',
});
