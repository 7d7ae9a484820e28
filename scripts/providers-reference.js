// Writes docs/reference/providers.md from the compiled manifests (run by `npm run build`, after tsc), so that the page
// and the manifests cannot drift; test/core/providers-reference.test.ts fails when the committed page differs.
const fs = require('node:fs');
const path = require('node:path');
const root = path.resolve(__dirname, '..');
const { discoverProviderFolders } = require(path.join(root, 'dist/core/server/plugin-loader.js'));
const { renderProvidersReference } = require(path.join(root, 'dist/core/registry/providers-reference.js'));
const page = renderProvidersReference(discoverProviderFolders(path.join(root, 'dist/providers')));
const target = path.join(root, 'docs/reference/providers.md');
if (!fs.existsSync(target) || fs.readFileSync(target, 'utf8') !== page) fs.writeFileSync(target, page);
