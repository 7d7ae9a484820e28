/**
 * Parsing and checking of `/v1/proxy/{slug}/{version}/{provider_path}` (protocol.md, "Addresses").
 *
 * The provider path is joined to the provider's declared base URL as a string and never resolved with `new URL(path,
 * base)`: on Node 20, `//evil`, `\\evil`, `/\evil`, `http:evil` and a leading tab all move the host, and `%2e%2e` is
 * read as `..` (a known trap of URL resolution). So the path is checked after percent-decoding (repeatedly,
 * to catch double encoding), joined, and the result is asserted to keep the base's origin and path prefix.
 */
import { GatewayError, type ProxyRoute } from '../contract';
import { SLUG_PATTERN, VERSION_PATTERN } from '../registry/provider-registry';
import { processMap, processSet } from './process-caches';

/** Control characters (C0, DEL, C1). */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** A URL scheme at the start (`http:`, `javascript:`, `file:`). */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const MAX_DECODE_ROUNDS = 3;

/** `text` matched literally inside a regular expression (route and path patterns). */
export const escapeRegExp = (text: string): string => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

/** `code` is the stable reason suffix (docs/reference/errors.md), `what` the human description. */
function unsafe(code: string, what: string): GatewayError {
  return new GatewayError('invalidRequest', `The provider path is not allowed: ${what}.`, { reason: `unsafe_path_${code}` });
}

/** Checks one decoded form of the provider path. */
function checkDecoded(path: string): void {
  if (CONTROL.test(path)) throw unsafe('control_character', 'control character');
  if (path.includes('\\')) throw unsafe('backslash', 'backslash');
  // "@" in the first segment could read as userinfo to a join that forgot the slash; below it, it is part of a path
  // (RFC 3986 §3.3 allows it in a segment), and providers name versions with it (Anthropic models on Vertex AI,
  // `claude-sonnet-4@20250514`). The joined URL's origin is asserted either way (joinUpstreamUrl).
  const at = path.indexOf('@');
  if (at >= 0 && (at < path.indexOf('/') || !path.includes('/'))) throw unsafe('at_sign', '"@" in the first segment');
  if (path.includes('//')) throw unsafe('empty_segment', 'empty segment ("//")');
  if (path.startsWith('/')) throw unsafe('absolute_path', 'absolute path');
  if (SCHEME.test(path) || path.includes('://')) throw unsafe('url_scheme', 'URL scheme');
  for (const segment of path.split('/')) {
    if (segment === '..' || segment === '.') throw unsafe('dot_segment', 'dot segment');
    // A matrix parameter on a dot segment (`..;x`, `.;`): Tomcat, Jetty and some proxies strip `;…` and then resolve it.
    const bare = segment.split(';', 1)[0];
    if (bare !== segment && (bare === '..' || bare === '.' || bare === '')) throw unsafe('matrix_parameter', 'matrix parameter on a dot or empty segment');
  }
}

/**
 * Checks a provider path as the client sent it (percent-encoded). Returns it unchanged when safe.
 *
 * @throws GatewayError `invalidRequest` naming what was refused.
 */
export function checkProviderPath(raw: string): string {
  if (raw.includes('#')) throw unsafe('fragment', 'fragment');
  let current = raw;
  checkDecoded(current);
  for (let round = 0; round < MAX_DECODE_ROUNDS; round += 1) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(current);
    } catch {
      throw unsafe('malformed_encoding', 'malformed percent-encoding');
    }
    if (decoded === current) return raw;
    checkDecoded(decoded);
    current = decoded;
  }
  throw unsafe('nested_encoding', 'nested percent-encoding');
}

/**
 * Parses the part of the URL after `/v1/proxy` (e.g. `/openai/v1/chat/completions?x=1`).
 *
 * @throws GatewayError `invalidRequest` for a malformed route or an unsafe path, `providerNotFound` for a bad slug.
 */
