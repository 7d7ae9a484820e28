/**
 * Model policy on models named in the request PATH (the manifest's `pathModels`, see PathModelRoute): Gemini's
 * `models/{model}:generateContent`, Bedrock's `model/{modelId}/converse`, an Azure deployment. A model outside the
 * allow-list is refused (`model_not_allowed`, as for a body's model); an alias is replaced in the path before anything
 * else reads it: route classes (inject-key.ts), token reservations, signing (`authorize`) and the URL sent upstream all
 * see the rewritten path, which passes the path safety rules again.
 *
 * Only called when the app (or the user's profile) has an allow-list or aliases for the provider and the manifest
 * declares path models: every other request's path is not looked at here.
 *
 * The path is matched in each form a server may read it in, and every match is checked:
 * - segment by segment, each decoded once (a `%2F` stays inside its segment: Bedrock's ARN model ids);
 * - decoded whole, once and again until it no longer changes (a server that decodes `%2F` before routing, or twice);
 * each as seen below every declared version root on the same host (a version mapped to a parent path). Only the first
 * form maps back to the bytes sent, so an alias is replaced there; an alias found only in another form is refused (the
 * client spelled the path so that the gateway and the provider would read different models).
 */
import { GatewayError, type PathModelRoute, type ProviderManifest } from '../contract';
import { checkProviderPath, escapeRegExp } from './proxy-path';
import { routePatternProblem } from './route-class';
import { versionRoots, type VersionRoot } from './upstream-views';
import { ProcessWeakMap } from './process-caches';

/** One pattern segment: a literal (with `*` and `{name}` wildcards), `**`, or one holding a `{model}` placeholder. */
interface SegmentMatcher {
  /** Anchored, case-insensitive; a model segment has three groups: before, model, after. */
  readonly expression: RegExp;
  readonly model: boolean;
}

interface CompiledPathModel {
  readonly route: PathModelRoute;
  readonly methods: ReadonlySet<string>;
  readonly versions: ReadonlySet<string> | undefined;
  readonly segments: readonly SegmentMatcher[];
  /** The pattern ends in `**` (any number of further segments, none included). */
  readonly rest: boolean;
}

interface CompiledManifest {
  readonly routes: readonly CompiledPathModel[];
  readonly roots: readonly VersionRoot[];
}

const PLACEHOLDER = /\{[A-Za-z_][A-Za-z0-9_]*\}/g;
/** A literal piece of a pattern segment: `*` and other `{name}` placeholders match any run of characters. */
const literal = (piece: string) => piece.replace(PLACEHOLDER, '*').split('*').map(escapeRegExp).join('.*');

/**
 * Checks a path-model pattern; returns a problem or null. The route-pattern rules hold, with at least one `{model}`,
 * at most one per segment.
 */
export function pathModelPatternProblem(pattern: string): string | null {
  const problem = routePatternProblem(pattern);
  if (problem) return problem;
  const segments = pattern.split('/');
  if (!segments.some((segment) => segment.includes('{model}'))) return 'must hold a {model} placeholder';
  if (segments.some((segment) => segment.split('{model}').length > 2)) return 'may hold one {model} per segment';
  return null;
}

export function compilePathModel(route: PathModelRoute): CompiledPathModel {
  const problem = pathModelPatternProblem(route.path);
  if (problem) throw new Error(`path model pattern "${route.path}" ${problem}`);
  const parts = route.path.split('/');
  const rest = parts.at(-1) === '**';
  const segments = (rest ? parts.slice(0, -1) : parts).map((segment): SegmentMatcher => {
    const at = segment.indexOf('{model}');
    if (at === -1) return { expression: new RegExp(`^${literal(segment)}$`, 'i'), model: false };
    const before = literal(segment.slice(0, at));
    const after = literal(segment.slice(at + '{model}'.length));
    return { expression: new RegExp(`^(${before})(.+)(${after})$`, 'i'), model: true };
  });
  return { route, methods: new Set(route.methods), versions: route.versions ? new Set(route.versions) : undefined, segments, rest };
}

const compiledManifests = new ProcessWeakMap<ProviderManifest, CompiledManifest>();

function compiledFor(manifest: ProviderManifest): CompiledManifest {
  let compiled = compiledManifests.get(manifest);
  if (!compiled) {
    compiled = { routes: (manifest.pathModels ?? []).map(compilePathModel), roots: versionRoots(manifest.versions) };
    compiledManifests.set(manifest, compiled);
  }
  return compiled;
}

/** Where a match found the model: the segment index (in the matched form) and the decoded segment's three parts. */
interface Capture {
  readonly index: number;
  readonly before: string;
  readonly model: string;
  readonly after: string;
}

/** Matches `segments` against a compiled route; returns the captures, or undefined. */
function match(route: CompiledPathModel, segments: readonly string[]): Capture[] | undefined {
  const wanted = route.segments;
  if (route.rest ? segments.length < wanted.length : segments.length !== wanted.length) return undefined;
  const captures: Capture[] = [];
  for (let index = 0; index < wanted.length; index += 1) {
    const found = wanted[index]!.expression.exec(segments[index]!);
    if (!found) return undefined;
    if (wanted[index]!.model) captures.push({ index, before: found[1]!, model: found[2]!, after: found[3]! });
  }
  return captures;
}

