#!/usr/bin/env node
/**
 * `npm run sdk:package`, React Native part: the `@tollgate/react-native` tarball in dist/sdk/, as `npm install` gets it
 * from a registry: compiled `lib/` (CommonJS + declarations, from src/ with the package's own tsconfig), `src/` (Metro
 * reads `react-native`/`source`), the native module (ios/, android/), the podspec, README and LICENSE, and the Android
 * SDK's Maven repository (dist/sdk/maven, built by the Android part) as android/maven, which android/build.gradle
 * resolves `dev.tollgate:tollgate-android` from. Runs alone (`node scripts/sdk-package/react-native.js`) or from
 * scripts/sdk-package.js. Needs no network: `npm pack` reads nothing from a registry.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const PACKAGE = path.join(ROOT, 'sdk', 'react-native');
const OUT = path.resolve(process.env.TOLLGATE_SDK_OUT || path.join(ROOT, 'dist', 'sdk'));

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
  return result.stdout;
}

/** Copies `from` to `to`, skipping build outputs and local state. */
function copy(from, to) {
  const skip = new Set(['node_modules', 'build', 'lib', '.gradle', '.cxx', 'example']);
  fs.cpSync(from, to, { recursive: true, filter: (source) => !skip.has(path.basename(source)) || source === from });
}

function main() {
  const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE, 'package.json'), 'utf8'));
  const staging = path.join(OUT, 'staging', 'react-native');
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  for (const entry of ['package.json', 'README.md', 'TollgateReactNative.podspec', 'tsconfig.json']) fs.copyFileSync(path.join(PACKAGE, entry), path.join(staging, entry));
  fs.copyFileSync(path.join(ROOT, 'LICENSE'), path.join(staging, 'LICENSE'));
  for (const folder of ['src', 'ios', 'android']) copy(path.join(PACKAGE, folder), path.join(staging, folder));

  // lib/: the package's own tsconfig (no DOM, no Node, no react-native types), compiled by the repository's TypeScript.
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  run(process.execPath, [tsc, '-p', path.join(staging, 'tsconfig.json'), '--outDir', path.join(staging, 'lib')]);
  if (!fs.existsSync(path.join(staging, 'lib', 'index.js'))) throw new Error('lib/index.js was not produced');

  const maven = path.join(OUT, 'maven');
  if (fs.existsSync(maven)) fs.cpSync(maven, path.join(staging, 'android', 'maven'), { recursive: true });
  else console.warn(`react-native: ${path.relative(ROOT, maven)} is missing (the Android part builds it): the tarball has no android/maven`);

  // The packed manifest: `prepare` would run tsc in the installing app, which has no TypeScript; lib/ is built here.
  const packed = { ...manifest, files: [...manifest.files, 'LICENSE', 'android/maven'] };
  delete packed.scripts.prepare;
  fs.writeFileSync(path.join(staging, 'package.json'), `${JSON.stringify(packed, null, 2)}\n`);

  const name = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', OUT], { cwd: staging });
  const tarball = path.join(OUT, JSON.parse(name)[0].filename);
  fs.rmSync(path.join(OUT, 'staging'), { recursive: true, force: true });
  console.log(`react-native: ${path.relative(ROOT, tarball)}`);
  return tarball;
}

if (require.main === module) {
  try {
    main();
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
module.exports = { main };
