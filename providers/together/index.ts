/**
 * Together AI (https://docs.together.ai/reference): OpenAI-compatible chat, embeddings and images. The documented host is
 * now `api.together.ai` (the official `together-ai` SDK defaults to `https://api.together.ai/v1`); `api.together.xyz`
 * was the earlier name.
 */
import { openAiCompatible, OPENAI_COMPATIBLE_ROUTES } from '../_shared';

export const manifest = openAiCompatible({
  slug: 'together',
  name: 'Together AI',
  baseUrl: 'https://api.together.ai',
  capabilities: ['chat', 'embeddings', 'image'],
  // Account routes, from https://docs.together.ai/reference (Files, Fine-tuning, Batches, Dedicated endpoints).
  routes: {
    ...OPENAI_COMPATIBLE_ROUTES,
    account: [
      ...(OPENAI_COMPATIBLE_ROUTES.account ?? []),
      { methods: ['GET', 'POST', 'DELETE'], path: 'files/**', why: "lists, uploads to, reads or deletes the account's files" },
      { methods: ['GET', 'POST', 'DELETE'], path: 'fine-tunes/**', why: 'lists, starts or cancels fine-tuning jobs billed to the account, and downloads their weights' },
      { methods: ['GET', 'POST'], path: 'batches/**', why: "lists, creates or cancels batch jobs over the account's files" },
      { methods: ['GET', 'POST', 'PATCH', 'DELETE'], path: 'endpoints/**', why: 'lists, creates, changes or deletes dedicated endpoints billed by the hour' },
    ],
  },
});
