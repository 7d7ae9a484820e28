/**
 * Model policy (the app's or the user's profile's `modelPolicy`, per provider): models outside the allow-list are
 * refused (`invalidRequest`, reason `model_not_allowed`) before anything reaches the provider, an alias is replaced by its
 * model, and the output-token limit is lowered to the cap (or set to it when the request names none).
 *
 * Which members of the JSON body name the model and the output limit is declared per route in the provider's manifest
 * (`requestFields`); core never knows them. The body is read and rewritten only when a policy exists for the provider
 * and the route declares its fields; everything else goes through byte for byte, streamed. A rewritten body is
 * serialized again (`JSON.stringify`): member order is kept, insignificant whitespace is not.
 *
 * A model the request PATH names (the manifest's `pathModels`: Gemini, Vertex AI, Bedrock, Azure deployments) is checked
 * the same way, an alias replaced in the path (path-model.ts); a request whose path and body both name a model must
 * satisfy the policy with both.
 *
 * A realtime upgrade has no body: the model its URL names (the route's declared query parameter) is checked here, an
 * alias replaced in the query sent upstream; its frames are checked as the session runs (core/realtime/frame-policy.ts).
 */
import { GatewayError, type AppSettings, type ModelPolicy, type ProviderManifest, type ProxyContext, type RequestBodyFields } from '../contract';
import { applyPolicyToPath } from './path-model';
import { isRealtimeUpgrade } from './realtime-upgrades';
import { readRequestBody } from './request-body';
import { compileRealtimeRoutes, compileRoutePattern, findRealtimeRoute, normalizeForMatching, type CompiledRealtimeRoute } from './route-class';
import { ProcessWeakMap } from './process-caches';

interface CompiledFields {
  readonly fields: RequestBodyFields;
  readonly pattern: RegExp;
}

