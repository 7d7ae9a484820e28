// Writes providers/<slug>/README.md from each compiled manifest (run after `npm run build`), so that the declared facts
// and the README cannot drift: `node scripts/provider-readmes.js`.
const fs = require('node:fs');
const path = require('node:path');
const root = path.resolve(__dirname, '..');
const { discoverProviderFolders } = require(path.join(root, 'dist/core/server/plugin-loader.js'));
for (const manifest of discoverProviderFolders(path.join(root, 'dist/providers'))) {
  const auth = manifest.auth.kind === 'header'
    ? `header \`${manifest.auth.header}: ${manifest.auth.scheme ? `${manifest.auth.scheme} ` : ''}<key>\``
    : manifest.auth.kind === 'query' ? `query parameter \`${manifest.auth.parameter}=<key>\` (added by the gateway, redacted in logs)` : 'computed (see index.ts)';
  const versions = Object.entries(manifest.versions).map(([version, target]) => `\`${version}\` → \`${target.startsWith('http') ? target : `${manifest.baseUrl}${target}`}\``).join(', ');
  const routes = manifest.routes ?? {};
  const lines = [
    `# ${manifest.name} (\`${manifest.slug}\`)`,
    '',
    `Generated from \`index.ts\` by \`scripts/provider-readmes.js\`; edit the manifest, not this file.`,
    '',
    '| fact | value |',
    '|---|---|',
    `| route | \`/v1/proxy/${manifest.slug}/{version}/{path}\` |`,
    `| versions | ${versions} |`,
    `| auth | ${auth} |`,
    `| default headers | ${Object.entries(manifest.defaultHeaders ?? {}).map(([k, v]) => `\`${k}: ${v}\``).join(', ') || '—'} |`,
    `| capabilities | ${manifest.capabilities.join(', ')} |`,
    `| streaming | ${manifest.streaming.join(', ') || 'none'} |`,
    `| methods | ${(routes.methods ?? ['GET', 'POST']).join(', ')} |`,
    `| allowed paths | ${routes.allow ? routes.allow.map((p) => `\`${p || '(root)'}\``).join(', ') : 'all'} |`,
    `| refused paths | ${(routes.deny ?? []).map((p) => `\`${p}\``).join(', ') || '—'} |`,
    `| per-tenant host | ${manifest.tenant ? `${manifest.tenant.baseUrl}; ${manifest.tenant.allowedHosts.map((h) => `\`${h}\``).join(', ')}` : 'no'} |`,
    '',
    manifest.notes ? `${manifest.notes}\n` : '',
    'Tests: the conformance suite (`test/conformance/providers.test.ts`) runs this provider with `test/fixture.ts`.',
    '',
  ];
  fs.writeFileSync(path.join(root, 'providers', manifest.slug, 'README.md'), lines.join('\n'));
}
