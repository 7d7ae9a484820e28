/** Groq (https://console.groq.com/docs/api-reference): OpenAI-compatible under `/openai/v1`; audio is multipart. */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'groq',
  name: 'Groq',
  baseUrl: 'https://api.groq.com/openai',
  capabilities: ['chat', 'stt', 'translation', 'tts'],
  streaming: ['sse', 'binary'],
});
