#!/usr/bin/env node
/**
 * `npm run sdk:package`, CocoaPods part: the podspecs in dist/sdk/podspecs, as `pod trunk push` publishes them:
 * TollgateSDK (the Swift SDK, sources in sdk/ios) and TollgateReactNative (for reference: CocoaPods reads it from the
 * npm package through autolinking). Checks what a release needs: the source is this repository's git address and the
 * version's tag, the license is Apache-2.0, and TollgateSDK names every platform the root Package.swift supports.
 * TOLLGATE_GIT_URL sets the repository address written into the copies. Runs alone or from scripts/sdk-package.js.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const OUT = path.resolve(process.env.TOLLGATE_SDK_OUT || path.join(ROOT, 'dist', 'sdk'));
const DEFAULT_GIT_URL = 'https://github.com/tollgate-dev/tollgate.git';

const PLATFORMS = { iOS: 'ios', macOS: 'osx', tvOS: 'tvos', watchOS: 'watchos', visionOS: 'visionos' };

function check(name, text) {
  const problems = [];
  if (!/:git\s*=>/.test(text) || !/:tag\s*=>/.test(text)) problems.push('source is not { :git, :tag }');
  if (/:path\s*=>/.test(text.replace(/^\s*#.*$/gm, ''))) problems.push('source is a local :path');
  if (!/:type => 'Apache-2\.0'/.test(text) && !/:type => package\['license'\]/.test(text)) problems.push('license is not Apache-2.0');
  if (/\bMIT\b/.test(text)) problems.push('mentions MIT');
  if (name === 'TollgateSDK.podspec') {
    const manifest = fs.readFileSync(path.join(ROOT, 'Package.swift'), 'utf8');
    for (const [swiftName, podName] of Object.entries(PLATFORMS)) {
      if (manifest.includes(`.${swiftName}(`) && !new RegExp(`s\\.${podName}\\.deployment_target`).test(text)) problems.push(`no ${podName} deployment target`);
    }
  }
  if (problems.length) throw new Error(`${name}: ${problems.join('; ')}`);
}

function main() {
  const target = path.join(OUT, 'podspecs');
  fs.mkdirSync(target, { recursive: true });
  const gitUrl = process.env.TOLLGATE_GIT_URL || DEFAULT_GIT_URL;
  const written = [];
  // The Flutter plugin's podspec travels in its package archive (flutter.js): checked here by the same rules, not copied.
  check('tollgate.podspec', fs.readFileSync(path.join(ROOT, 'sdk', 'flutter', 'ios', 'tollgate.podspec'), 'utf8'));
  for (const source of [path.join(ROOT, 'TollgateSDK.podspec'), path.join(ROOT, 'sdk', 'react-native', 'TollgateReactNative.podspec')]) {
    const name = path.basename(source);
    let text = fs.readFileSync(source, 'utf8');
    check(name, text);
    text = text.split(DEFAULT_GIT_URL).join(gitUrl);
    if (name === 'TollgateReactNative.podspec') {
      // Outside the npm package, package.json is not beside it: the version and fields are written in.
      const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'sdk', 'react-native', 'package.json'), 'utf8'));
      text = text.replace(/^package = JSON\.parse\(.*\)$/m, `package = ${JSON.stringify({ version: manifest.version, description: manifest.description, license: manifest.license })}`);
    }
    fs.writeFileSync(path.join(target, name), text);
    written.push(path.relative(ROOT, path.join(target, name)));
  }
  console.log(`podspecs: ${written.join(', ')}`);
  return written;
}

if (require.main === module) {
  try {
    main();
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
module.exports = { main, check };