export function parseProxyRoute(rest: string): ProxyRoute {
  // The result is a function of the text alone: an app calls the same few routes again and again.
  const known = parsedRoutes.get(rest);
  if (known !== undefined) return known;
  const route = parseRoute(rest);
  if (rest.length <= MAX_REMEMBERED_ROUTE_LENGTH) {
    if (parsedRoutes.size >= MAX_REMEMBERED_ROUTES) parsedRoutes.clear();
    parsedRoutes.set(rest, route);
  }
  return route;
}

/**
 * Routes that passed every check, by the text they were parsed from (frozen: shared by every request that sends the same
 * text). Refusals are not kept. Bounded in count and in key length; when full it starts again, so a flood of distinct
 * URLs costs only the parse it would cost anyway.
 */
const parsedRoutes = processMap<string, ProxyRoute>();
const MAX_REMEMBERED_ROUTES = 4096;
const MAX_REMEMBERED_ROUTE_LENGTH = 512;

function parseRoute(rest: string): ProxyRoute {
  if (CONTROL.test(rest)) throw unsafe('control_character', 'control character');
  const queryStart = rest.indexOf('?');
  const pathname = queryStart < 0 ? rest : rest.slice(0, queryStart);
  const query = queryStart < 0 ? '' : rest.slice(queryStart + 1);
  const secondSlash = pathname.indexOf('/', 1);
  const thirdSlash = secondSlash < 0 ? -1 : pathname.indexOf('/', secondSlash + 1);
  if (!pathname.startsWith('/') || secondSlash < 0) {
    throw new GatewayError('invalidRequest', 'Use /v1/proxy/{provider}/{version}/{path}.', { status: 404, reason: 'malformed_route' });
  }
  const slug = pathname.slice(1, secondSlash);
  const version = thirdSlash < 0 ? pathname.slice(secondSlash + 1) : pathname.slice(secondSlash + 1, thirdSlash);
  const providerPath = thirdSlash < 0 ? '' : pathname.slice(thirdSlash + 1);
  if (!SLUG_PATTERN.test(slug)) throw new GatewayError('providerNotFound', 'No provider has that name.', { reason: 'bad_slug' });
  if (!VERSION_PATTERN.test(version)) throw new GatewayError('providerNotFound', `Provider "${slug}" has no version with that name.`, { reason: 'bad_version' });
  if (query.includes('#')) throw unsafe('fragment', 'fragment');
  // The check is a function of the path alone: one that passed is remembered (bounded), refusals are not.
  if (!safePaths.has(providerPath)) {
    checkProviderPath(providerPath);
    if (safePaths.size < MAX_REMEMBERED_PATHS) safePaths.add(providerPath);
  }
  return Object.freeze({ slug, version, providerPath, query });
}

/** Provider paths that passed {@link checkProviderPath}. */
const safePaths = processSet<string>();
const MAX_REMEMBERED_PATHS = 10_000;

/** Whole-segment prefix match: `audio/` matches `audio/speech`; `models` matches `models` and `models/x` (and `models:x`). */
export function matchesPrefix(path: string, prefix: string): boolean {
  if (prefix.includes('*')) return matchesWildcardPrefix(path, prefix);
  if (prefix.endsWith('/')) return path.startsWith(prefix);
  return path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}:`);
}

/**
 * As {@link matchesPrefix}, where a `*` segment of the prefix matches any one non-empty segment (`*` + `/` + `*`), and a
 * `*` inside a segment matches part of one segment (`models/*:generateContent`).
 */
function matchesWildcardPrefix(path: string, prefix: string): boolean {
  const trailing = prefix.endsWith('/');
  const wanted = (trailing ? prefix.slice(0, -1) : prefix).split('/');
  const segments = path.split('/');
  if (segments.length < wanted.length || (trailing && segments.length === wanted.length)) return false;
  return wanted.every((want, index) => {
    const have = segments[index]!;
    if (want === '*') return have !== '';
    // A `*` inside a segment (`*:generateContent`) matches a non-empty run of that one segment's characters.
    if (want.includes('*')) return segmentGlob(want).test(have);
    return have === want || (!trailing && index === wanted.length - 1 && have.startsWith(`${want}:`));
  });
}

