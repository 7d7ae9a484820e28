/**
 * The provider registry: every manifest registered under `PROVIDER_MANIFEST`, checked once at boot, with the operator's
 * base-URL overrides applied. Core looks providers up here by the slug in the request; it never names one.
 */
import { inject, injectAll, injectable } from 'tsyringe';
import {
  CONFIGURATION,
  PLUGIN_CONTRACT_VERSION,
  PROVIDER_MANIFEST,
  TollgateError,
  type HttpMethod,
  type ProviderManifest,
  type RealtimeModelFields,
} from '../contract';
import { providerVariableStem, type Configuration } from '../configuration/configuration';
import { compileAccountRoutes, compileCredentialRoutes, compileRealtimeRoutes, routePatternProblem, type CompiledAccountRoute, type CompiledCredentialRoute, type CompiledRealtimeRoute } from '../pipeline/route-class';
import { pathModelPatternProblem } from '../pipeline/path-model';

import { DEFAULT_CREDENTIAL_QUERY_PARAMETERS, OVERRIDE_QUERY_PARAMETERS } from '../pipeline/header-hygiene';

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,39}$/;
/**
 * A version name (protocol.md, "Addresses": `v[0-9]…`, or a name the provider declares). Declared names may also be a
 * lower-case word, for an SDK that writes its own first path segment (groq-sdk's compatibility prefix, @google/genai's
 * `upload/v1beta/files`): that segment is then a declared version mapped to the same upstream prefix.
 */
export const VERSION_PATTERN = /^[a-z][a-z0-9.-]{0,15}$/;
const METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A provider as the gateway uses it: the manifest plus what was derived from it at boot. */
export interface RegisteredProvider {
  readonly manifest: ProviderManifest;
  /** The effective base URL (manifest, or the operator's `TOLLGATE_PROVIDER_<SLUG>_BASE_URL`), without trailing slash. */
  readonly baseUrl: string;
  /** True when the operator replaced the manifest's base URL. */
  readonly overridden: boolean;
  /** Allowed methods (upper case). */
  readonly methods: ReadonlySet<string>;
  /** Lower-case names of headers that carry the credential; a client's own values for them are stripped. */
  readonly credentialHeaders: readonly string[];
  /** The manifest's `account`-class routes, compiled. */
  readonly accountRoutes: readonly CompiledAccountRoute[];
  /** The manifest's credential-minting routes, compiled. */
  readonly credentialRoutes: readonly CompiledCredentialRoute[];
  /** The manifest's realtime routes, compiled. */
  readonly realtimeRoutes: readonly CompiledRealtimeRoute[];
  /**
   * The operator's replacement for the origin (and path) of every realtime socket URL: `TOLLGATE_PROVIDER_<SLUG>_REALTIME_URL`,
   * else the base URL override with `http(s)` → `ws(s)`; undefined: the manifest's URLs.
   */
  readonly realtimeOverride: string | undefined;
  /** Lower-case query parameter names a client may not send to this provider (credential channels). */
  readonly credentialQueryParameters: ReadonlySet<string>;
  /** Lower-case query parameter name prefixes a client may not send to this provider. */
  readonly credentialQueryParameterPrefixes: readonly string[];
  /** The version mapped to `''`, when the manifest declares `rootPaths` (undefined otherwise). */
  readonly rootVersion?: string;
}

function fail(slug: string, message: string): never {
  throw new TollgateError('TG_ERR_PROVIDER_MANIFEST', `provider "${slug}": ${message}`);
}

function parseBaseUrl(slug: string, value: string, allowHttp: boolean, what: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(slug, `${what} "${value}" is not a URL`);
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) fail(slug, `${what} must use https`);
  if (url.username || url.password || url.search || url.hash) fail(slug, `${what} must not carry credentials, a query or a fragment`);
  return url;
}

