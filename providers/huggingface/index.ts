/**
 * Hugging Face Inference Providers router (https://huggingface.co/docs/inference-providers).
 * - `v1` maps to `/v1`: the router's OpenAI-compatible chat (`https://router.huggingface.co/v1/chat/completions`).
 * - `v1-root` maps to the router root, where every task other than chat lives under the serving provider's name
 *   (https://huggingface.co/docs/inference-providers/tasks/feature-extraction,
 *   https://huggingface.co/docs/inference-providers/tasks/text-to-image): HF Inference at
 *   `hf-inference/models/{model}[/pipeline/{task}]`, OpenAI-style partners at `{provider}/v1/embeddings` and
 *   `{provider}/v1/images/generations`, fal at `fal-ai/{model}`. The official `@huggingface/inference` client builds
 *   `https://router.huggingface.co/…` itself; an app gives it a `fetch` that sends the router's URLs to
 *   `…/v1/proxy/huggingface/v1-root/…`. Only those inference paths are allowed there.
 */
import { OPENAI_COMPATIBLE_ROUTES, openAiCompatible } from '../_shared';

/** Router partners whose inference API is OpenAI-style under `/{provider}/v1/…` (router provider helpers). */
const OPENAI_STYLE_PARTNERS = ['cerebras', 'featherless-ai', 'hyperbolic', 'nebius', 'nscale', 'ovhcloud', 'publicai', 'sambanova', 'scaleway', 'together'];
const PARTNER_ROUTES = OPENAI_STYLE_PARTNERS.flatMap((partner) => ['chat/completions', 'embeddings', 'images/generations'].map((route) => `${partner}/v1/${route}`));

export const manifest = openAiCompatible({
  slug: 'huggingface',
  name: 'Hugging Face',
  baseUrl: 'https://router.huggingface.co',
  versions: { v1: '/v1', 'v1-root': '' },
  capabilities: ['chat', 'embeddings', 'image'],
  routes: { ...OPENAI_COMPATIBLE_ROUTES, allow: [...OPENAI_COMPATIBLE_ROUTES.allow!, 'v1/chat/completions', 'hf-inference/models/', 'fal-ai/', ...PARTNER_ROUTES] },
  notes: 'v1: OpenAI-compatible chat. v1-root: the router root for provider task paths (hf-inference/models/…, {provider}/v1/…).',
});
