/**
 * Replicate (https://replicate.com/docs/reference/http). Bearer. A prediction created with `"stream": true` returns
 * `urls.stream` on a second host, `streaming.api.replicate.com`; call it through the gateway as
 * `/v1/proxy/replicate/v1-stream/predictions/{id}` (SSE with `output`, `error` and `done` events).
 */
import { BEARER } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider } from '../../core/contract';

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'replicate',
  name: 'Replicate',
  baseUrl: 'https://api.replicate.com',
  versions: { v1: '/v1', 'v1-stream': 'https://streaming.api.replicate.com/v1' },
  auth: BEARER,
  capabilities: ['chat', 'image', 'audio', 'video'],
  streaming: ['sse'],
  routes: {
    methods: ['GET', 'POST'],
    // `files`: uploading an input file for a prediction (https://replicate.com/docs/reference/http#files.create; the JS
    // client does it for Blob inputs) is inference.
    allow: ['predictions', 'models/', 'deployments/', 'files'],
    deny: ['account'],
    // Account routes, from https://replicate.com/docs/reference/http. A prediction's own id (get, cancel, stream) and
    // running a model or deployment stay inference.
    account: [
      { methods: ['GET'], path: 'predictions', why: 'lists every prediction made with the token, with its inputs and outputs, by any user' },
      { methods: ['GET'], path: 'files', why: 'lists every file uploaded with the token, by any user' },
      { methods: ['GET', 'DELETE'], path: 'files/{file_id}/**', why: 'reads or deletes any uploaded file by id' },
      { methods: ['GET', 'POST'], path: 'deployments', why: "lists or creates the account's deployments (billed while running)" },
      { methods: ['GET', 'PATCH', 'DELETE'], path: 'deployments/{owner}/{name}', why: "reads, scales or deletes the account's deployments" },
      { methods: ['POST'], path: 'models', why: 'creates models under the account' },
      { methods: ['DELETE'], path: 'models/**', why: "deletes the account's models and model versions" },
      { methods: ['POST'], path: 'models/{owner}/{name}/versions/{version_id}/trainings', why: 'starts a training (fine-tune) billed to the account' },
      { methods: ['GET', 'POST'], path: 'trainings/**', why: "lists, reads or cancels the account's trainings" },
    ],
  },
  // Running an official model or a deployment names it in the path as `{owner}/{name}`
  // (https://replicate.com/docs/reference/http#models.predictions.create,
  // https://replicate.com/docs/reference/http#deployments.predictions.create): the model policy names `owner/name` (a
  // deployment by its own owner and name). `POST predictions` names a version id in its body instead.
  pathModels: [
    { methods: ['POST'], path: 'models/{model}/{model}/predictions', doc: 'https://replicate.com/docs/reference/http#models.predictions.create' },
    { methods: ['POST'], path: 'deployments/{model}/{model}/predictions', doc: 'https://replicate.com/docs/reference/http#deployments.predictions.create' },
  ],
  notes: 'Streams live on a second host: version v1-stream, path predictions/{id}.',
});
