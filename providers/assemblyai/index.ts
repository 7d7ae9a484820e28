/**
 * AssemblyAI (https://www.assemblyai.com/docs/api-reference). The raw key in `Authorization` (no scheme). US by default;
 * an EU secret carries `--base-url https://api.eu.assemblyai.com`. Transcription is a job: POST `/v2/transcript`, then poll.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'assemblyai',
  name: 'AssemblyAI',
  baseUrl: 'https://api.assemblyai.com',
  versions: { v2: '/v2' },
  auth: { kind: 'header', header: 'Authorization' },
  capabilities: ['stt'],
  streaming: [],
  routes: { methods: ['GET', 'POST', 'DELETE'], allow: ['upload', 'transcript'] },
  tenant: { baseUrl: 'optional', allowedHosts: ['api.assemblyai.com', 'api.eu.assemblyai.com'], pathPattern: '^$' },
});
