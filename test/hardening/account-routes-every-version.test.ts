/**
 * Account routes and deny prefixes under every declared version, generated from the manifests: for every provider, every
 * account route (each of its methods) is sent under every version the provider declares, both as the same path below
 * that version and, where that version maps to a parent of another version's prefix (`v1-root` → `''` beside `v1` →
 * `/v1`; Azure's `v1-deployments` → `/openai` beside `v1` → `/openai/v1`), as the path that reaches the same upstream
 * URL. Also twice percent-encoded, as a server that decodes twice would read it. Every one must answer 400
 * `route_not_allowed` (or an `unsafe_path_*` refusal of the path check) with nothing reaching the fake upstream. A real gateway, fed each provider's conformance
 * fixture secret (providers/<slug>/test/fixture.ts), in front of one recording fake upstream.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { BUILT_IN_PROVIDERS_DIRECTORY } from '../../core/server/plugin-loader';
import { versionRoots } from '../../core/pipeline/upstream-views';
import type { ProviderFixture } from '../../providers/_shared/fixture';
import type { ProviderManifest } from '../../core/contract';
import { FakeUpstream } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

/** A concrete path an account pattern matches: placeholders and `*` become an id, a final `**` is dropped. */
function concrete(pattern: string): string {
  const segments = pattern.split('/');
  const fixed = segments.at(-1) === '**' ? segments.slice(0, -1) : segments;
  const text = fixed.map((segment) => segment.replace(/\{[A-Za-z_][A-Za-z0-9_]*\}/g, 'id1').replace(/\*/g, 'id1')).join('/');
  return text === '' ? 'id1' : text;
}

/** The first letter of the path percent-encoded twice (`files` → `%2566iles`). */
function doubleEncoded(providerPath: string): string | undefined {
  const index = providerPath.search(/[a-z]/i);
  if (index < 0) return undefined;
  const hex = providerPath.charCodeAt(index).toString(16).toUpperCase();
  return `${providerPath.slice(0, index)}%25${hex}${providerPath.slice(index + 1)}`;
}

