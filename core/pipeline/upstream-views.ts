/**
 * The provider paths a request's upstream path stands for, seen from every version root the provider declares.
 *
 * Account routes and deny prefixes are written relative to a version root (`files`, `organization/`). A provider may
 * declare a version whose prefix is a parent of another's (`v1-root` mapped to `''` beside `v1` mapped to `/v1`): then
 * `v1-root/v1/files` and `v1/files` are the same upstream call, and a check made only on the path below the requested
 * version (`v1/files`) misses it. So the route decision looks at the upstream path (version prefix + path) from every
 * declared version root on the same host, and at every decoded form the upstream may see (some servers decode twice).
 * Pure data: core never names a provider.
 */

/** One declared version root: the host group it lives on and its path prefix (`''` for the base itself, else `/x/y`). */
export interface VersionRoot {
  readonly name: string;
  /** `base` for a prefix on the provider's base URL, the origin for a version mapped to an absolute URL. */
  readonly host: string;
  readonly prefix: string;
}

/** The declared version roots of a manifest's `versions`, compared case-insensitively. */
export function versionRoots(versions: Readonly<Record<string, string>>): VersionRoot[] {
  return Object.entries(versions).map(([name, target]) => {
    if (/^https?:/i.test(target)) {
      const url = new URL(target);
      return { name, host: url.origin.toLowerCase(), prefix: url.pathname.replace(/\/+$/, '').toLowerCase() };
    }
    return { name, host: 'base', prefix: target.replace(/\/+$/, '').toLowerCase() };
  });
}

const MAX_DECODE_ROUNDS = 4;

/**
 * Every distinct decoded form of a path: decoded once (as most servers do), and again until it no longer changes (as
 * a server that decodes twice would see it). Each without `;…` matrix parameters and trailing `/`. Undefined when a
 * round does not decode.
 */
export function decodedForms(providerPath: string): string[] | undefined {
  const forms: string[] = [];
  let current = providerPath;
  for (let round = 0; round < MAX_DECODE_ROUNDS; round += 1) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(current);
    } catch {
      return round === 0 ? undefined : forms;
    }
    const normalized = decoded
      .split('/')
      .map((segment) => segment.split(';', 1)[0]!)
      .join('/')
      .replace(/\/+$/, '');
    if (!forms.includes(normalized)) forms.push(normalized);
    if (decoded === current) break;
    current = decoded;
  }
  return forms;
}

/**
 * The paths below each declared version root on the requested version's host that `path` (below `version`) reaches
 * upstream, the path itself first. A version unknown to `roots` yields the path alone.
 */
export function upstreamViews(roots: readonly VersionRoot[], version: string, path: string): string[] {
  const own = roots.find((root) => root.name === version);
  const views = [path];
  if (!own) return views;
  const full = path === '' ? own.prefix : `${own.prefix}/${path}`;
  const lower = full.toLowerCase();
  for (const root of roots) {
    if (root.host !== own.host || root === own) continue;
    let view: string | undefined;
    if (root.prefix === '') view = full.replace(/^\/+/, '');
    else if (lower === root.prefix) view = '';
    else if (lower.startsWith(`${root.prefix}/`)) view = full.slice(root.prefix.length + 1);
    if (view !== undefined && !views.includes(view)) views.push(view);
  }
  return views;
}
