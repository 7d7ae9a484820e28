/**
 * AssemblyAI (https://www.assemblyai.com/docs/api-reference). The raw key in `Authorization` (no scheme). US by default;
 * an EU secret carries `--base-url https://api.eu.assemblyai.com`. Transcription is a job: POST `/v2/transcript`, then poll.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';
import { ASSEMBLYAI_STREAMING_USAGE } from '../_shared';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'assemblyai',
  name: 'AssemblyAI',
  baseUrl: 'https://api.assemblyai.com',
  // `v3` is Universal-Streaming's own host (https://www.assemblyai.com/docs/api-reference/streaming-api/streaming-api).
  versions: { v2: '/v2', v3: 'https://streaming.assemblyai.com/v3' },
  auth: { kind: 'header', header: 'Authorization' },
  capabilities: ['stt'],
  streaming: [],
  routes: {
    methods: ['GET', 'POST', 'DELETE'],
    allow: ['upload', 'transcript'],
    // Account routes, from https://www.assemblyai.com/docs/api-reference/transcripts/list and /delete. Uploading audio,
    // creating a transcript and reading one's own job by id (`GET transcript/{id}`, its sentences, subtitles…) stay
    // inference: the id is the caller's own.
    account: [
      { methods: ['GET'], path: 'transcript', why: 'lists every transcript made with the key, by any user' },
      { methods: ['DELETE'], path: 'transcript/{transcript_id}/**', why: 'deletes any transcript by id' },
    ],
  },
  // Temporary streaming tokens travel as `?token=` (https://www.assemblyai.com/docs/api-reference/streaming-api/generate-streaming-token).
  clientCredentials: { queryParameters: ['token'] },
  tenant: { baseUrl: 'optional', allowedHosts: ['api.assemblyai.com', 'api.eu.assemblyai.com'], pathPattern: '^$' },
  // Universal-Streaming v3: `wss://streaming.assemblyai.com/v3/ws`, the raw key in `Authorization` for servers
  // (https://www.assemblyai.com/docs/api-reference/streaming-api/streaming-api); usage from its `Termination` message.
  realtime: [{ path: 'ws', url: 'wss://streaming.assemblyai.com/v3', doc: 'https://www.assemblyai.com/docs/api-reference/streaming-api/streaming-api', usage: ASSEMBLYAI_STREAMING_USAGE }],
  // Temporary streaming tokens: `GET /v3/token?expires_in_seconds=` (1-600)
  // (https://www.assemblyai.com/docs/api-reference/streaming-api/generate-streaming-token).
  credentialRoutes: [{ methods: ['GET'], path: 'token', lifetime: { kind: 'query', parameter: 'expires_in_seconds' }, doc: 'https://www.assemblyai.com/docs/api-reference/streaming-api/generate-streaming-token' }],
});
