// The build Stryker runs in its sandbox (stryker.config.mjs `buildCommand`, which runs no shell): what `npm run build`
// compiles, without its clean step (the sandbox starts without dist/) and without regenerating the provider reference.
'use strict';
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const tsc = require.resolve('typescript/bin/tsc');
const run = (file, args) => execFileSync(process.execPath, [file, ...args], { stdio: 'inherit' });
run(tsc, ['-p', 'tsconfig.json']);
run(tsc, ['-p', 'dashboard/tsconfig.json']);
run(path.join(__dirname, 'copy-dashboard.js'), []);