const compiled = new ProcessWeakMap<ProviderManifest, CompiledFields[]>();

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
export function readMember(body: Record<string, unknown>, path: string): unknown {
  let value: unknown = body;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Writes a dotted member, creating the objects on the way. */
export function writeMember(body: Record<string, unknown>, path: string, value: unknown): void {
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
 * The model `named` stands for under `policy`: an alias is replaced by its model; a model outside the allow-list (or no
 * model, when there is one) throws `invalidRequest` `model_not_allowed`. `prefix` is a provider's resource-name prefix
 * (`models/`): a name is compared with and without it, and an alias's model is written with it when the name had it.
 * Returns the name to send (the same string when nothing was replaced).
 */
export function policyModel(named: unknown, policy: ModelPolicy, slug: string, prefix?: string): unknown {
  let model = named;
  const prefixed = prefix !== undefined && typeof model === 'string' && model.startsWith(prefix);
  const bare = prefixed ? (model as string).slice(prefix!.length) : model;
  const aliases = policy.aliases;
  if (aliases && typeof model === 'string') {
    if (Object.prototype.hasOwnProperty.call(aliases, model)) model = aliases[model];
    else if (prefixed && Object.prototype.hasOwnProperty.call(aliases, bare as string)) {
      const target = aliases[bare as string]!;
      model = target.startsWith(prefix!) ? target : `${prefix!}${target}`;
    }
  }
  const allow = policy.allow;
  if (allow) {
    if (typeof model !== 'string') throw notAllowed(named, slug);
    const allowed = allow.includes(model) || (prefix !== undefined && model.startsWith(prefix) && allow.includes(model.slice(prefix.length)));
    if (!allowed) throw notAllowed(named, slug);
  }
  return model;
}

/**
 * Lowers every present output-limit member above `max` (or not a number: OpenAI's `"inf"`) to `max`, and sets the
 * first member to `max` when none is present. Every present one, not just the first: a body naming two of them must
 * not leave the provider a higher one to read. Returns true when it changed the body.
 */
export function clampOutputLimit(body: Record<string, unknown>, members: readonly string[], max: number): boolean {
  let changed = false;
  let present = false;
  for (const member of members) {
    const asked = readMember(body, member);
    if (asked === undefined) continue;
    present = true;
    if (typeof asked !== 'number' || asked > max) {
      writeMember(body, member, max);
      changed = true;
    }
  }
  if (!present && members.length !== 0) {
    writeMember(body, members[0]!, max);
    changed = true;
  }
  return changed;
}

/**
 * Applies `policy` to a parsed body: refuses a model outside the allow-list, replaces an alias, clamps the output limit.
 * Returns true when it changed the body.
 */
export function applyPolicyToBody(body: Record<string, unknown>, policy: ModelPolicy, fields: Pick<RequestBodyFields, 'model' | 'outputLimit'>, slug: string): boolean {
  let changed = false;
  if (fields.model !== undefined && (policy.allow || policy.aliases)) {
    const named = readMember(body, fields.model);
    const model = policyModel(named, policy, slug);
    if (model !== named) {
      writeMember(body, fields.model, model);
      changed = true;
    }
  }
  if (policy.maxOutputTokens !== undefined && fields.outputLimit?.length) {
    if (clampOutputLimit(body, fields.outputLimit, policy.maxOutputTokens)) changed = true;
  }
  return changed;
}

/** Decodes one component of a query string as a form does (`+` is a space); undefined when malformed. */
function decodeQueryComponent(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/**
 * Applies `policy` to every `parameter` of a raw query string (`model=gpt-realtime&x=1`): a model outside the allow-list
 * throws `model_not_allowed`, an alias is replaced by its model (percent-encoded); the other pairs keep their bytes.
 * Returns the query unchanged (the same string) when nothing was replaced. Every occurrence is checked, so a provider
 * that reads the first and one that reads the last see an allowed model alike. A query that names no model passes.
 */
export function applyPolicyToQuery(query: string, parameter: string, policy: ModelPolicy, slug: string): string {
  if (query === '' || (!policy.allow && !policy.aliases)) return query;
  let changed = false;
  const pairs = query.split('&').map((pair) => {
    const equals = pair.indexOf('=');
    const rawName = equals === -1 ? pair : pair.slice(0, equals);
    if ((decodeQueryComponent(rawName) ?? rawName) !== parameter) return pair;
    const named = equals === -1 ? '' : decodeQueryComponent(pair.slice(equals + 1));
    const model = policyModel(named, policy, slug);
    if (model === named) return pair;
    changed = true;
    return `${rawName}=${encodeURIComponent(model as string)}`;
  });
  return changed ? pairs.join('&') : query;
}

const realtimeRoutes = new ProcessWeakMap<ProviderManifest, CompiledRealtimeRoute[]>();

/**
 * A realtime upgrade (it has no body): the model its URL names, where the route declares the query parameter, is
 * checked, and an alias replaced in the query that `injectKey` sends upstream. Frames are checked once the session runs
 * (core/realtime/frame-policy.ts).
 */
function enforceUpgradeModel(context: ProxyContext, policy: ModelPolicy): void {
  let routes = realtimeRoutes.get(context.provider);
  if (!routes) {
    routes = compileRealtimeRoutes(context.provider.realtime);
    realtimeRoutes.set(context.provider, routes);
  }
  const parameter = findRealtimeRoute(routes, context.route.providerPath)?.route.model?.query;
  if (parameter === undefined) return;
  const query = applyPolicyToQuery(context.route.query, parameter, policy, context.provider.slug);
  if (query !== context.route.query) context.route = { ...context.route, query };
}

/** The models the request path names, where the manifest declares them (`pathModels`). */
function enforcePathModel(context: ProxyContext, policy: ModelPolicy): void {
  const slug = context.provider.slug;
  const route = context.route;
  const providerPath = applyPolicyToPath(context.provider, context.request.method ?? 'GET', route.version, route.providerPath, (named) => policyModel(named, policy, slug) as string);
  if (providerPath !== route.providerPath) context.route = { ...route, providerPath };
}

/**
 * The policy for this request's provider under `settings`: reads the body (only then), checks and rewrites it; the
 * rewritten bytes become the request body `injectKey` and `forward` send (with their own `Content-Length`).
 */
export function enforceModelPolicy(context: ProxyContext, settings: AppSettings, maxBodyBytes: number): void | Promise<void> {
  const policy = settings.modelPolicy?.[context.provider.slug];
  if (!policy) return;
  if (isRealtimeUpgrade(context.request)) return enforceUpgradeModel(context, policy);
  // A model named in the path (path-model.ts): checked, an alias replaced in the path everything after this reads.
  if (context.provider.pathModels !== undefined && (policy.allow || policy.aliases)) enforcePathModel(context, policy);
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
