/**
 * Route classes (providers.md, "Route classes"): every route a provider allows is `inference` (open by default) or
 * `account` (closed unless the operator opens the provider's account routes for an app). An app may also be given extra
 * routes a manifest does not know yet. Core decides from the manifest's data and the app's settings only; it never
 * names a provider.
 *
 * Decision order for one request (after the path passed every safety rule of `proxy-path.ts`):
 * 1. `deny` refuses, always;
 * 1a. a WebSocket upgrade is admitted on a declared realtime route only (class `realtime`); a credential-minting route
 *    is admitted only when the app opened this provider's credential routes (class `credential`);
 * 2. an extra route of the app matching method and pattern allows (the operator named that exact route);
 * 3. an `account` entry matching method and pattern allows only when the app opened this provider's account routes;
 * 4. otherwise `methods` and `allow` decide, and the route is `inference`.
 */
import { GatewayError, type AccountRoute, type AppSettings, type CredentialRoute, type HttpMethod, type RealtimeRoute, type RoutePolicy } from '../contract';
import { escapeRegExp, matchesPrefix } from './proxy-path';
import { decodedForms, upstreamViews, type VersionRoot } from './upstream-views';
import { processMap } from './process-caches';

/** Methods a pattern may name. */
export const ROUTE_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A segment of a route pattern: letters, digits, `-._~:@+,=`, `*` wildcards and `{name}` placeholders. */
const PATTERN_SEGMENT = /^(?:[A-Za-z0-9._~:@+,=*-]|\{[A-Za-z_][A-Za-z0-9_]{0,39}\})+$/;

/**
 * Checks a route pattern (`files/{file_id}/content`, `vector_stores/**`) and returns a problem, or null when it is
 * well-formed. The rules of provider paths apply: no empty, `.` or `..` segment, no leading `/`, no backslash, no
 * control character, no scheme; `**` only as the last segment.
 */
export function routePatternProblem(pattern: string): string | null {
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > 300) return 'must be 1 to 300 characters';
  const segments = pattern.split('/');
  for (const [index, segment] of segments.entries()) {
    if (segment === '**') {
      if (index !== segments.length - 1) return '"**" may only be the last segment';
      continue;
    }
    if (segment === '' ) return 'must not start with "/", end with "/" or contain "//"';
    if (segment === '.' || segment === '..' || /^\.+$/.test(segment.replace(/\*/g, ''))) return 'must not contain "." or ".." segments';
    if (segment.includes('**')) return '"**" must be a whole segment';
    if (!PATTERN_SEGMENT.test(segment)) return `segment "${segment}" may hold letters, digits, - . _ ~ : @ + , =, "*" and {name} only`;
  }
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(pattern)) return 'must not carry a URL scheme';
  return null;
}

/** Compiles a checked pattern into an anchored, case-insensitive expression over a normalized path. */
export function compileRoutePattern(pattern: string): RegExp {
  const problem = routePatternProblem(pattern);
  if (problem) throw new Error(`route pattern "${pattern}" ${problem}`);
  const segments = pattern.split('/');
  const rest = segments.at(-1) === '**';
  const fixed = (rest ? segments.slice(0, -1) : segments).map((segment) =>
    segment
      .replace(/\{[A-Za-z_][A-Za-z0-9_]*\}/g, '*')
      .split('*')
      .map(escapeRegExp)
      .join('[^/]*'),
  );
  const body = fixed.join('/');
  const tail = rest ? (fixed.length ? '(?:/.*)?' : '.*') : '';
  return new RegExp(`^${body}${tail}$`, 'i');
}

/**
 * The path as route patterns see it (account, credential, realtime and extra routes, declared body fields): decoded
 * once (as the upstream will), each segment without `;…` matrix parameters (some servers drop them), without leading or
 * trailing `/`. Undefined when the path does not decode.
 */
