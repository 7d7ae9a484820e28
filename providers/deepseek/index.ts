/**
 * DeepSeek (https://api-docs.deepseek.com): OpenAI-compatible. Under load it sends `: keep-alive` SSE comments (and blank
 * lines on non-streamed calls); the gateway passes them through.
 */
import { openAiCompatible } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'deepseek',
  name: 'DeepSeek',
  baseUrl: 'https://api.deepseek.com',
  // "Lists models" needs the key and changes nothing: https://api-docs.deepseek.com/api/list-models
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
  notes: 'OpenAI SSE with ": keep-alive" comments under load.',
});