/** Every (version, path) pair that names the account route `routePath`: below each version, and through parent prefixes. */
export function callsFor(manifest: ProviderManifest, routePath: string): Array<{ version: string; path: string }> {
  const roots = versionRoots(manifest.versions);
  const target = concrete(routePath);
  const calls: Array<{ version: string; path: string }> = [];
  for (const root of roots) {
    calls.push({ version: root.name, path: target });
    for (const child of roots) {
      if (child === root || child.host !== root.host || child.prefix === root.prefix) continue;
      if (root.prefix !== '' && !child.prefix.startsWith(`${root.prefix}/`)) continue;
      const between = child.prefix.slice(root.prefix.length).replace(/^\/+/, '');
      // Only versions the provider maps to literal path segments (a declared `/run/@cf` contains an `@` the path check refuses on purpose).
      if (/[^A-Za-z0-9._~-]/.test(between.replace(/\//g, ''))) continue;
      calls.push({ version: root.name, path: `${between}/${target}` });
    }
  }
  const encoded = calls.flatMap((call) => {
    const twice = doubleEncoded(call.path);
    return twice ? [{ version: call.version, path: twice }] : [];
  });
  return [...calls, ...encoded];
}

describe('account routes under every declared version (generated from every manifest)', function () {
  this.timeout(120_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let headers: Record<string, string>;
  const savedEnvironment: Record<string, string | undefined> = {};
  const slugs = readdirSync(BUILT_IN_PROVIDERS_DIRECTORY).filter((name) => !name.startsWith('_')).sort();

  before(async () => {
    upstream = await FakeUpstream.start();
    const fixtures = new Map<string, ProviderFixture>();
    for (const slug of slugs) fixtures.set(slug, (require(path.join(BUILT_IN_PROVIDERS_DIRECTORY, slug, 'test', 'fixture.js')) as { fixture: ProviderFixture }).fixture);
    for (const fixture of fixtures.values()) {
      for (const [name, value] of Object.entries(fixture.environment?.(upstream.url) ?? {})) {
        savedEnvironment[name] = process.env[name];
        process.env[name] = value;
      }
    }
    gateway = await TestGateway.start({ upstreams: Object.fromEntries(slugs.map((slug) => [slug, upstream.url])), env: { TOLLGATE_LOG_LEVEL: 'warn' } });
    const { appId, appToken } = await gateway.createApp({ deviceLimitPerMinute: 1_000_000, appLimitPerMinute: 1_000_000 });
    for (const [slug, fixture] of fixtures) {
      const secret = typeof fixture.secret === 'function' ? await fixture.secret() : fixture.secret;
      await gateway.setSecret(appId, slug, secret, fixture.baseUrl);
    }
    headers = { 'tollgate-app-token': appToken, 'tollgate-device-token': await gateway.deviceToken(appId, appToken, 'every-version-device') };
  });
  after(async () => {
    for (const [name, value] of Object.entries(savedEnvironment)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await gateway?.close();
    await upstream?.close();
  });

  it('generates the parent-prefix forms the findings name (Azure v1-deployments/v1/files, Hugging Face v1-root/v1/…)', () => {
    const azure = gateway.gateway.registry.find('azure-openai')!.manifest;
    expect(callsFor(azure, 'files')).to.deep.include({ version: 'v1-deployments', path: 'v1/files' });
    const huggingface = gateway.gateway.registry.find('huggingface')!.manifest;
    expect(callsFor(huggingface, 'chat/completions')).to.deep.include({ version: 'v1-root', path: 'v1/chat/completions' });
  });

  it('refuses every account route of every provider under every declared version; nothing reaches the provider', async () => {
    let sent = 0;
    const failures: string[] = [];
    for (const provider of gateway.gateway.registry.list()) {
      const manifest = provider.manifest;
      for (const route of manifest.routes?.account ?? []) {
        for (const method of route.methods) {
          for (const call of callsFor(manifest, route.path)) {
            const hasBody = method !== 'GET' && method !== 'DELETE';
            const response = await fetch(`${gateway.url}/v1/proxy/${manifest.slug}/${call.version}/${call.path}`, {
              method,
              headers: { ...headers, ...(hasBody ? { 'content-type': 'application/json' } : {}) },
              ...(hasBody ? { body: '{}' } : {}),
            });
            const body = (await response.json()) as { error?: { reason?: string } };
            sent += 1;
            // Refused by the route class, or earlier by the path check (`files:register` reads as a URL scheme).
            if (response.status !== 400 || !(body.error?.reason === 'route_not_allowed' || body.error?.reason?.startsWith('unsafe_path_'))) {
              failures.push(`${method} ${manifest.slug}/${call.version}/${call.path} → ${response.status} ${body.error?.reason ?? JSON.stringify(body).slice(0, 80)}`);
            }
          }
        }
      }
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
    expect(sent).to.be.at.least(300);
    expect(upstream.requests.map((request) => `${request.method} ${request.url}`)).to.deep.equal([]);
  });

  it('refuses deny prefixes reached through a parent version (Azure v1-deployments/v1/organization/users)', async () => {
    for (const [slug, version, providerPath] of [
      ['azure-openai', 'v1-deployments', 'v1/organization/users'],
      ['azure-openai', 'v1-deployments', 'v1/api_keys'],
      ['huggingface', 'v1-root', 'v1/organization/users'],
    ] as const) {
      const response = await fetch(`${gateway.url}/v1/proxy/${slug}/${version}/${providerPath}`, { headers });
      expect(response.status, `${slug}/${version}/${providerPath}`).to.equal(400);
      expect(((await response.json()) as { error: { reason: string } }).error.reason).to.equal('route_not_allowed');
    }
    expect(upstream.requests).to.have.length(0);
  });
});