export function normalizeForMatching(providerPath: string): string | undefined {
  // Most paths hold nothing to undo: no escape, no matrix parameter, no slash at either end.
  if (!NEEDS_NORMALIZING.test(providerPath)) return providerPath;
  let decoded: string;
  try {
    decoded = decodeURIComponent(providerPath);
  } catch {
    return undefined;
  }
  return decoded
    .split('/')
    .map((segment) => segment.split(';', 1)[0]!)
    .join('/')
    .replace(/^\/+|\/+$/g, '');
}
const NEEDS_NORMALIZING = /[%;]|^\/|\/$/;

/** An account route with its compiled pattern. */
export interface CompiledAccountRoute {
  readonly route: AccountRoute;
  readonly methods: ReadonlySet<string>;
  readonly pattern: RegExp;
}

/** What the policy needs to know about a provider. */
export interface RouteTable {
  readonly slug: string;
  readonly policy: RoutePolicy | undefined;
  readonly methods: ReadonlySet<string>;
  readonly accountRoutes: readonly CompiledAccountRoute[];
  /**
   * The declared version roots (upstream-views.ts). Present: deny and account patterns are checked on the upstream
   * path as seen from every version root on the same host, so a version mapped to a parent path cannot step around them.
   */
  readonly roots?: readonly VersionRoot[];
  /** The manifest's credential-minting routes, compiled (absent: none). */
  readonly credentialRoutes?: readonly CompiledCredentialRoute[];
  /** The manifest's realtime routes, compiled (absent: none). */
  readonly realtimeRoutes?: readonly CompiledRealtimeRoute[];
}

/** A credential route with its compiled pattern. */
export interface CompiledCredentialRoute {
  readonly route: CredentialRoute;
  readonly methods: ReadonlySet<string>;
  readonly pattern: RegExp;
}

/** A realtime route with its compiled pattern. */
export interface CompiledRealtimeRoute {
  readonly route: RealtimeRoute;
  readonly pattern: RegExp;
}

export function compileCredentialRoutes(routes: readonly CredentialRoute[] | undefined): CompiledCredentialRoute[] {
  return (routes ?? []).map((route) => ({ route, methods: new Set(route.methods), pattern: compileRoutePattern(route.path) }));
}

export function compileRealtimeRoutes(routes: readonly RealtimeRoute[] | undefined): CompiledRealtimeRoute[] {
  return (routes ?? []).map((route) => ({ route, pattern: compileRoutePattern(route.path) }));
}

/** The realtime route a provider path opens, or undefined (the path normalized as for account routes). */
export function findRealtimeRoute(routes: readonly CompiledRealtimeRoute[], providerPath: string): CompiledRealtimeRoute | undefined {
  const path = normalizeForMatching(providerPath);
  return path === undefined ? undefined : routes.find((entry) => entry.pattern.test(path));
}

/** The credential route `method providerPath` names, or undefined. */
export function findCredentialRoute(routes: readonly CompiledCredentialRoute[], method: string, providerPath: string): CompiledCredentialRoute | undefined {
  const path = normalizeForMatching(providerPath);
  return path === undefined ? undefined : routes.find((entry) => entry.methods.has(method) && entry.pattern.test(path));
}

export function compileAccountRoutes(routes: readonly AccountRoute[] | undefined): CompiledAccountRoute[] {
  return (routes ?? []).map((route) => ({ route, methods: new Set(route.methods), pattern: compileRoutePattern(route.path) }));
}

/** Compiled extra-route patterns, cached by pattern text (settings change rarely; patterns are few). */
const compiledExtra = processMap<string, RegExp | null>();
function extraPattern(path: string): RegExp | null {
  let found = compiledExtra.get(path);
  if (found === undefined) {
    found = routePatternProblem(path) === null ? compileRoutePattern(path) : null;
    if (compiledExtra.size < 10_000) compiledExtra.set(path, found);
  }
  return found;
}

/** The class a request was admitted under. */
export type RouteClass = 'inference' | 'account' | 'extra' | 'credential' | 'realtime';

function notAllowed(message: string): GatewayError {
  return new GatewayError('invalidRequest', message, { status: 400, reason: 'route_not_allowed' });
}

