/**
 * Replicate (https://replicate.com/docs/reference/http). Bearer. A prediction created with `"stream": true` returns
 * `urls.stream` on a second host, `streaming.api.replicate.com`; call it through the gateway as
 * `/v1/proxy/replicate/v1-stream/predictions/{id}` (SSE with `output`, `error` and `done` events).
 */
import { BEARER } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'replicate',
  name: 'Replicate',
  baseUrl: 'https://api.replicate.com',
  versions: { v1: '/v1', 'v1-stream': 'https://streaming.api.replicate.com/v1' },
  auth: BEARER,
  capabilities: ['chat', 'image', 'audio', 'video'],
  streaming: ['sse'],
  routes: { methods: ['GET', 'POST'], allow: ['predictions', 'models/', 'deployments/'], deny: ['account', 'trainings'] },
  notes: 'Streams live on a second host: version v1-stream, path predictions/{id}.',
});
