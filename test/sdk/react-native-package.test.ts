/**
 * The React Native package as a user installs it: `scripts/sdk-package/react-native.js` packs the tarball into a
 * scratch dist folder, and `npm install` (offline, from the tarball; peer dependencies left to the app) puts it into an
 * empty project. Checks what autolinking, CocoaPods, Gradle and Metro read there, and that the compiled JavaScript loads.
 * Also checks the podspecs `scripts/sdk-package/podspecs.js` writes for a release.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options, env: { ...process.env, ...options.env } });
  expect(result.status, `${command} ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).to.equal(0);
  return result.stdout;
}

describe('react-native SDK: the packed tarball installed into an empty project', function () {
  this.timeout(240_000);
  let scratch: string;
  let installed: string;
  let out: string;

  before(() => {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'tollgate-rn-package-'));
    out = path.join(scratch, 'dist-sdk');
    // A Maven folder as the Android part leaves it, so that the tarball's android/maven can be checked.
    const pom = path.join(out, 'maven', 'dev', 'tollgate', 'tollgate-android', '1.2.0');
    mkdirSync(pom, { recursive: true });
    writeFileSync(path.join(pom, 'tollgate-android-1.2.0.pom'), '<project><groupId>dev.tollgate</groupId><artifactId>tollgate-android</artifactId><version>1.2.0</version></project>\n');
    run(process.execPath, [path.join(ROOT, 'scripts', 'sdk-package', 'react-native.js')], { env: { TOLLGATE_SDK_OUT: out } });
    run(process.execPath, [path.join(ROOT, 'scripts', 'sdk-package', 'podspecs.js')], { env: { TOLLGATE_SDK_OUT: out } });
    const app = path.join(scratch, 'app');
    mkdirSync(app);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'fresh-app', version: '1.0.0', private: true }));
    const tarball = path.join(out, 'tollgate-react-native-1.2.0.tgz');
    expect(existsSync(tarball), 'tarball').to.equal(true);
    // react and react-native are the app's own (peer dependencies): not fetched here.
    run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--legacy-peer-deps', tarball], { cwd: app });
    installed = path.join(app, 'node_modules', '@tollgate', 'react-native');
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('has the podspec autolinking and pod install read, depending on the TollgateSDK pod from a git tag', () => {
    const podspec = readFileSync(path.join(installed, 'TollgateReactNative.podspec'), 'utf8');
    expect(podspec).to.match(/s\.dependency 'TollgateSDK'/);
    expect(podspec).to.match(/:git => git_url, :tag =>/);
    expect(podspec).to.not.match(/:path\s*=>/);
    expect(readFileSync(path.join(installed, 'LICENSE'), 'utf8')).to.match(/Apache License\s+Version 2\.0/);
    expect(existsSync(path.join(installed, 'ios', 'TollgateNative.swift'))).to.equal(true);
    expect(existsSync(path.join(installed, 'ios', 'TollgateNative.mm'))).to.equal(true);
  });

  it('has the Android sources and resolves tollgate-android from its own Maven folder, never mavenLocal()', () => {
    const gradle = readFileSync(path.join(installed, 'android', 'build.gradle'), 'utf8');
    expect(gradle).to.contain("implementation 'dev.tollgate:tollgate-android:1.2.0'");
    expect(gradle).to.not.match(/mavenLocal\(\)/);
    expect(existsSync(path.join(installed, 'android', 'src', 'main', 'kotlin', 'dev', 'tollgate', 'reactnative', 'TollgateNativeModule.kt'))).to.equal(true);
    expect(existsSync(path.join(installed, 'android', 'maven', 'dev', 'tollgate', 'tollgate-android', '1.2.0', 'tollgate-android-1.2.0.pom'))).to.equal(true);
  });

  it('has compiled JavaScript with declarations that loads without React Native, and the codegen spec source', () => {
    const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as { main: string; types: string; scripts?: Record<string, string>; codegenConfig?: unknown };
    expect(manifest.main).to.equal('lib/index.js');
    expect(manifest.scripts?.prepare, 'no build step in the app').to.equal(undefined);
    expect(existsSync(path.join(installed, manifest.types))).to.equal(true);
    expect(existsSync(path.join(installed, 'src', 'NativeTollgate.ts'))).to.equal(true);
    const loaded = run(process.execPath, ['-e', "const sdk = require('@tollgate/react-native'); console.log(JSON.stringify([typeof sdk.Tollgate.realtime, typeof sdk.Tollgate.me, typeof sdk.Tollgate.setUserTokenProvider, typeof sdk.Tollgate.fetch, typeof sdk.createTollgateClient]))"], { cwd: path.dirname(path.dirname(path.dirname(installed))) });
    expect(JSON.parse(loaded)).to.deep.equal(['function', 'function', 'function', 'function', 'function']);
  });

  it('writes release podspecs: git source and tag, Apache-2.0, every platform of Package.swift', () => {
    const sdk = readFileSync(path.join(out, 'podspecs', 'TollgateSDK.podspec'), 'utf8');
    expect(sdk).to.match(/s\.source\s+=\s+\{ :git => .*, :tag => s\.version\.to_s \}/);
    expect(sdk).to.match(/:type => 'Apache-2\.0'/);
    for (const platform of ['ios', 'osx', 'tvos', 'watchos', 'visionos']) expect(sdk).to.match(new RegExp(`s\\.${platform}\\.deployment_target`));
    const rn = readFileSync(path.join(out, 'podspecs', 'TollgateReactNative.podspec'), 'utf8');
    expect(rn).to.match(/package = \{"version":"1\.2\.0"/);
  });
});

describe('Swift package: installable by URL and tag', () => {
  it('has Package.swift at the repository root with the TollgateSDK library over sdk/ios, and no type named like its module', () => {
    const manifest = readFileSync(path.join(ROOT, 'Package.swift'), 'utf8');
    expect(manifest).to.match(/^\/\/ swift-tools-version:6\.0/);
    expect(manifest).to.contain('.library(name: "TollgateSDK", targets: ["TollgateSDK"])');
    expect(manifest).to.contain('path: "sdk/ios/Sources/TollgateSDK"');
    expect(existsSync(path.join(ROOT, 'sdk', 'ios', 'Package.swift')), 'a second manifest').to.equal(false);
    const sources = run('git', ['ls-files', 'sdk/ios/Sources'], { cwd: ROOT }).trim().split('\n').filter((file) => file.endsWith('.swift'));
    expect(sources.length).to.be.greaterThan(10);
    for (const file of sources) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      expect(text, file).to.not.match(/\b(?:enum|struct|class|actor|protocol|typealias)\s+TollgateSDK\b/);
    }
    expect(readFileSync(path.join(ROOT, 'LICENSE'), 'utf8')).to.match(/Apache License\s+Version 2\.0, January 2004/);
  });

  it('every podspec in the repository sources a git tag and says Apache-2.0', () => {
    const podspecs = run('git', ['ls-files', '*.podspec'], { cwd: ROOT }).trim().split('\n');
    expect(podspecs).to.include.members(['TollgateSDK.podspec', 'sdk/flutter/ios/tollgate.podspec', 'sdk/react-native/TollgateReactNative.podspec']);
    const license = (JSON.parse(readFileSync(path.join(ROOT, 'sdk', 'react-native', 'package.json'), 'utf8')) as { license: string }).license;
    expect(license).to.equal('Apache-2.0');
    for (const file of podspecs) {
      const code = readFileSync(path.join(ROOT, file), 'utf8').replace(/^\s*#.*$/gm, '');
      expect(code, file).to.match(/s\.source\s*=\s*\{ :git => [^,{}]+, :tag => s\.version\.to_s \}/);
      expect(code, file).to.not.match(/:path\s*=>/);
      expect(code, file).to.match(/s\.license\s*=\s*\{ :type => (?:'Apache-2\.0'|package\['license'\])/);
      expect(code, file).to.not.match(/\bMIT\b/);
    }
  });

  it('no Swift type anywhere is named like the module it is compiled into (TollgateSDK, the plugin pod tollgate, TollgateReactNative)', () => {
    const modules: Record<string, string> = { 'sdk/ios/': 'TollgateSDK', 'sdk/flutter/ios/': 'tollgate', 'sdk/react-native/ios/': 'TollgateReactNative' };
    const files = run('git', ['ls-files', '*.swift'], { cwd: ROOT }).trim().split('\n');
    let checked = 0;
    for (const file of files) {
      const folder = Object.keys(modules).find((prefix) => file.startsWith(prefix));
      if (!folder || file.includes('/Tests/') || file.includes('/Example/')) continue;
      checked += 1;
      const declared = [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(/\b(?:enum|struct|class|actor|protocol|typealias)\s+(\w+)/g)].map((match) => match[1]!);
      // Case-insensitive: on a case-insensitive file system the module's and the type's files would collide.
      for (const name of declared) expect(name.toLowerCase(), `${file}: ${name}`).to.not.equal(modules[folder]!.toLowerCase());
    }
    expect(checked).to.be.greaterThan(12);
  });
});
