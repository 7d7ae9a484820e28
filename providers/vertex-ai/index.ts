/**
 * Google Vertex AI (https://cloud.google.com/vertex-ai/docs/reference/rest). Computed credentials: the secret is a
 * service-account JSON key; the gateway signs a JWT assertion (RS256) and trades it at Google's OAuth token endpoint for
 * an access token (RFC 7523, "JWT Profile for OAuth 2.0 Authorization Grants"), cached until a minute before expiry, then
 * sends `Authorization: Bearer <token>`.
 *
 * The host is per region/project and comes from the secret record:
 * `--base-url https://us-central1-aiplatform.googleapis.com` (or `https://aiplatform.googleapis.com` for `global`).
 * The token endpoint is Google's, never one named in the key file; an operator may override it with
 * `TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL` (a fake one in tests).
 */
import { SignJWT, importPKCS8 } from 'jose';
import { GEMINI_USAGE } from '../_shared';
import { GatewayError, PLUGIN_CONTRACT_VERSION, defineProvider, type AccountRoute, type ResolvedSecret, type UpstreamRequestDraft } from '../../core/contract';

/** Resources under `projects/{p}/locations/{l}/` that hold the project's data, not one request's. */
const LOCATION = 'projects/{project}/locations/{location}';

/**
 * Account routes, from https://cloud.google.com/vertex-ai/docs/reference/rest (v1): the project's caches, jobs,
 * datasets, corpora, model registry and endpoint management. Generating with a publisher model or calling a deployed
 * endpoint (`…/endpoints/{id}:predict`, `:generateContent`, `:rawPredict`…) stays inference.
 */
const ACCOUNT: AccountRoute[] = [
  ...(
    [
      ['cachedContents', "the project's context caches (other users' prompts)"],
      ['tuningJobs', 'tuning jobs billed to the project'],
      ['batchPredictionJobs', 'batch prediction jobs and their results'],
      ['datasets', "the project's datasets"],
      ['ragCorpora', "the project's RAG corpora and their files"],
      ['customJobs', 'custom training jobs billed to the project'],
      ['hyperparameterTuningJobs', 'hyperparameter tuning jobs billed to the project'],
      ['pipelineJobs', "the project's pipeline runs"],
      ['trainingPipelines', "the project's training pipelines"],
      ['models', "the project's model registry"],
      ['indexes', "the project's vector search indexes"],
      ['indexEndpoints', "the project's vector search endpoints"],
      ['reasoningEngines', "the project's agent engines and their sessions"],
      ['operations', "the project's long-running operations"],
    ] as const
  ).map(([collection, what]): AccountRoute => ({ methods: ['GET', 'POST', 'PATCH', 'DELETE'], path: `${LOCATION}/${collection}/**`, why: `lists, reads, creates, changes or deletes ${what}` })),
  { methods: ['GET', 'POST'], path: `${LOCATION}/endpoints`, why: "lists or creates the project's endpoints" },
  { methods: ['GET', 'PATCH', 'DELETE'], path: `${LOCATION}/endpoints/{endpoint}`, why: "reads, changes or deletes any endpoint of the project" },
  { methods: ['POST'], path: `${LOCATION}/endpoints/{endpoint}:deployModel`, why: 'deploys models on billed machines' },
  { methods: ['POST'], path: `${LOCATION}/endpoints/{endpoint}:undeployModel`, why: 'takes models off an endpoint other apps use' },
  { methods: ['POST'], path: `${LOCATION}/endpoints/{endpoint}:mutateDeployedModel`, why: 'changes a deployed model other apps use' },
];

/**
 * The inference methods, the only routes open by default (an allow-list: everything else under `projects/`, such as
 * `persistentResources`, `notebookRuntimes` or `nasJobs`, creates billed compute or reads project data).
 * - A publisher model (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.publishers.models):
 *   generateContent, streamGenerateContent, countTokens, computeTokens, predict, rawPredict, streamRawPredict,
 *   serverStreamingPredict; v1beta1 adds embedContent.
 * - A deployed endpoint (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.endpoints): the same
 *   calls, plus the OpenAI-compatible chat completions of
 *   https://cloud.google.com/vertex-ai/generative-ai/docs/migrate/openai/overview (`endpoints/openapi/chat/completions`).
 */
const INFERENCE_METHODS = ['generateContent', 'streamGenerateContent', 'countTokens', 'computeTokens', 'predict', 'rawPredict', 'streamRawPredict', 'serverStreamingPredict', 'embedContent'];
const INFERENCE_ROUTES = [
  ...INFERENCE_METHODS.map((method) => `projects/*/locations/*/publishers/*/models/*:${method}`),
  ...INFERENCE_METHODS.map((method) => `projects/*/locations/*/endpoints/*:${method}`),
  'projects/*/locations/*/endpoints/openapi/chat/completions',
];

/**
 * The project a request names (`/{version}/projects/{project}/…`, decoded as Google decodes it) must be the service
 * account's own (`project_id` of the key file): a key granted roles in other projects must not reach them through the
 * gateway. Checked before any token is minted.
 */
function assertOwnProject(path: string, account: ServiceAccount): void {
  let decoded = path.split('?', 1)[0]!;
  for (let round = 0; round < 4; round += 1) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      break;
    }
    if (next === decoded) break;
    decoded = next;
  }
  const project = /^\/[^/]+\/projects\/([^/]+)(?:\/|$)/.exec(decoded)?.[1];
  if (typeof account.project_id !== 'string' || account.project_id === '' || project !== account.project_id) {
    throw new GatewayError('invalidRequest', "Vertex AI calls must name the service account's own project (projects/{project_id}/…).", { status: 400, reason: 'route_not_allowed' });
  }
}

