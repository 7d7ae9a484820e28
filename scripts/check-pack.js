// Before `npm pack` / `npm publish`: the package ships the compiled gateway (package.json "files"), which `npm run build`
// makes. Packing without it would publish a `tollgate` command that cannot start: refuse, saying what to run.
'use strict';
const { existsSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const needed = ['dist/bin/tollgate.js', 'dist/core/server/gateway.js', 'dist/providers/openai', 'dist/plugins', 'dist/dashboard/index.html'];
const missing = needed.filter((file) => !existsSync(path.join(root, file)));
if (missing.length) {
  process.stderr.write(`npm pack: the build is missing (${missing.join(', ')}): run npm run build first\n`);
  process.exit(1);
}
