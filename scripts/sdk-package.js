#!/usr/bin/env node
// `npm run sdk:package`: builds every SDK artifact into dist/sdk/ by running each part in scripts/sdk-package/*.js
// (each exports `async function build({ root, out, log })`, or `main()`), maven first, then in name order. `node scripts/sdk-package.js maven flutter`
// runs only the parts named.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

async function main() {
  const root = path.resolve(__dirname, '..');
  const out = path.join(root, 'dist', 'sdk');
  const only = process.argv.slice(2);
  const directory = path.join(__dirname, 'sdk-package');
  // maven first: the Flutter archive and the React Native package carry a copy of dist/sdk/maven.
  const rank = (name) => (name === 'maven.js' ? 0 : 1);
  const parts = fs.readdirSync(directory).filter((name) => name.endsWith('.js')).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
    .filter((name) => only.length === 0 || only.includes(name.replace(/\.js$/, '')));
  fs.mkdirSync(out, { recursive: true });
  for (const name of parts) {
    const started = Date.now();
    process.stdout.write(`sdk:package ${name} …\n`);
    // Parts export `build({ root, out, log })`, or `main()` when they also run alone and read TOLLGATE_SDK_OUT.
    const part = require(path.join(directory, name));
    if (typeof part.build === 'function') await part.build({ root, out, log: (line) => process.stdout.write(`  ${line}\n`) });
    else await part.main();
    process.stdout.write(`sdk:package ${name} done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  }
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