const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  project_id?: string;
}

const tokens = new Map<string, Promise<{ token: string; expiresAt: number }>>();

function parseServiceAccount(secret: ResolvedSecret): ServiceAccount {
  let parsed: Partial<ServiceAccount>;
  try {
    parsed = JSON.parse(secret.value.reveal()) as Partial<ServiceAccount>;
  } catch {
    throw new Error('the vertex-ai secret must be a service-account JSON key');
  }
  if (typeof parsed.client_email !== 'string' || typeof parsed.private_key !== 'string') {
    throw new Error('the vertex-ai service-account key lacks client_email or private_key');
  }
  return parsed as ServiceAccount;
}

async function mintToken(account: ServiceAccount, tokenUrl: string): Promise<{ token: string; expiresAt: number }> {
  const key = await importPKCS8(account.private_key, 'RS256');
  const assertion = await new SignJWT({ scope: SCOPE })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(account.private_key_id ? { kid: account.private_key_id } : {}) })
    .setIssuer(account.client_email)
    .setSubject(account.client_email)
    .setAudience(tokenUrl)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(key);
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw new Error(`the OAuth token endpoint answered ${response.status}`);
  const body = (await response.json()) as { access_token?: string; expires_in?: number };
  if (typeof body.access_token !== 'string') throw new Error('the OAuth token endpoint answered without access_token');
  return { token: body.access_token, expiresAt: Date.now() + (body.expires_in ?? 3600) * 1000 };
}

/** An access token for the account, shared by concurrent requests and refreshed a minute before it expires. */
async function accessToken(account: ServiceAccount): Promise<string> {
  const tokenUrl = process.env.TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL ?? GOOGLE_TOKEN_URL;
  const cacheKey = `${tokenUrl}\u0000${account.client_email}\u0000${account.private_key_id ?? ''}`;
  const cached = tokens.get(cacheKey);
  if (cached) {
    const settled = await cached.catch(() => undefined);
    if (settled && settled.expiresAt - 60_000 > Date.now()) return settled.token;
  }
  const pending = mintToken(account, tokenUrl);
  tokens.set(cacheKey, pending);
  pending.catch(() => tokens.delete(cacheKey));
  return (await pending).token;
}

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'vertex-ai',
  name: 'Google Vertex AI',
  baseUrl: 'https://aiplatform.googleapis.com',
  versions: { v1: '/v1', v1beta1: '/v1beta1' },
  auth: { kind: 'computed' },
  async authorize(draft: UpstreamRequestDraft, secret: ResolvedSecret) {
    const account = parseServiceAccount(secret);
    assertOwnProject(draft.path, account);
    draft.headers.authorization = `Bearer ${await accessToken(account)}`;
  },
  capabilities: ['chat', 'embeddings', 'image'],
  streaming: ['sse', 'json-array'],
  routes: { methods: ['GET', 'POST'], allow: INFERENCE_ROUTES, account: ACCOUNT },
  // Google APIs also take an API key (`x-goog-api-key`, `?key=`), an OAuth token (`?access_token=`) and a billing
  // project (`x-goog-user-project`) from the caller (https://cloud.google.com/docs/authentication/api-keys-use).
  clientCredentials: { headers: ['x-goog-api-key', 'x-goog-user-project'], queryParameters: ['key', 'access_token'] },
  tenant: { baseUrl: 'optional', allowedHosts: ['aiplatform.googleapis.com', '*-aiplatform.googleapis.com'], pathPattern: '^$' },
  notes: "Secret: a service-account JSON key; calls must name its own project. Inference methods only. Paths: projects/{p}/locations/{r}/publishers/{pub}/models/{m}:streamGenerateContent?alt=sse.",
  usage: GEMINI_USAGE,
  // The same request body as Gemini's (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference#generationconfig):
  // the model is in the path, the limit is `generationConfig.maxOutputTokens`.
  requestFields: [
    { methods: ['POST'], path: 'projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:generateContent', outputLimit: ['generationConfig.maxOutputTokens'], defaultOutputTokens: 8192 },
    { methods: ['POST'], path: 'projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:streamGenerateContent', outputLimit: ['generationConfig.maxOutputTokens'], defaultOutputTokens: 8192 },
    // The OpenAI-compatible chat completions name the model in the body (`google/gemini-2.0-flash`,
    // https://cloud.google.com/vertex-ai/generative-ai/docs/migrate/openai/overview).
    { methods: ['POST'], path: 'projects/{project}/locations/{location}/endpoints/openapi/chat/completions', model: 'model', outputLimit: ['max_completion_tokens', 'max_tokens'], defaultOutputTokens: 4096, stream: 'stream' },
  ],
  // A publisher model is named in the path, `…/publishers/{publisher}/models/{model}:{method}`, for every method (Google's
  // generateContent, Anthropic's rawPredict and streamRawPredict…:
  // https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.publishers.models). A deployed endpoint
  // (`…/endpoints/{endpoint}:{method}`) is the model the operator deployed there: the allow-list names its endpoint id,
  // as an Azure deployment is named by its deployment name.
  pathModels: [
    { methods: ['POST'], path: 'projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:*', doc: 'https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.publishers.models' },
    { methods: ['POST'], path: 'projects/{project}/locations/{location}/endpoints/{model}:*', doc: 'https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.endpoints' },
  ],
});
