/**
 * docs/reference/providers.md is generated from the manifests by `npm run build` (scripts/providers-reference.js): the
 * committed page must be what the manifests say today, account routes and their warnings included.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { renderProvidersReference } from '../../core/registry/providers-reference';
import { BUILT_IN_PROVIDERS_DIRECTORY, discoverProviderFolders } from '../../core/server/plugin-loader';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('docs/reference/providers.md', () => {
  const manifests = discoverProviderFolders(BUILT_IN_PROVIDERS_DIRECTORY);
  const committed = readFileSync(path.join(ROOT, 'docs', 'reference', 'providers.md'), 'utf8');

  it('is the page the manifests generate (run `npm run build` and commit it)', () => {
    expect(committed === renderProvidersReference(manifests), 'docs/reference/providers.md is stale: run `npm run build` and commit it').to.equal(true);
  });

  it('names every provider with its base URL, auth and each account route with its warning', () => {
    for (const manifest of manifests) {
      expect(committed, manifest.slug).to.include(`(\`${manifest.slug}\`)`);
      expect(committed, manifest.slug).to.include(manifest.baseUrl);
      for (const route of manifest.routes?.account ?? []) expect(committed, `${manifest.slug} ${route.path}`).to.include(route.why);
    }
  });
});
