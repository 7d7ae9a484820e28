/**
 * Azure OpenAI (https://learn.microsoft.com/azure/ai-services/openai/reference). The host is per resource and comes from
 * the app's secret record (`--base-url https://<resource>.openai.azure.com/openai`), validated against the patterns
 * below when it is set; never from the client.
 * - `v1`: the v1 API (`/openai/v1/chat/completions`, no `api-version`).
 * - `v1-deployments`: classic deployment paths (`/openai/deployments/{deployment}/chat/completions?api-version=…`). It
 *   maps to `/openai` itself: the official `AzureOpenAI` client (openai npm) inserts `/deployments/{deployment}` on its
 *   own, so a prefix of `/deployments` here doubled it.
 * Auth: `api-key: <key>`.
 */
import { OPENAI_ACCOUNT_ROUTES, OPENAI_COMPATIBLE_ROUTES, OPENAI_USAGE, openAiRequestFields } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'azure-openai',
  name: 'Azure OpenAI',
  baseUrl: 'https://resource.openai.azure.com/openai',
  versions: { v1: '/v1', 'v1-deployments': '' },
  auth: { kind: 'header', header: 'api-key' },
  capabilities: ['chat', 'embeddings', 'image', 'tts', 'stt'],
  streaming: ['sse', 'binary'],
  // Account routes: Azure serves OpenAI's data-plane shapes (files, batches, fine-tuning, vector stores, stored
  // completions and responses: https://learn.microsoft.com/azure/ai-foundry/openai/reference-preview), so OpenAI's list.
  routes: { methods: ['GET', 'POST'], deny: OPENAI_COMPATIBLE_ROUTES.deny, account: OPENAI_ACCOUNT_ROUTES },
  tenant: { baseUrl: 'required', allowedHosts: ['*.openai.azure.com', '*.cognitiveservices.azure.com'], pathPattern: '^/openai$' },
  notes: 'Per-resource host from the secret record. v1-deployments maps to /openai (clients send deployments/{deployment}/…?api-version=…).',
  usage: OPENAI_USAGE,
  // Azure serves OpenAI's request shapes, under `v1` and under `deployments/{deployment}/` (the model is the deployment):
  // https://learn.microsoft.com/azure/ai-foundry/openai/reference (`max_completion_tokens`, `stream_options`).
  // Below `deployments/{deployment}/` the deployment names the model and the body's `model` is not read
  // (https://learn.microsoft.com/en-us/azure/ai-foundry/openai/reference): the model policy's allow-list and aliases name
  // deployments there, found in the path; the output limit is still the body's.
  requestFields: [...openAiRequestFields(), ...openAiRequestFields({ prefix: 'deployments/{deployment}/', bodyModel: false })],
  pathModels: [{ methods: ['POST'], path: 'deployments/{model}/**', versions: ['v1-deployments'], doc: 'https://learn.microsoft.com/en-us/azure/ai-foundry/openai/reference' }],
});
