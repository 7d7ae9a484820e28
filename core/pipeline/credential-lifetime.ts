/**
 * Clamps the lifetime a credential-minting route asks for to the app's `credentialTtlSeconds` (protocol.md,
 * "Credentials minted for the device"), where the manifest says the provider takes one (`CredentialRoute.lifetime`).
 * A request that names no lifetime gets the app's ceiling written in: a provider's own default is often longer (OpenAI
 * client secrets default to 10 minutes, AssemblyAI streaming tokens to what the caller asks, Gemini tokens to 30 minutes).
 */
import { GatewayError, type CredentialLifetime, type ProxyContext } from '../contract';
import { readRequestBody } from './request-body';

/** The query with `parameter` set to at most `ceiling` seconds (added when absent). */
export function clampQueryLifetime(query: string, parameter: string, ceiling: number): string {
  const params = new URLSearchParams(query);
  const asked = Number(params.get(parameter));
  params.set(parameter, String(Number.isFinite(asked) && asked > 0 ? Math.min(Math.floor(asked), ceiling) : ceiling));
  return params.toString();
}

/** Sets a dotted member, creating the objects on its way. */
function setMember(document: Record<string, unknown>, dotted: string, value: unknown): void {
  const names = dotted.split('.');
  let current = document;
  for (const name of names.slice(0, -1)) {
    const next = current[name];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) current[name] = {};
    current = current[name] as Record<string, unknown>;
  }
  current[names.at(-1)!] = value;
}

function getMember(document: Record<string, unknown>, dotted: string): unknown {
  let current: unknown = document;
  for (const name of dotted.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[name];
  }
  return current;
}

/**
 * Reads the JSON body, clamps the lifetime member and leaves the rewritten body in `context.requestBody`. An empty body
 * becomes `{}` with the member set; a body that is not a JSON object is refused (`invalidRequest`, `invalid_body`): the
 * gateway will not forward a mint whose lifetime it cannot bound.
 */
export async function clampBodyLifetime(context: ProxyContext, lifetime: Exclude<CredentialLifetime, { kind: 'query' }>, ceiling: number, maxBodyBytes: number): Promise<void> {
  const body = await readRequestBody(context, maxBodyBytes);
  let document: Record<string, unknown> = {};
  if (body.length > 0) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new GatewayError('invalidRequest', 'A credential-minting request must carry a JSON object body.', { status: 400, reason: 'invalid_body' });
    }
    document = parsed as Record<string, unknown>;
  }
  const now = Date.now();
  if (lifetime.kind === 'body-seconds') {
    const asked = Number(getMember(document, lifetime.member));
    setMember(document, lifetime.member, Number.isFinite(asked) && asked > 0 ? Math.min(Math.floor(asked), ceiling) : ceiling);
  } else {
    const asked = Date.parse(String(getMember(document, lifetime.member)));
    const latest = now + ceiling * 1000;
    setMember(document, lifetime.member, new Date(Number.isFinite(asked) && asked > now ? Math.min(asked, latest) : latest).toISOString());
  }
  const rewritten = Buffer.from(JSON.stringify(document));
  context.requestBody = rewritten;
  context.outcome.bytesIn = rewritten.length;
}