/** Checks a manifest against the contract; throws a coded error naming the provider and the fault. */
export function validateManifest(manifest: ProviderManifest, origin = 'built-in'): void {
  const slug = typeof manifest?.slug === 'string' ? manifest.slug : '?';
  if (manifest.contractVersion !== PLUGIN_CONTRACT_VERSION) {
    throw new TollgateError(
      'TG_ERR_PLUGIN_CONTRACT_VERSION',
      `provider "${slug}" (${origin}) targets plugin contract ${String(manifest.contractVersion)}, this server speaks ${PLUGIN_CONTRACT_VERSION}`,
    );
  }
  if (!SLUG_PATTERN.test(slug)) fail(slug, `slug must match ${SLUG_PATTERN}`);
  if (typeof manifest.name !== 'string' || manifest.name.length === 0) fail(slug, 'name is required');
  parseBaseUrl(slug, manifest.baseUrl, false, 'baseUrl');
  for (const alternate of manifest.alternateBaseUrls ?? []) parseBaseUrl(slug, alternate, false, 'alternateBaseUrls entry');
  const versions = Object.entries(manifest.versions ?? {});
  if (versions.length === 0) fail(slug, 'at least one version is required');
  for (const rootPath of manifest.rootPaths ?? []) {
    if (typeof rootPath !== 'string' || !/^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*\/$/.test(rootPath)) fail(slug, `root path "${rootPath}" must be segments ending with "/" (e.g. "upload/")`);
  }
  if (manifest.rootPaths?.length && !versions.some(([, prefix]) => prefix === '')) fail(slug, 'rootPaths needs a version mapped to the host root (\'\')');
  for (const [version, prefix] of versions) {
    if (!VERSION_PATTERN.test(version)) fail(slug, `version "${version}" must match ${VERSION_PATTERN}`);
    if (/^https?:/.test(prefix)) {
      const url = parseBaseUrl(slug, prefix, false, `version "${version}"`);
      if (url.pathname.endsWith('/') && url.pathname !== '/') fail(slug, `version "${version}" URL must not end with "/"`);
      continue;
    }
    if (prefix !== '' && (!prefix.startsWith('/') || prefix.endsWith('/') || prefix.includes('..') || prefix.includes('//'))) {
      fail(slug, `version "${version}" maps to "${prefix}": use '' or a path like "/v1" (no trailing slash)`);
    }
  }
  const auth = manifest.auth;
  if (auth?.kind === 'header') {
    if (!/^[A-Za-z0-9-]+$/.test(auth.header)) fail(slug, 'auth.header must be a header name');
  } else if (auth?.kind === 'query') {
    if (!/^[A-Za-z0-9_.-]+$/.test(auth.parameter)) fail(slug, 'auth.parameter must be a query parameter name');
  } else if (auth?.kind === 'computed') {
    if (typeof manifest.authorize !== 'function') fail(slug, 'auth.kind "computed" requires an authorize() hook');
  } else {
    fail(slug, 'auth.kind must be "header", "query" or "computed"');
  }
  for (const method of manifest.routes?.methods ?? []) if (!METHODS.includes(method)) fail(slug, `unknown method "${method}"`);
  for (const route of manifest.routes?.account ?? []) {
    const problem = routePatternProblem(route?.path);
    if (problem) fail(slug, `account route "${String(route?.path)}" ${problem}`);
    if (!Array.isArray(route.methods) || route.methods.length === 0 || route.methods.some((method) => !METHODS.includes(method))) fail(slug, `account route "${route.path}" needs methods among ${METHODS.join(', ')}`);
    if (typeof route.why !== 'string' || route.why.trim().length < 10 || /[\r\n]/.test(route.why)) fail(slug, `account route "${route.path}" needs a one-line "why" (what opening it exposes)`);
  }
  const channels = manifest.clientCredentials ?? {};
  for (const name of [...(channels.headers ?? []), ...(channels.headerPrefixes ?? [])]) if (!/^[A-Za-z0-9-]+$/.test(name)) fail(slug, `clientCredentials header "${name}" is not a header name`);
  for (const name of [...(channels.queryParameters ?? []), ...(channels.queryParameterPrefixes ?? [])]) if (!/^[A-Za-z0-9_.-]+$/.test(name)) fail(slug, `clientCredentials query parameter "${name}" is not a parameter name`);
  if (manifest.tenant && manifest.tenant.allowedHosts.length === 0) fail(slug, 'tenant.allowedHosts must name at least one host pattern');
  if (manifest.prices !== undefined) {
    const prices = manifest.prices;
    if (typeof prices.source !== 'string' || !prices.source.startsWith('https://')) fail(slug, 'prices.source must cite the price page (https://…)');
    if (typeof prices.asOf !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(prices.asOf)) fail(slug, 'prices.asOf must be the day the page was read (YYYY-MM-DD)');
    for (const row of prices.models ?? []) {
      if (!Array.isArray(row) || typeof row[0] !== 'string' || !(row[1] >= 0) || !(row[2] >= 0)) fail(slug, `prices row ${JSON.stringify(row)} must be [model, input USD per million, output USD per million]`);
    }
  }
  for (const fields of manifest.requestFields ?? []) {
    const problem = routePatternProblem(fields?.path);
    if (problem) fail(slug, `requestFields route "${String(fields?.path)}" ${problem}`);
    if (!Array.isArray(fields.methods) || fields.methods.length === 0 || fields.methods.some((method) => !METHODS.includes(method))) fail(slug, `requestFields route "${fields.path}" needs methods among ${METHODS.join(', ')}`);
    const members = [fields.model, fields.stream, ...(fields.outputLimit ?? [])].filter((member) => member !== undefined);
    for (const member of members) if (typeof member !== 'string' || !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(member)) fail(slug, `requestFields route "${fields.path}": "${String(member)}" is not a dotted member path`);
    if (fields.defaultOutputTokens !== undefined && !(Number.isInteger(fields.defaultOutputTokens) && fields.defaultOutputTokens >= 0)) fail(slug, `requestFields route "${fields.path}": defaultOutputTokens must be a whole number`);
    const usage = fields.streamUsageRequest;
    if (usage !== undefined && (usage === null || typeof usage !== 'object' || Array.isArray(usage))) fail(slug, `requestFields route "${fields.path}": streamUsageRequest must be an object of members`);
  }
  for (const route of manifest.pathModels ?? []) {
    const problem = pathModelPatternProblem(route?.path);
    if (problem) fail(slug, `pathModels route "${String(route?.path)}" ${problem}`);
    if (!Array.isArray(route.methods) || route.methods.length === 0 || route.methods.some((method) => !METHODS.includes(method))) fail(slug, `pathModels route "${route.path}" needs methods among ${METHODS.join(', ')}`);
    if (typeof route.doc !== 'string' || !route.doc.startsWith('https://')) fail(slug, `pathModels route "${route.path}" must cite its documentation (doc: https://…)`);
    if (route.versions !== undefined && (!Array.isArray(route.versions) || route.versions.length === 0 || route.versions.some((version) => !Object.prototype.hasOwnProperty.call(manifest.versions, version)))) {
      fail(slug, `pathModels route "${route.path}": versions must name declared versions`);
    }
    if (route.modelPrefix !== undefined && (typeof route.modelPrefix !== 'string' || route.modelPrefix.length === 0 || route.modelPrefix.length > 100)) fail(slug, `pathModels route "${route.path}": modelPrefix must be 1 to 100 characters`);
  }
  for (const route of manifest.realtime ?? []) {
    const problem = routePatternProblem(route?.path);
    if (problem) fail(slug, `realtime route "${String(route?.path)}" ${problem}`);
    if (typeof route.doc !== 'string' || !route.doc.startsWith('https://')) fail(slug, `realtime route "${route.path}" must cite its documentation (doc: https://…)`);
    if (route.url !== undefined) {
      let url: URL | undefined;
      try {
        url = new URL(route.url);
      } catch {
        fail(slug, `realtime route "${route.path}" url "${route.url}" is not a URL`);
      }
      if (url.protocol !== 'wss:' || url.search || url.hash || url.username || url.password || (url.pathname.endsWith('/') && url.pathname !== '/')) fail(slug, `realtime route "${route.path}" url must be wss://host[/prefix] without a query or trailing "/"`);
    }
    if (route.usage !== undefined && (!Array.isArray(route.usage.markers) || route.usage.markers.length === 0 || typeof route.usage.read !== 'function')) fail(slug, `realtime route "${route.path}" usage needs markers and read()`);
    if (route.model !== undefined) checkRealtimeModelFields(slug, route.path, route.model);
  }
  for (const route of manifest.credentialRoutes ?? []) {
    const problem = routePatternProblem(route?.path);
    if (problem) fail(slug, `credential route "${String(route?.path)}" ${problem}`);
    if (!Array.isArray(route.methods) || route.methods.length === 0 || route.methods.some((method) => !METHODS.includes(method))) fail(slug, `credential route "${route.path}" needs methods among ${METHODS.join(', ')}`);
    if (typeof route.doc !== 'string' || !route.doc.startsWith('https://')) fail(slug, `credential route "${route.path}" must cite its documentation (doc: https://…)`);
  }
  const check = manifest.keyCheck;
  if (check !== undefined) {
    if (check.method !== 'GET') fail(slug, 'keyCheck.method must be GET (a key check changes nothing)');
    if (typeof check.version !== 'string' || !Object.prototype.hasOwnProperty.call(manifest.versions, check.version)) fail(slug, `keyCheck.version "${String(check.version)}" is not one of the versions`);
    if (typeof check.path !== 'string' || !/^[A-Za-z0-9._~:@-]+(\/[A-Za-z0-9._~:@-]+)*$/.test(check.path) || check.path.split('/').some((segment) => segment === '.' || segment === '..')) {
      fail(slug, `keyCheck.path "${String(check.path)}" must be a relative path (segments of letters, digits and ._~:@-; no query)`);
    }
  }
}

