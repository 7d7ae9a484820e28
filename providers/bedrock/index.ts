/**
 * Amazon Bedrock runtime (https://docs.aws.amazon.com/bedrock/latest/APIReference/). Computed credentials: every request
 * is signed with AWS Signature Version 4 (service `bedrock`) over the method, host, path, query, headers and the SHA-256
 * of the body, so the gateway reads the (bounded) body before signing. Signing uses the `aws4` package.
 *
 * Secret: JSON `{"accessKeyId":"AKIA…","secretAccessKey":"…","sessionToken":"…"?,"region":"us-east-1"?}`. The host is
 * per region, from the secret record (`--base-url https://bedrock-runtime.eu-west-1.amazonaws.com`); without one it is
 * us-east-1. The signing region is read from that host. Streaming operations (`invoke-with-response-stream`, `converse-stream`) answer the AWS binary
 * event-stream (`application/vnd.amazon.eventstream`), passed through byte for byte.
 */
import aws4 from 'aws4';
import { BEDROCK_USAGE } from '../_shared';
import { PLUGIN_CONTRACT_VERSION, defineProvider, type ResolvedSecret, type UpstreamRequestDraft } from '../../core/contract';

interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  region?: string;
}

function parseCredentials(secret: ResolvedSecret): AwsCredentials {
  let parsed: Partial<AwsCredentials>;
  try {
    parsed = JSON.parse(secret.value.reveal()) as Partial<AwsCredentials>;
  } catch {
    throw new Error('the bedrock secret must be JSON with accessKeyId and secretAccessKey');
  }
  if (typeof parsed.accessKeyId !== 'string' || typeof parsed.secretAccessKey !== 'string') {
    throw new Error('the bedrock secret lacks accessKeyId or secretAccessKey');
  }
  return parsed as AwsCredentials;
}

/** The region: from the host (`bedrock-runtime.<region>.amazonaws.com`), else the secret's `region`. */
function regionOf(host: string, credentials: AwsCredentials): string {
  const match = /^bedrock-runtime\.([a-z0-9-]+)\.amazonaws\.com$/.exec(host);
  return match?.[1] ?? credentials.region ?? 'us-east-1';
}

export const manifest = defineProvider({
  contractVersion: PLUGIN_CONTRACT_VERSION,
  slug: 'bedrock',
  name: 'Amazon Bedrock',
  baseUrl: 'https://bedrock-runtime.us-east-1.amazonaws.com',
  versions: { v1: '' },
  auth: { kind: 'computed' },
  authorizeNeedsBody: true,
  authorize(draft: UpstreamRequestDraft, secret: ResolvedSecret) {
    const credentials = parseCredentials(secret);
    const host = new URL(draft.origin).host;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(draft.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    headers.host = host;
    const signed = aws4.sign(
      { host, method: draft.method, path: draft.path, service: 'bedrock', region: regionOf(new URL(draft.origin).hostname, credentials), headers, body: draft.body ?? '' },
      { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey, ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}) },
    );
    for (const [name, value] of Object.entries(signed.headers ?? {})) {
      if (value !== undefined) draft.headers[name.toLowerCase()] = String(value);
    }
  },
  capabilities: ['chat', 'embeddings', 'image'],
  streaming: ['aws-event-stream'],
  routes: { methods: ['POST'], allow: ['model/'] },
  // A client's own AWS credentials or signature parts (`x-amz-security-token`, `x-amz-date`, `x-amz-content-sha256`,
  // a presigned `X-Amz-Signature`…) are stripped before signing: the gateway never signs a client-supplied header.
  clientCredentials: { headerPrefixes: ['x-amz-'], queryParameterPrefixes: ['x-amz-'] },
  tenant: { baseUrl: 'optional', allowedHosts: ['bedrock-runtime.*.amazonaws.com', 'bedrock-runtime-fips.*.amazonaws.com'], pathPattern: '^$' },
  notes: 'Secret: JSON AWS credentials. Streams are AWS binary event-stream frames, passed through intact.',
  usage: BEDROCK_USAGE,
  // Converse and ConverseStream (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
  // the model is in the path, the limit is `inferenceConfig.maxTokens`. InvokeModel bodies are the model's own: Claude's
  // `max_tokens` (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html),
  // Llama's `max_gen_len`, Titan's `textGenerationConfig.maxTokenCount`.
  requestFields: [
    { methods: ['POST'], path: 'model/{model}/converse', outputLimit: ['inferenceConfig.maxTokens'], defaultOutputTokens: 4096 },
    { methods: ['POST'], path: 'model/{model}/converse-stream', outputLimit: ['inferenceConfig.maxTokens'], defaultOutputTokens: 4096 },
    { methods: ['POST'], path: 'model/{model}/invoke', outputLimit: ['max_tokens', 'max_gen_len', 'textGenerationConfig.maxTokenCount'], defaultOutputTokens: 4096 },
    { methods: ['POST'], path: 'model/{model}/invoke-with-response-stream', outputLimit: ['max_tokens', 'max_gen_len', 'textGenerationConfig.maxTokenCount'], defaultOutputTokens: 4096 },
  ],
  // Every runtime operation on a model names it in the path, `model/{modelId}/{operation}` (InvokeModel,
  // InvokeModelWithResponseStream, Converse, ConverseStream, CountTokens:
  // https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html). The id may be an ARN (an
  // inference profile, a provisioned model), sent percent-encoded in one segment (`arn%3Aaws%3A…%2F…`): the allow-list
  // names it decoded (a pattern of exactly one operation segment, so that the ARN's own `/` does not read as the end of
  // the id). Signing happens after the policy, over the path as rewritten.
  pathModels: [{ methods: ['POST'], path: 'model/{model}/*', doc: 'https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html' }],
});
