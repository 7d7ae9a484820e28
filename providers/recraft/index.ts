/** Recraft (https://www.recraft.ai/docs). Bearer; OpenAI-style image routes. */
import { BEARER } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'recraft',
  name: 'Recraft',
  baseUrl: 'https://external.api.recraft.ai',
  versions: { v1: '/v1' },
  auth: BEARER,
  capabilities: ['image'],
  streaming: [],
  routes: {
    methods: ['GET', 'POST'],
    allow: ['images/', 'styles'],
    // Account routes, from https://www.recraft.ai/docs (Styles): custom styles are the account's shared assets; a
    // generation names one by id (inference).
    account: [{ methods: ['GET', 'POST', 'DELETE'], path: 'styles/**', why: "lists, creates or deletes the account's custom styles" }],
  },
});