function methodNotAllowed(message: string): GatewayError {
  return new GatewayError('invalidRequest', message, { status: 405, reason: 'method_not_allowed' });
}

/**
 * Decides whether `method providerPath` may go to the provider for an app with `settings`.
 *
 * @returns the route's class when admitted.
 * @throws GatewayError `invalidRequest`: 400 `route_not_allowed` (denied, outside the allow-list, or a closed account
 *   route), 405 `method_not_allowed` (a method the provider never allows).
 */
export function decideRoute(
  table: RouteTable,
  settings: Pick<AppSettings, 'openAccountRoutes' | 'extraRoutes'> & Partial<Pick<AppSettings, 'openCredentialRoutes'>>,
  method: string,
  providerPath: string,
  version?: string,
  upgrade = false,
): RouteClass {
  const shown = `${method} ${providerPath || '/'}`;
  // Every decoded form the upstream may see (once, and fully for servers that decode twice), first the once-decoded one.
  const forms = decodedForms(providerPath);
  if (forms === undefined || forms.length === 0) throw notAllowed(`${shown} is not an allowed route of provider "${table.slug}".`);
  const path = forms[0]!;
  let decoded = providerPath;
  try {
    decoded = decodeURIComponent(providerPath);
  } catch {
    /* decodedForms already refused */
  }
  // The same upstream call as seen from every declared version root (a version mapped to a parent path).
  const views: string[] = [];
  for (const form of forms) {
    for (const view of table.roots && version !== undefined ? upstreamViews(table.roots, version, form) : [form]) if (!views.includes(view)) views.push(view);
  }
  // Deny is absolute: checked on the decoded path, and on each view in its normalized, lower-case form.
  const denied = (prefix: string): boolean => {
    const low = prefix.toLowerCase();
    return matchesPrefix(decoded, prefix) || views.some((view) => matchesPrefix(view.toLowerCase(), low) || matchesPrefix(`${view.toLowerCase()}/`, low));
  };
  if (table.policy?.deny?.some(denied)) throw notAllowed(`${shown} is refused for provider "${table.slug}".`);
  // A WebSocket upgrade opens a declared realtime route and nothing else; a realtime path is never an HTTP route.
  if (upgrade) {
    if (method === 'GET' && table.realtimeRoutes?.some((entry) => entry.pattern.test(path))) return 'realtime';
    throw notAllowed(`${shown} is not a realtime route of provider "${table.slug}".`);
  }
  const credential = table.credentialRoutes?.find((entry) => entry.methods.has(method) && views.some((view) => entry.pattern.test(view)));
  if (credential) {
    if (settings.openCredentialRoutes?.includes(table.slug)) return 'credential';
    throw notAllowed(
      `${shown} mints a ${table.slug} credential for the device, which would then bypass the gateway's limits, budgets and revocation until it expires; it is closed unless the operator opens ${table.slug} credential routes for this app.`,
    );
  }
  for (const extra of settings.extraRoutes ?? []) {
    if (extra.provider === table.slug && extra.methods.includes(method as HttpMethod) && extraPattern(extra.path)?.test(path)) return 'extra';
  }
  const account = table.accountRoutes.find((entry) => entry.methods.has(method) && views.some((view) => entry.pattern.test(view)));
  if (account) {
    if (settings.openAccountRoutes?.includes(table.slug)) return 'account';
    throw notAllowed(
      `${shown} is an account route of provider "${table.slug}" (${account.route.why}); it is closed unless the operator opens ${table.slug} account routes for this app.`,
    );
  }
  if (!table.methods.has(method)) throw methodNotAllowed(`${shown} is not an allowed route of provider "${table.slug}".`);
  // The allow-list must hold for every decoded form: a path allowed once decoded but not twice is not allowed.
  const allow = table.policy?.allow;
  if (allow && !(allow.some((prefix) => matchesPrefix(decoded, prefix)) && forms.every((form) => allow.some((prefix) => matchesPrefix(form, prefix))))) {
    throw notAllowed(`${shown} is not an allowed route of provider "${table.slug}".`);
  }
  return 'inference';
}
