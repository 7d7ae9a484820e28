/**
 * Groq (https://console.groq.com/docs/api-reference): OpenAI-compatible under `https://api.groq.com/openai/v1`; audio is
 * multipart.
 * - `v1` maps to `/openai/v1`: for OpenAI-style clients (base URL `…/v1/proxy/groq/v1`).
 * - `openai` maps to `/openai`: the official `groq-sdk` takes `https://api.groq.com` as its base URL and writes
 *   `/openai/v1/…` into every path itself, so with the plain base URL `…/v1/proxy/groq` its first segment names this
 *   version and the rest (`v1/chat/completions`) is the path below it.
 * - `v1-root` maps to the host root: the same SDK with the base URL `…/v1/proxy/groq/v1-root` (the earlier documented
 *   form, kept).
 * Only the same product routes are allowed under each (`chat/completions`, `v1/chat/completions`,
 * `openai/v1/chat/completions`); deny and account routes hold on every upstream view (route-class.ts), and the request
 * fields (output limit, model policy) are declared for each form.
 */
import { OPENAI_COMPATIBLE_ROUTES, openAiCompatible } from '../_shared';
import { GROQ_PRICES } from '../_shared/prices';
import { OPENAI_REQUEST_FIELDS } from '../_shared/request-fields';

/** Each route as seen below `v1`, `openai` and `v1-root`. */
const under = (prefixes: readonly string[] | undefined) => (prefixes ?? []).flatMap((prefix) => [prefix, `v1/${prefix}`, `openai/v1/${prefix}`]);

export const manifest = openAiCompatible({
  slug: 'groq',
  // Published prices, read from the provider's price page (providers/_shared/prices.ts).
  prices: GROQ_PRICES,
  name: 'Groq',
  baseUrl: 'https://api.groq.com',
  versions: { v1: '/openai/v1', openai: '/openai', 'v1-root': '' },
  capabilities: ['chat', 'stt', 'translation', 'tts'],
  streaming: ['sse', 'binary'],
  // The account routes (stored data, files, fine-tunes…) hold under both roots: `openai/v1/files` is the same listing.
  routes: {
    ...OPENAI_COMPATIBLE_ROUTES,
    allow: under(OPENAI_COMPATIBLE_ROUTES.allow),
    deny: under(OPENAI_COMPATIBLE_ROUTES.deny),
    account: (OPENAI_COMPATIBLE_ROUTES.account ?? []).flatMap((route) => [route, { ...route, path: `v1/${route.path}` }, { ...route, path: `openai/v1/${route.path}` }]),
  },
  requestFields: OPENAI_REQUEST_FIELDS.flatMap((fields) => [fields, { ...fields, path: `v1/${fields.path}` }, { ...fields, path: `openai/v1/${fields.path}` }]),
  // "List models" needs the key and changes nothing: https://console.groq.com/docs/api-reference#models-list
  keyCheck: { method: 'GET', version: 'v1', path: 'models' },
  notes: 'v1 maps to /openai/v1 (OpenAI-style clients); groq-sdk takes the plain base URL <gateway>/v1/proxy/groq (it sends /openai/v1/… itself: the openai version maps to /openai); v1-root (the host root) works for it too.',
});
