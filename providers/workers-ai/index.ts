/**
 * Cloudflare Workers AI (https://developers.cloudflare.com/workers-ai/). The account is part of the host path, so the
 * base URL comes from the secret record: `--base-url https://api.cloudflare.com/client/v4/accounts/<account id>/ai`.
 * `v1` is the OpenAI-compatible surface (`/ai/v1/chat/completions`, model in the body, e.g. `@cf/meta/llama-3.1-8b-instruct`).
 * Every other model, image generation included, is called at `/ai/run/{model}` with the model name in the path, e.g.
 * `/ai/run/@cf/black-forest-labs/flux-1-schnell` (https://developers.cloudflare.com/workers-ai/models/flux-1-schnell/,
 * https://developers.cloudflare.com/api/resources/ai/methods/run/). A client path may not start with `@` (path safety), so
 * the `@` lives in declared versions: `v1-cf` maps to `/run/@cf` and `v1-hf` to `/run/@hf`, and the client sends
 * `…/v1/proxy/workers-ai/v1-cf/black-forest-labs/flux-1-schnell`. Only the image model families below are allowed there.
 */
import { BEARER, OPENAI_COMPATIBLE_ROUTES, OPENAI_REQUEST_FIELDS, OPENAI_USAGE } from '../_shared';

/** Model authors of Workers AI text-to-image models (https://developers.cloudflare.com/workers-ai/models/?tasks=Text-to-Image). */
const IMAGE_MODEL_AUTHORS = ['black-forest-labs/', 'stabilityai/', 'bytedance/', 'lykon/', 'leonardo/', 'runwayml/'];
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'workers-ai',
  name: 'Cloudflare Workers AI',
  baseUrl: 'https://api.cloudflare.com/client/v4/accounts/account/ai',
  versions: { v1: '/v1', 'v1-cf': '/run/@cf', 'v1-hf': '/run/@hf' },
  auth: BEARER,
  capabilities: ['chat', 'embeddings', 'image'],
  streaming: ['sse'],
  routes: { ...OPENAI_COMPATIBLE_ROUTES, allow: [...OPENAI_COMPATIBLE_ROUTES.allow!, ...IMAGE_MODEL_AUTHORS] },
  tenant: { baseUrl: 'required', allowedHosts: ['api.cloudflare.com'], pathPattern: '^/client/v4/accounts/[0-9a-f]{32}/ai$' },
  notes: 'Per-account base URL from the secret record; SSE format not verified against Cloudflare docs.',
  usage: OPENAI_USAGE,
  // The OpenAI-compatible endpoints under v1 (https://developers.cloudflare.com/workers-ai/configuration/open-ai-compatibility/).
  requestFields: OPENAI_REQUEST_FIELDS,
  // `run/{model}` names the model in the path (https://developers.cloudflare.com/api/resources/ai/methods/run/): below
  // `v1-cf` and `v1-hf` the client's path is the model's author and name, the `@cf/`/`@hf/` part is the version's. The
  // model policy names these models as the catalog and the v1 bodies do, `@cf/black-forest-labs/flux-1-schnell`.
  pathModels: [
    { methods: ['POST'], path: '{model}/{model}', versions: ['v1-cf'], modelPrefix: '@cf/', doc: 'https://developers.cloudflare.com/api/resources/ai/methods/run/' },
    { methods: ['POST'], path: '{model}/{model}', versions: ['v1-hf'], modelPrefix: '@hf/', doc: 'https://developers.cloudflare.com/api/resources/ai/methods/run/' },
  ],
});
