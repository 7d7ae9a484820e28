// Writes docs/reference/providers.md from the compiled manifests (run by `npm run build`, after tsc), so that the page
// and the manifests cannot drift. Under CI (`CI` set, as .ci/run does) it never rewrites the committed page: it only
// warns, and test/core/providers-reference.test.ts then fails until the regenerated page is committed.
const fs = require('node:fs');
const path = require('node:path');
const root = path.resolve(__dirname, '..');
const { discoverProviderFolders } = require(path.join(root, 'dist/core/server/plugin-loader.js'));
const { renderProvidersReference } = require(path.join(root, 'dist/core/registry/providers-reference.js'));
const page = renderProvidersReference(discoverProviderFolders(path.join(root, 'dist/providers')));
const target = path.join(root, 'docs/reference/providers.md');
const current = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : '';
if (current !== page) {
  if (process.env.CI && process.env.CI !== 'false') {
    process.stderr.write('docs/reference/providers.md differs from the manifests: run `npm run build` and commit it\n');
  } else {
    fs.writeFileSync(target, page);
  }
}
