/**
 * Stability AI (https://platform.stability.ai/docs/api-reference). Bearer. v2beta `/stable-image/generate/{model}` takes
 * multipart/form-data and answers image bytes (`Accept: image/*`) or JSON with base64.
 */
import { BEARER } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'stability',
  name: 'Stability AI',
  baseUrl: 'https://api.stability.ai',
  versions: { v2beta: '/v2beta', v1: '/v1' },
  auth: BEARER,
  capabilities: ['image'],
  streaming: [],
  examples: { image: { method: 'POST', version: 'v2beta', path: 'stable-image/generate/core', body: { prompt: 'A lighthouse at dawn', output_format: 'png' } } },
  routes: { methods: ['GET', 'POST'], allow: ['stable-image/', 'generation/', 'engines/', 'results/', '3d/', 'video/'], deny: ['user/'] },
});
