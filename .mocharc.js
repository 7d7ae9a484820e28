// Mocha's configuration. `npm test` (no files named) runs the whole suite; `npx mocha dist/test/x.test.js` runs only
// the files named (Mocha would otherwise add them to the configured spec and run everything).
'use strict';
const named = process.argv.slice(2).some((argument) => /\.test\.(c|m)?js$/.test(argument));
module.exports = {
  spec: named
    ? []
    : ['dist/test/**/*.test.js', 'dist/providers/*/test/**/*.test.js', 'dist/plugins/*/test/**/*.test.js', 'test/provider-sdks/*.test.mjs'],
  require: ['reflect-metadata'],
  timeout: 30000,
  slow: 2000,
  exit: true,
  'node-option': ['enable-source-maps'],
};
