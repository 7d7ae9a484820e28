/**
 * Model policy (the app's or the user's profile's `modelPolicy`, per provider): models outside the allow-list are
 * refused (`invalidRequest`, reason `model_not_allowed`) before anything reaches the provider, an alias is replaced by its
 * model, and the output-token limit is lowered to the cap (or set to it when the request names none).
 *
 * Which members of the JSON body name the model and the output limit is declared per route in the provider's manifest
 * (`requestFields`); core never knows them. The body is read and rewritten only when a policy exists for the provider
 * and the route declares its fields; everything else goes through byte for byte, streamed. A rewritten body is
 * serialized again (`JSON.stringify`): member order is kept, insignificant whitespace is not.
 */
import { GatewayError, type AppSettings, type ModelPolicy, type ProviderManifest, type ProxyContext, type RequestBodyFields } from '../contract';
import { readRequestBody } from './request-body';
import { compileRoutePattern, normalizeForMatching } from './route-class';

interface CompiledFields {
  readonly fields: RequestBodyFields;
  readonly pattern: RegExp;
}

const compiled = new WeakMap<ProviderManifest, CompiledFields[]>();

/** The declared body fields of the route `method providerPath`, or undefined. */
export function requestFieldsFor(manifest: ProviderManifest, method: string, providerPath: string): RequestBodyFields | undefined {
  const declared = manifest.requestFields;
  if (!declared?.length) return undefined;
  let routes = compiled.get(manifest);
  if (!routes) {
    routes = declared.map((fields) => ({ fields, pattern: compileRoutePattern(fields.path) }));
    compiled.set(manifest, routes);
  }
  const path = normalizeForMatching(providerPath);
  if (path === undefined) return undefined;
  const upper = method.toUpperCase();
  return routes.find((route) => route.fields.methods.includes(upper as never) && route.pattern.test(path))?.fields;
}

function notAllowed(model: unknown, slug: string): GatewayError {
  const named = typeof model === 'string' ? `"${model.slice(0, 100)}"` : 'no model';
  return new GatewayError('invalidRequest', `This app does not allow ${named} with ${slug}.`, { reason: 'model_not_allowed' });
}

/** Reads a dotted member. */
function readMember(body: Record<string, unknown>, path: string): unknown {
  let value: unknown = body;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Writes a dotted member, creating the objects on the way. */
function writeMember(body: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let target = body;
  for (const part of parts.slice(0, -1)) {
    const next = target[part];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) target[part] = {};
    target = target[part] as Record<string, unknown>;
  }
  target[parts.at(-1)!] = value;
}

/**
 * Applies `policy` to a parsed body: refuses a model outside the allow-list, replaces an alias, clamps the output limit.
 * Returns true when it changed the body. Exported for realtime frames that name a model.
 */
export function applyPolicyToBody(body: Record<string, unknown>, policy: ModelPolicy, fields: Pick<RequestBodyFields, 'model' | 'outputLimit'>, slug: string): boolean {
  let changed = false;
  if (fields.model !== undefined && (policy.allow || policy.aliases)) {
    let model = readMember(body, fields.model);
    const target = typeof model === 'string' && policy.aliases && Object.prototype.hasOwnProperty.call(policy.aliases, model) ? policy.aliases[model] : undefined;
    if (target !== undefined) {
      writeMember(body, fields.model, target);
      model = target;
      changed = true;
    }
    if (policy.allow && (typeof model !== 'string' || !policy.allow.includes(model))) throw notAllowed(model, slug);
  }
  if (policy.maxOutputTokens !== undefined && fields.outputLimit?.length) {
    const present = fields.outputLimit.find((member) => readMember(body, member) !== undefined);
    const asked = present === undefined ? undefined : readMember(body, present);
    if (present === undefined) {
      writeMember(body, fields.outputLimit[0]!, policy.maxOutputTokens);
      changed = true;
    } else if (typeof asked !== 'number' || asked > policy.maxOutputTokens) {
      writeMember(body, present, policy.maxOutputTokens);
      changed = true;
    }
  }
  return changed;
}

/**
 * The policy for this request's provider under `settings`: reads the body (only then), checks and rewrites it; the
 * rewritten bytes become the request body `injectKey` and `forward` send (with their own `Content-Length`).
 */
export function enforceModelPolicy(context: ProxyContext, settings: AppSettings, maxBodyBytes: number): void | Promise<void> {
  const policy = settings.modelPolicy?.[context.provider.slug];
  if (!policy) return;
  const fields = requestFieldsFor(context.provider, context.request.method ?? 'GET', context.route.providerPath);
  if (!fields) return;
  return readRequestBody(context, maxBodyBytes).then((raw) => {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new GatewayError('invalidRequest', 'This app has a model policy for this provider: the request body must be JSON.', { reason: 'body_not_json' });
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new GatewayError('invalidRequest', 'This app has a model policy for this provider: the request body must be a JSON object.', { reason: 'body_not_json' });
    }
    if (!applyPolicyToBody(body as Record<string, unknown>, policy, fields, context.provider.slug)) return;
    const rewritten = Buffer.from(JSON.stringify(body), 'utf8');
    context.requestBody = rewritten;
    context.outcome.bytesIn = rewritten.length;
  });
}