function decodeOnce(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** The path's forms (segment arrays), the segment-aligned one first; trailing empty segments dropped. */
function pathForms(providerPath: string): string[][] | undefined {
  const trim = (segments: string[]) => {
    let end = segments.length;
    while (end > 0 && segments[end - 1] === '') end -= 1;
    return end === segments.length ? segments : segments.slice(0, end);
  };
  const aligned: string[] = [];
  for (const segment of providerPath.split('/')) {
    const decoded = decodeOnce(segment);
    if (decoded === undefined) return undefined;
    aligned.push(decoded);
  }
  const forms = [trim(aligned)];
  const seen = new Set([forms[0]!.join('\u0000')]);
  let current = providerPath;
  for (let round = 0; round < 4; round += 1) {
    const decoded = decodeOnce(current);
    if (decoded === undefined || decoded === current) break;
    const form = trim(decoded.split('/'));
    const key = form.join('\u0000');
    if (!seen.has(key)) {
      seen.add(key);
      forms.push(form);
    }
    current = decoded;
  }
  return forms;
}

/**
 * The views of a form below every version root on the requested version's host: [version name, segments, shift], where
 * a view's segment `i` is the form's segment `i + shift`.
 */
function views(roots: readonly VersionRoot[], version: string, form: readonly string[]): Array<[string, readonly string[], number]> {
  const own = roots.find((root) => root.name === version);
  const result: Array<[string, readonly string[], number]> = [[version, form, 0]];
  if (!own) return result;
  const ownPrefix = own.prefix === '' ? [] : own.prefix.slice(1).split('/');
  const full = [...ownPrefix, ...form];
  for (const root of roots) {
    if (root.host !== own.host || root === own) continue;
    const prefix = root.prefix === '' ? [] : root.prefix.slice(1).split('/');
    if (prefix.length > full.length || !prefix.every((segment, index) => full[index]!.toLowerCase() === segment)) continue;
    result.push([root.name, full.slice(prefix.length), prefix.length - ownPrefix.length]);
  }
  return result;
}

function notAllowed(model: string, slug: string): GatewayError {
  return new GatewayError('invalidRequest', `This app does not allow "${model.slice(0, 100)}" with ${slug}.`, { reason: 'model_not_allowed' });
}

/** A path segment's text, percent-encoded where a path segment needs it (`:` kept, as the providers write it). */
function encodeSegmentText(text: string): string {
  return encodeURIComponent(text).replace(/%3A/gi, ':');
}

/**
 * The model the request path names, as declared (no policy involved): for the usage rows of providers whose answers do
 * not name it. The path decoded segment by segment, below its own version; undefined when no declaration matches.
 */
export function pathModelOf(manifest: ProviderManifest, method: string, version: string, providerPath: string): string | undefined {
  const { routes } = compiledFor(manifest);
  const forms = pathForms(providerPath);
  if (forms === undefined) return undefined;
  const upper = method.toUpperCase();
  for (const route of routes) {
    if (!route.methods.has(upper) || (route.versions && !route.versions.has(version))) continue;
    const captures = match(route, forms[0]!);
    if (captures) return `${route.route.modelPrefix ?? ''}${captures.map((capture) => capture.model).join('/')}`;
  }
  return undefined;
}

/**
 * Applies a model policy's allow-list and aliases to the models the request path names. `check` is the body-model check
 * of model-policy.ts (`policyModel`: throws `model_not_allowed`, returns the model to send), passed in to keep one
 * definition of the rule. Returns the provider path to send:
 * the same string when nothing was replaced.
 *
 * @throws GatewayError `invalidRequest` `model_not_allowed`; `unsafe_path_*` when an alias makes an unsafe path.
 */
export function applyPolicyToPath(
  manifest: ProviderManifest,
  method: string,
  version: string,
  providerPath: string,
  check: (named: string) => string,
): string {
  const { routes, roots } = compiledFor(manifest);
  const forms = pathForms(providerPath);
  // A path that does not decode is refused by the path safety rules before this runs.
  if (forms === undefined) return providerPath;
  const upper = method.toUpperCase();
  /** Replacements in the aligned form: segment index → new segment text. */
  const replaced = new Map<number, string>();
  /** Models the aligned form named and their replacements: another form naming the same model is covered by the rewrite. */
  const rewritten = new Map<string, string>();
  forms.forEach((form, formIndex) => {
    for (const [viewVersion, segments, shift] of views(roots, version, form)) {
      for (const route of routes) {
        if (!route.methods.has(upper) || (route.versions && !route.versions.has(viewVersion))) continue;
        const captures = match(route, segments);
        if (!captures) continue;
        const prefix = route.route.modelPrefix ?? '';
        const named = `${prefix}${captures.map((capture) => capture.model).join('/')}`;
        const model = check(named);
        if (model === named) continue;
        if (formIndex !== 0) {
          if (rewritten.get(named) === model) continue;
          throw notAllowed(named, manifest.slug);
        }
        // The replacement must split into the captured segments: the same count, under the same prefix. A single
        // capture takes the whole model, a `/` in it percent-encoded (an ARN).
        if (!model.startsWith(prefix)) throw notAllowed(named, manifest.slug);
        const parts = captures.length === 1 ? [model.slice(prefix.length)] : model.slice(prefix.length).split('/');
        if (parts.length !== captures.length || parts.some((part) => part === '')) throw notAllowed(named, manifest.slug);
        captures.forEach((capture, index) => {
          const at = capture.index + shift;
          if (at < 0) throw notAllowed(named, manifest.slug);
          replaced.set(at, `${encodeSegmentText(capture.before)}${encodeSegmentText(parts[index]!)}${encodeSegmentText(capture.after)}`);
        });
        rewritten.set(named, model);
      }
    }
  });
  if (replaced.size === 0) return providerPath;
  const raw = providerPath.split('/');
  for (const [index, text] of replaced) raw[index] = text;
  const path = raw.join('/');
  // An alias is the operator's text: the path it makes must pass the same safety rules as a client's.
  return checkProviderPath(path);
}