const segmentGlobs = processMap<string, RegExp>();
/** A prefix segment with `*` inside, as an anchored expression (cached: prefixes come from manifests, few). */
function segmentGlob(want: string): RegExp {
  let glob = segmentGlobs.get(want);
  if (!glob) {
    glob = new RegExp(`^${want.split('*').map(escapeRegExp).join('[^/]+')}$`);
    if (segmentGlobs.size < 1000) segmentGlobs.set(want, glob);
  }
  return glob;
}

/**
 * Joins base URL, version prefix, provider path and query as strings, then asserts that the result kept the base's
 * origin and path prefix.
 */
export function joinUpstreamUrl(baseUrl: string, versionPrefix: string, providerPath: string, query: string): { origin: string; path: string } {
  let base = parsedBases.get(baseUrl);
  if (!base) {
    const url = new URL(baseUrl);
    base = { origin: url.origin, pathname: url.pathname.replace(/\/$/, '') };
    if (parsedBases.size < 10_000) parsedBases.set(baseUrl, base);
  }
  // A path once checked is remembered (per base, prefix and provider path; the query cannot move a URL's path).
  const checkedKey = `${baseUrl}\u0000${versionPrefix}\u0000${providerPath}`;
  const checked = checkedPaths.get(checkedKey);
  if (checked !== undefined) return { origin: base.origin, path: query ? `${checked}?${query}` : checked };
  const prefix = `${base.pathname}${versionPrefix}`;
  // The version root itself (an empty provider path) is the prefix as the provider documents it, with no slash added
  // (Google Translate's `POST /language/translate/v2` differs from `/v2/`); at the host root it is `/`.
  const root = providerPath === '';
  const path = `${root ? prefix || '/' : `${prefix}/${providerPath}`}${query ? `?${query}` : ''}`;
  // Belt and braces: the path was checked segment by segment, and the joined URL must still keep origin and prefix.
  const joined = new URL(`${base.origin}${path}`);
  if (joined.origin !== base.origin || !((root && joined.pathname === (prefix || '/')) || joined.pathname === `${prefix}/` || joined.pathname.startsWith(`${prefix}/`))) {
    throw unsafe('escapes_base', 'it leaves the provider base URL');
  }
  if (checkedPaths.size < 10_000) checkedPaths.set(checkedKey, query ? path.slice(0, path.length - query.length - 1) : path);
  return { origin: base.origin, path };
}

const checkedPaths = processMap<string, string>();

/** Base URLs are few (one per provider or tenant): parse each once. */
const parsedBases = processMap<string, { origin: string; pathname: string }>();

/**
 * True when `host` matches a pattern: an exact host; a leading `*.` matches one or more labels
 * (`*.openai.azure.com`); a `*` label elsewhere matches exactly one label (`bedrock-runtime.*.amazonaws.com`); a `*`
 * inside a label matches part of one label (`*-aiplatform.googleapis.com`).
 */
export function hostMatches(host: string, pattern: string): boolean {
  const hostLabels = host.toLowerCase().split('.');
  const patternLabels = pattern.toLowerCase().split('.');
  const label = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
  if (!hostLabels.every((part) => label.test(part))) return false;
  let fixed = patternLabels;
  if (patternLabels[0] === '*' ) {
    fixed = patternLabels.slice(1);
    if (hostLabels.length <= fixed.length) return false;
  } else if (hostLabels.length !== patternLabels.length) {
    return false;
  }
  const tail = hostLabels.slice(hostLabels.length - fixed.length);
  return fixed.every((part, index) => {
    if (part === '*') return true;
    if (!part.includes('*')) return part === tail[index];
    // A `*` inside a label matches one or more label characters: `*-aiplatform` matches `us-central1-aiplatform`.
    const glob = new RegExp(`^${part.split('*').map(escapeRegExp).join('[a-z0-9-]+')}$`);
    return glob.test(tail[index]!);
  });
}
