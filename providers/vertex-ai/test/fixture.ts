import { generateKeyPairSync } from 'node:crypto';
import { jsonResponse, sseResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

const TOKEN = 'ya29.conformance-access-token';
const model = 'projects/demo-project/locations/us-central1/publishers/google/models/gemini-2.0-flash';
const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] });

/** A fresh service-account key (RSA 2048), as Google issues them: JSON with a PKCS#8 private key. */
export function serviceAccountKey(): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return JSON.stringify({
    type: 'service_account',
    project_id: 'demo-project',
    private_key_id: 'conformance-key-1',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: 'tollgate@demo-project.iam.gserviceaccount.com',
    token_uri: 'https://attacker.invalid/token',
  });
}

export const fixture: ProviderFixture = {
  provenance: 'Vertex AI REST generateContent / streamGenerateContent (https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest) and OAuth 2.0 for service accounts (https://developers.google.com/identity/protocols/oauth2/service-account), checked 2026-11-22',
  secret: async () => serviceAccountKey(),
  baseUrl: 'https://us-central1-aiplatform.googleapis.com',
  call: { method: 'POST', version: 'v1', path: `${model}:generateContent`, contentType: 'application/json', body },
  response: jsonResponse({ candidates: [{ content: { role: 'model', parts: [{ text: 'Hello!' }] }, finishReason: 'STOP' }] }),
  stream: {
    call: { method: 'POST', version: 'v1', path: `${model}:streamGenerateContent`, query: 'alt=sse', contentType: 'application/json', body },
    response: sseResponse([['', { candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] } }] }], ['', { candidates: [{ content: { role: 'model', parts: [{ text: 'lo!' }] }, finishReason: 'STOP' }] }]]),
  },
  error: jsonResponse({ error: { code: 403, message: 'Permission denied on resource project demo-project.', status: 'PERMISSION_DENIED' } }, 403),
  auxiliaryRoutes: { '/oauth2/token': { access_token: TOKEN, expires_in: 3599, token_type: 'Bearer' } },
  environment: (upstreamUrl) => ({ TOLLGATE_PROVIDER_VERTEX_AI_TOKEN_URL: `${upstreamUrl}/oauth2/token` }),
  verifyComputedCredential(request) {
    if (request.headers.authorization !== `Bearer ${TOKEN}`) throw new Error(`expected the minted access token, got ${String(request.headers.authorization)}`);
  },
};
