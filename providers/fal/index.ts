/**
 * fal (https://docs.fal.ai). `Authorization: Key <key>`. Synchronous calls go to `fal.run/{app}` (version `v1`), queued
 * jobs to `queue.fal.run/{app}` (version `v1-queue`). `{app}/stream` with `Accept: text/event-stream` streams SSE.
 */
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'fal',
  name: 'fal',
  baseUrl: 'https://fal.run',
  versions: { v1: '', 'v1-queue': 'https://queue.fal.run' },
  auth: { kind: 'header', header: 'Authorization', scheme: 'Key' },
  capabilities: ['image', 'video', 'audio', 'tts'],
  streaming: ['sse', 'binary'],
  routes: {
    methods: ['GET', 'POST', 'PUT'],
    // Every fal path starts with an app id, `{owner}/{app}` (https://docs.fal.ai/model-apis/model-endpoints): sync calls
    // POST `{owner}/{app}[/{path}]`; the queue adds `{owner}/{app}/requests/{request_id}[/status[/stream]|/cancel]`.
    allow: ['*/*'],
    // Account routes, from https://fal.ai/docs/inference-api/queue: the queue answers for one request id (the
    // submitter's own: status, result and cancel stay inference); a listing of an app's requests is not a per-request
    // call.
    account: [{ methods: ['GET'], path: '{owner}/{app}/requests', why: "lists the queue's requests of an app: every user's jobs and results" }],
  },
  notes: 'Path is the app id, e.g. fal-ai/flux/dev; v1-queue uses queue.fal.run.',
});
