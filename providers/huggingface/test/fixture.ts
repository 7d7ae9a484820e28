import { openAiFixture } from '../../_shared/openai-fixture';

export const fixture = openAiFixture({
  provenance: 'Hugging Face Inference Providers, chat completion (https://huggingface.co/docs/inference-providers), checked 2026-11-22',
  model: 'meta-llama/Llama-3.1-8B-Instruct',
  secret: 'sk-huggingface-conformance-0123456789abcdef',
});
