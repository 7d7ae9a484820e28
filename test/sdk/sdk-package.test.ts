/**
 * `npm run sdk:package`, the Android and Flutter parts (scripts/sdk-package/maven.js, flutter.js), run as CI runs them:
 * dist/sdk/maven is a Maven repository with the core JAR and the Android AAR (the entries an AAR must hold:
 * https://developer.android.com/studio/projects/android-library#aar-contents), each with a POM naming its dependencies;
 * dist/sdk/flutter holds the Flutter package archive with that Maven folder bundled, from which the plugin's Android build
 * resolves dev.tollgate:tollgate-android by its coordinates.
 */
import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mavenCommand, requireTool } from '../support/services';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MAVEN = path.join(ROOT, 'dist', 'sdk', 'maven', 'dev', 'tollgate');

function entries(archive: string): string[] {
  const result = spawnSync('jar', ['tf', archive], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  expect(result.status, result.stderr).to.equal(0);
  return result.stdout.split('\n').filter(Boolean).map((entry) => entry.replace(/^\.\//, ''));
}

function extract(archive: string, entry: string, directory: string): string {
  const result = spawnSync('jar', ['xf', archive, entry], { cwd: directory, encoding: 'utf8' });
  expect(result.status, result.stderr).to.equal(0);
  return path.join(directory, entry);
}

describe('npm run sdk:package: Maven repository and Flutter archive (dist/sdk)', function () {
  this.timeout(25 * 60 * 1000);
  let version: string;

  before(async function () {
    requireTool(this, mavenCommand() !== null, 'Maven is missing and .ci/maven-tool could not fetch it');
    const status = await new Promise<number | null>((resolve) => {
      // Every part, as `npm run sdk:package` runs them (maven first: the others copy its output).
      const child = spawn('node', [path.join(ROOT, 'scripts', 'sdk-package.js')], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
      child.on('close', resolve);
    });
    expect(status).to.equal(0);
    version = /<artifactId>tollgate-core<\/artifactId>\s*<version>([^<]+)/.exec(readFileSync(path.join(ROOT, 'sdk', 'android', 'core', 'pom.xml'), 'utf8'))![1]!;
  });

  it('holds the Android AAR with classes.jar, the library manifest (no <application>), consumer rules and R.txt', function () {
    const aar = path.join(MAVEN, 'tollgate-android', version, `tollgate-android-${version}.aar`);
    expect(existsSync(aar)).to.equal(true);
    expect(entries(aar)).to.include.members(['classes.jar', 'AndroidManifest.xml', 'proguard.txt', 'R.txt']);
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'tollgate-aar-test-'));
    try {
      const manifest = readFileSync(extract(aar, 'AndroidManifest.xml', scratch), 'utf8');
      expect(manifest).to.include('package="dev.tollgate"');
      expect(manifest).to.match(/android:minSdkVersion="26"/);
      expect(manifest.replace(/<!--[\s\S]*?-->/g, '')).not.to.include('<application');
      expect(readFileSync(extract(aar, 'proguard.txt', scratch), 'utf8')).to.include('-dontwarn java.net.http.**');
      const classes = entries(extract(aar, 'classes.jar', scratch));
      expect(classes).to.include.members(['dev/tollgate/Tollgate.class', 'dev/tollgate/AndroidAttestor.class', 'dev/tollgate/TollgateBridge.class']);
      expect(classes.filter((entry) => entry.startsWith('dev/tollgate/core/')), 'core classes ship in tollgate-core').to.deep.equal([]);
      expect(classes.filter((entry) => /^(com\/google|android)\//.test(entry)), 'no stub classes').to.deep.equal([]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('holds the core JAR, and POMs naming every dependency, with checksums', function () {
    const jar = path.join(MAVEN, 'tollgate-core', version, `tollgate-core-${version}.jar`);
    expect(entries(jar)).to.include.members(['dev/tollgate/core/TollgateClient.class', 'dev/tollgate/core/RealtimeSession.class', 'dev/tollgate/core/TollgateInterceptor.class']);
    const corePom = readFileSync(path.join(MAVEN, 'tollgate-core', version, `tollgate-core-${version}.pom`), 'utf8');
    for (const artifact of ['kotlin-stdlib', 'kotlinx-coroutines-core-jvm', 'kotlinx-serialization-json-jvm', 'okhttp']) expect(corePom).to.include(`<artifactId>${artifact}</artifactId>`);
    expect(corePom).to.include('<packaging>jar</packaging>');
    const androidPom = readFileSync(path.join(MAVEN, 'tollgate-android', version, `tollgate-android-${version}.pom`), 'utf8');
    expect(androidPom).to.include('<packaging>aar</packaging>');
    expect(androidPom).to.match(/<groupId>dev\.tollgate<\/groupId>\s*<artifactId>tollgate-core<\/artifactId>\s*<version>[^<]+<\/version>\s*<scope>compile<\/scope>/);
    for (const artifact of ['okhttp', 'kotlinx-coroutines-android', 'integrity']) expect(androidPom).to.include(`<artifactId>${artifact}</artifactId>`);
    for (const file of [`tollgate-android-${version}.aar`, `tollgate-android-${version}.pom`]) {
      expect(readFileSync(path.join(MAVEN, 'tollgate-android', version, `${file}.sha1`), 'utf8')).to.match(/^[0-9a-f]{40}$/);
    }
  });

  it('holds the Flutter archive, whose Android build names dev.tollgate:tollgate-android from its own Maven folder and no mavenLocal()', function () {
    const archive = path.join(ROOT, 'dist', 'sdk', 'flutter', `tollgate-${version}.tar.gz`);
    const listing = spawnSync('tar', ['-tzf', archive], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(listing.status).to.equal(0);
    const files = listing.stdout.split('\n').map((entry) => entry.replace(/^\.\//, ''));
    const bundled = `android/maven/dev/tollgate`;
    expect(files).to.include.members([
      'pubspec.yaml', 'lib/tollgate.dart', 'android/build.gradle', 'android/consumer-rules.pro',
      'android/src/main/kotlin/dev/tollgate/flutter/TollgatePlugin.kt',
      `${bundled}/tollgate-android/${version}/tollgate-android-${version}.aar`,
      `${bundled}/tollgate-android/${version}/tollgate-android-${version}.pom`,
      `${bundled}/tollgate-core/${version}/tollgate-core-${version}.jar`,
      `${bundled}/tollgate-core/${version}/tollgate-core-${version}.pom`,
      'ios/tollgate.podspec',
    ]);
    expect(files.filter((entry) => /(^|\/)(build|\.dart_tool)\//.test(entry))).to.deep.equal([]);
    expect(files.filter((entry) => entry.startsWith('android/src/tollgate-sdk')), 'no SDK sources: the AAR is used').to.deep.equal([]);
    // The bundled AAR is the one in dist/sdk/maven.
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'tollgate-flutter-archive-'));
    try {
      const aar = `${bundled}/tollgate-android/${version}/tollgate-android-${version}.aar`;
      expect(spawnSync('tar', ['-xzf', archive, '-C', scratch, `./${aar}`, './android/build.gradle']).status).to.equal(0);
      expect(readFileSync(path.join(scratch, aar)).equals(readFileSync(path.join(MAVEN, 'tollgate-android', version, `tollgate-android-${version}.aar`)))).to.equal(true);
      const gradle = readFileSync(path.join(scratch, 'android', 'build.gradle'), 'utf8').replace(/\/\/.*$/gm, '');
      expect(gradle).not.to.match(/mavenLocal|buildscript/);
      expect(gradle).to.include(`'dev.tollgate:tollgate-android:${version}'`);
      expect(gradle).to.include("file('maven')");
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('a fresh React Native project installs the tarball from dist/sdk: podspec, Android sources with the same AAR, compiled JavaScript', function () {
    this.timeout(240_000);
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'tollgate-rn-fresh-'));
    try {
      writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'fresh-app', version: '1.0.0', private: true }));
      const tarball = path.join(ROOT, 'dist', 'sdk', `tollgate-react-native-${version}.tgz`);
      const install = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--legacy-peer-deps', tarball], { cwd: scratch, encoding: 'utf8' });
      expect(install.status, `${install.stdout}${install.stderr}`).to.equal(0);
      const installed = path.join(scratch, 'node_modules', '@tollgate', 'react-native');
      const podspec = readFileSync(path.join(installed, 'TollgateReactNative.podspec'), 'utf8');
      expect(podspec).to.match(/s\.dependency 'TollgateSDK'/);
      expect(podspec).to.match(/:git => git_url, :tag => s\.version\.to_s/);
      expect(existsSync(path.join(installed, 'android', 'src', 'main', 'kotlin', 'dev', 'tollgate', 'reactnative', 'TollgateNativeModule.kt'))).to.equal(true);
      const aar = path.join('dev', 'tollgate', 'tollgate-android', version, `tollgate-android-${version}.aar`);
      expect(readFileSync(path.join(installed, 'android', 'maven', aar)).equals(readFileSync(path.join(ROOT, 'dist', 'sdk', 'maven', aar)))).to.equal(true);
      expect(existsSync(path.join(installed, 'android', 'maven', 'dev', 'tollgate', 'tollgate-core', version, `tollgate-core-${version}.pom`))).to.equal(true);
      const loaded = spawnSync(process.execPath, ['-e', "const sdk = require('@tollgate/react-native'); console.log(typeof sdk.Tollgate.realtime, typeof sdk.createTollgateClient)"], { cwd: scratch, encoding: 'utf8' });
      expect(loaded.stdout.trim(), loaded.stderr).to.equal('function function');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('the React Native Android build names the same coordinates and no mavenLocal()', function () {
    const gradle = readFileSync(path.join(ROOT, 'sdk', 'react-native', 'android', 'build.gradle'), 'utf8').replace(/\/\/.*$/gm, '');
    expect(gradle).to.include(`implementation 'dev.tollgate:tollgate-android:${version}'`);
    expect(gradle).not.to.match(/mavenLocal/);
  });
});
