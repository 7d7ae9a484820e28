/**
 * Ideogram (https://developer.ideogram.ai/api-reference). `Api-Key` header; image generation.
 * - `v1` maps to `/v1`: the current API, `POST /v1/ideogram-v4/{generate,remix,describe,…}` and
 *   `POST /v1/ideogram-v3/{generate,edit,remix,reframe,replace-background,…}` (multipart).
 * - `v1-root` maps to the host root, where the legacy routes live: `POST /generate`, `/edit`, `/remix`, `/reframe`,
 *   `/upscale`, `/describe` (https://developer.ideogram.ai/api-reference/api-reference/generate).
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'ideogram',
  name: 'Ideogram',
  baseUrl: 'https://api.ideogram.ai',
  versions: { v1: '/v1', 'v1-root': '' },
  auth: { kind: 'header', header: 'Api-Key' },
  capabilities: ['image'],
  streaming: [],
  routes: { methods: ['POST'], allow: ['ideogram-v4/', 'ideogram-v3/', 'generate', 'edit', 'remix', 'reframe', 'upscale', 'describe'] },
});
