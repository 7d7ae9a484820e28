/**
 * Groq (https://console.groq.com/docs/api-reference): OpenAI-compatible under `https://api.groq.com/openai/v1`; audio is
 * multipart.
 * - `v1` maps to `/openai/v1`: for OpenAI-style clients (base URL `…/v1/proxy/groq/v1`).
 * - `v1-root` maps to the host root: the official `groq-sdk` takes `https://api.groq.com` as its base URL and writes
 *   `/openai/v1/…` into every path itself (base URL `…/v1/proxy/groq/v1-root`). Only the same product routes, under
 *   `openai/v1/`, are allowed there.
 */
import { OPENAI_COMPATIBLE_ROUTES, openAiCompatible } from '../_shared';

const under = (prefixes: readonly string[] | undefined) => (prefixes ?? []).flatMap((prefix) => [prefix, `openai/v1/${prefix}`]);

export const manifest = openAiCompatible({
  slug: 'groq',
  name: 'Groq',
  baseUrl: 'https://api.groq.com',
  versions: { v1: '/openai/v1', 'v1-root': '' },
  capabilities: ['chat', 'stt', 'translation', 'tts'],
  streaming: ['sse', 'binary'],
  // The account routes (stored data, files, fine-tunes…) hold under both roots: `openai/v1/files` is the same listing.
  routes: {
    ...OPENAI_COMPATIBLE_ROUTES,
    allow: under(OPENAI_COMPATIBLE_ROUTES.allow),
    deny: under(OPENAI_COMPATIBLE_ROUTES.deny),
    account: (OPENAI_COMPATIBLE_ROUTES.account ?? []).flatMap((route) => [route, { ...route, path: `openai/v1/${route.path}` }]),
  },
  // "List models" needs the key and changes nothing: https://console.groq.com/docs/api-reference#models-list
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
  notes: 'v1 maps to /openai/v1 (OpenAI-style clients); v1-root maps to the host root for groq-sdk, which sends /openai/v1/… itself.',
});
