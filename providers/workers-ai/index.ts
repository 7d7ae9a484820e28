/**
 * Cloudflare Workers AI (https://developers.cloudflare.com/workers-ai/). The account is part of the host path, so the
 * base URL comes from the secret record: `--base-url https://api.cloudflare.com/client/v4/accounts/<account id>/ai`.
 * `v1` is the OpenAI-compatible surface (`/ai/v1/chat/completions`, model in the body, e.g. `@cf/meta/llama-3.1-8b-instruct`).
 */
import { BEARER, OPENAI_COMPATIBLE_ROUTES } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'workers-ai',
  name: 'Cloudflare Workers AI',
  baseUrl: 'https://api.cloudflare.com/client/v4/accounts/account/ai',
  versions: { v1: '/v1' },
  auth: BEARER,
  capabilities: ['chat', 'embeddings', 'image'],
  streaming: ['sse'],
  routes: OPENAI_COMPATIBLE_ROUTES,
  tenant: { baseUrl: 'required', allowedHosts: ['api.cloudflare.com'], pathPattern: '^/client/v4/accounts/[0-9a-f]{32}/ai$' },
  notes: 'Per-account base URL from the secret record; SSE format not verified against Cloudflare docs.',
});
