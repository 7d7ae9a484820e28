/**
 * A real Android compile in `npm test`: sdk/android/tollgate, sdk/android/example, the Flutter plugin's Android side
 * (sdk/flutter/android) and the React Native module's (sdk/react-native/android) compile with Maven
 * (sdk/android/typecheck) against the Android 14 framework jar from Maven Central (org.robolectric:android-all) and
 * react-android from Maven Central. Hand stubs remain only for what Maven Central lacks (Play Integrity, Play services
 * Tasks, the Flutter embedding); this test fails if an android.* stub comes back. Without an installed Maven, Apache
 * Maven itself comes from Maven Central (.ci/maven-tool); under CI=true a missing JDK fails.
 */
import { expect } from 'chai';
import { mavenCommand, requireTool } from '../support/services';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const TYPECHECK = path.join(ROOT, 'sdk', 'android', 'typecheck');

function filesUnder(directory: string, suffix: string): string[] {
  if (!existsSync(directory)) return [];
  return readdirSync(directory).flatMap((name) => {
    const full = path.join(directory, name);
    if (name === 'target') return [];
    return statSync(full).isDirectory() ? filesUnder(full, suffix) : full.endsWith(suffix) ? [full] : [];
  });
}

const read = (...parts: string[]): string => readFileSync(path.join(ROOT, ...parts), 'utf8');

describe('Android compile against android-all (sdk/android/typecheck)', function () {
  this.timeout(25 * 60 * 1000);

  it('keeps hand stubs only for what Maven Central lacks: no android.* stub, android-all 14 on the class path', function () {
    const stubs = filesUnder(TYPECHECK, '.java').filter((file) => !file.includes(`${path.sep}generated${path.sep}`));
    expect(stubs.length).to.be.greaterThan(0);
    for (const file of stubs) {
      const pkg = /^package ([\w.]+);/m.exec(readFileSync(file, 'utf8'))?.[1] ?? '';
      expect(pkg, path.relative(ROOT, file)).to.match(/^(com\.google\.android\.play\.core\.integrity|com\.google\.android\.gms\.tasks|io\.flutter\.[\w.]+)$/);
    }
    const parent = readFileSync(path.join(TYPECHECK, 'pom.xml'), 'utf8');
    expect(parent).to.include('<artifactId>android-all</artifactId>');
    expect(parent).to.match(/<android\.all\.version>14-robolectric-\d+<\/android\.all\.version>/);
    expect(parent).to.match(/<react\.android\.version>0\.\d+\.\d+<\/react\.android\.version>/);
    for (const module of ['tollgate', 'example', 'flutter', 'react-native']) {
      expect(readFileSync(path.join(TYPECHECK, module, 'pom.xml'), 'utf8'), module).to.include('<artifactId>android-all</artifactId>');
    }
  });

  it('the plugins delegate to the SDK: no key generation and no attestation code of their own', function () {
    const plugins = [
      read('sdk', 'flutter', 'android', 'src', 'main', 'kotlin', 'dev', 'tollgate', 'flutter', 'TollgatePlugin.kt'),
      read('sdk', 'react-native', 'android', 'src', 'main', 'kotlin', 'dev', 'tollgate', 'reactnative', 'TollgateNativeModule.kt'),
    ];
    for (const source of plugins) {
      expect(source).to.include('import dev.tollgate.TollgateBridge');
      expect(source).not.to.match(/KeyPairGenerator|KeyGenParameterSpec|KeyStore|Signature\.getInstance|IntegrityManager/);
    }
    expect(plugins[0]).to.include('"dev.tollgate/native"');
    expect(plugins[1]).to.include('"TollgateNative"');
    for (const method of ['getConfiguration', 'configure', 'deviceToken', 'reportError', 'assertion', 'clear']) {
      expect(plugins[0], `Flutter ${method}`).to.include(`"${method}" ->`);
      expect(plugins[1], `React Native ${method}`).to.match(new RegExp(`@ReactMethod\\s+public fun ${method}\\(`));
    }
  });

  it('the example app agrees with the library on minSdk, and the library keeps its state out of backups without manifest attributes', function () {
    const minSdk = (file: string) => Number(/minSdk\s*=?\s*(\d+)/.exec(file)?.[1]);
    const library = minSdk(read('sdk', 'android', 'tollgate', 'build.gradle.kts'));
    expect(library).to.be.greaterThan(0);
    expect(minSdk(read('sdk', 'android', 'example', 'build.gradle.kts'))).to.equal(library);
    expect(minSdk(read('sdk', 'flutter', 'android', 'build.gradle'))).to.equal(library);
    expect(minSdk(read('sdk', 'react-native', 'android', 'build.gradle'))).to.equal(library);
    // A library manifest that sets android:dataExtractionRules / fullBackupContent on <application> makes a fresh
    // Android Studio app (which sets its own) fail its manifest merge: the library sets no <application> at all.
    const manifest = read('sdk', 'android', 'tollgate', 'src', 'main', 'AndroidManifest.xml').replace(/<!--[\s\S]*?-->/g, '');
    expect(manifest).not.to.match(/<application/);
    expect(manifest).to.include('android.permission.INTERNET');
    // The state lives in no_backup/ (Context.getNoBackupFilesDir()), which backup and device transfer never copy.
    const storage = read('sdk', 'android', 'tollgate', 'src', 'main', 'kotlin', 'dev', 'tollgate', 'SecureStorage.kt');
    expect(storage).to.include('NoBackupPreferences(java.io.File(context.noBackupFilesDir, STATE_FILE))');
    expect(storage).not.to.match(/getSharedPreferences/);
  });

  it('mvn package compiles the library, the example, the Flutter plugin and the React Native module', function () {
    const mvn = mavenCommand();
    requireTool(this, mvn !== null, 'Maven is missing and .ci/maven-tool could not fetch it (a JDK, or Debian\'s JDK packages, and Maven Central are needed)');
    const result = spawnSync(mvn!, ['-q', '-B', '-Dmaven.test.skip=true', 'package'], { cwd: TYPECHECK, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(result.status, `${result.stdout.slice(-6000)}${result.stderr.slice(-4000)}`).to.equal(0);
    // Each module's classes came out of the Kotlin compiler (-Werror: no warnings either).
    const compiled: Array<[string, string]> = [
      ['tollgate', 'dev/tollgate/Tollgate.class'],
      ['tollgate', 'dev/tollgate/TollgateBridge.class'],
      ['tollgate', 'dev/tollgate/AndroidAttestor.class'],
      ['example', 'com/example/tollgate/MainActivity.class'],
      ['example', 'com/example/tollgate/ExampleApplication.class'],
      ['flutter', 'dev/tollgate/flutter/TollgatePlugin.class'],
      ['react-native', 'dev/tollgate/reactnative/TollgateNativeModule.class'],
      ['react-native', 'dev/tollgate/reactnative/TollgatePackage.class'],
    ];
    for (const [module, cls] of compiled) {
      expect(existsSync(path.join(TYPECHECK, module, 'target', 'classes', ...cls.split('/'))), `${module}: ${cls}`).to.equal(true);
    }
    // The framework classes came from android-all, not from a stub module.
    const stubClasses = filesUnder(path.join(TYPECHECK, 'stubs-play', 'target', 'classes'), '.class')
      .concat(filesUnder(path.join(TYPECHECK, 'stubs-flutter', 'target', 'classes'), '.class'))
      .map((file) => file.replace(/\\/g, '/'));
    expect(stubClasses.length).to.be.greaterThan(0);
    expect(stubClasses.filter((file) => /\/classes\/android\//.test(file))).to.deep.equal([]);
  });
});