const MEMBER_PATH = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** A realtime route's model declaration: dotted members, frames with at least one condition. */
function checkRealtimeModelFields(slug: string, path: string, fields: RealtimeModelFields): void {
  if (fields.query !== undefined && (typeof fields.query !== 'string' || fields.query.length === 0)) fail(slug, `realtime route "${path}": model.query must name a query parameter`);
  if (fields.modelPrefix !== undefined && (typeof fields.modelPrefix !== 'string' || fields.modelPrefix.length === 0)) fail(slug, `realtime route "${path}": model.modelPrefix must be a non-empty string`);
  for (const declared of fields.frames ?? []) {
    if (!Array.isArray(declared?.frame) || declared.frame.length === 0) fail(slug, `realtime route "${path}": each model.frames entry needs at least one frame condition`);
    if (declared.model === undefined && !declared.outputLimit?.length) fail(slug, `realtime route "${path}": a model.frames entry names a model or an output limit`);
    const members = [...declared.frame.map((condition) => condition?.member), declared.model, ...(declared.outputLimit ?? [])].filter((member) => member !== undefined);
    for (const member of members) if (typeof member !== 'string' || !MEMBER_PATH.test(member)) fail(slug, `realtime route "${path}": "${String(member)}" is not a dotted member path`);
  }
}

/** See {@link RegisteredProvider.realtimeOverride}: an explicit realtime URL, else the base URL override's origin. */
function realtimeOverride(slug: string, explicit: string | undefined, baseOverride: string | undefined): string | undefined {
  if (explicit) {
    const url = parseBaseUrl(slug, explicit.replace(/^ws/, 'http'), true, `TOLLGATE_PROVIDER_${providerVariableStem(slug)}_REALTIME_URL`);
    return url.href.replace(/^http/, 'ws').replace(/\/$/, '');
  }
  return baseOverride ? new URL(baseOverride).origin.replace(/^http/, 'ws') : undefined;
}

@injectable()
export class ProviderRegistry {
  private readonly bySlug = new Map<string, RegisteredProvider>();
  /**
   * Every header name any registered provider carries its key in, or declares as a client credential channel (lower
   * case): never accepted from a client, whatever the provider.
   */
  readonly credentialHeaders: ReadonlySet<string>;
  /** Header name prefixes declared as credential channels by any provider (lower case), e.g. `x-amz-`. */
  readonly credentialHeaderPrefixes: readonly string[];

  constructor(
    @injectAll(PROVIDER_MANIFEST) manifests: ProviderManifest[],
    @inject(CONFIGURATION) configuration: Configuration,
  ) {
    for (const manifest of manifests) {
      validateManifest(manifest);
      if (this.bySlug.has(manifest.slug)) {
        throw new TollgateError('TG_ERR_PROVIDER_DUPLICATE', `provider "${manifest.slug}" is registered twice`);
      }
      const override = configuration.providerBaseUrls[providerVariableStem(manifest.slug)];
      // An operator override may be plain http (a fake upstream in tests, a mirror on a private network); it is the
      // operator's choice, never the client's.
      const baseUrl = override ? parseBaseUrl(manifest.slug, override, true, `TOLLGATE_PROVIDER_${providerVariableStem(manifest.slug)}_BASE_URL`).href.replace(/\/$/, '') : manifest.baseUrl.replace(/\/$/, '');
      const channels = manifest.clientCredentials ?? {};
      const credentialHeaders = new Set<string>((channels.headers ?? []).map((name) => name.toLowerCase()));
      if (manifest.auth.kind === 'header') credentialHeaders.add(manifest.auth.header.toLowerCase());
      const credentialQueryParameters = new Set([...DEFAULT_CREDENTIAL_QUERY_PARAMETERS, ...OVERRIDE_QUERY_PARAMETERS, ...(channels.queryParameters ?? [])].map((name) => name.toLowerCase()));
      if (manifest.auth.kind === 'query') credentialQueryParameters.add(manifest.auth.parameter.toLowerCase());
      this.bySlug.set(manifest.slug, {
        manifest,
        baseUrl,
        overridden: Boolean(override),
        methods: new Set(manifest.routes?.methods ?? ['GET', 'POST']),
        credentialHeaders: [...credentialHeaders],
        accountRoutes: compileAccountRoutes(manifest.routes?.account),
        credentialRoutes: compileCredentialRoutes(manifest.credentialRoutes),
        realtimeRoutes: compileRealtimeRoutes(manifest.realtime),
        realtimeOverride: realtimeOverride(manifest.slug, configuration.providerRealtimeUrls?.[providerVariableStem(manifest.slug)], override ? baseUrl : undefined),
        credentialQueryParameters,
        credentialQueryParameterPrefixes: (channels.queryParameterPrefixes ?? []).map((name) => name.toLowerCase()),
        ...(manifest.rootPaths?.length ? { rootVersion: Object.entries(manifest.versions).find(([, prefix]) => prefix === '')![0] } : {}),
      });
    }
    this.credentialHeaders = new Set([...this.bySlug.values()].flatMap((provider) => provider.credentialHeaders));
    this.credentialHeaderPrefixes = [...new Set(manifests.flatMap((manifest) => manifest.clientCredentials?.headerPrefixes ?? []).map((prefix) => prefix.toLowerCase()))];
  }

  /** The provider for `slug`, or undefined. */
  find(slug: string): RegisteredProvider | undefined {
    return this.bySlug.get(slug);
  }

  /** Every provider, sorted by slug. */
  list(): RegisteredProvider[] {
    return [...this.bySlug.values()].sort((a, b) => a.manifest.slug.localeCompare(b.manifest.slug));
  }
}
