/**
 * One version for the gateway and the SDKs: `tollgate --version`, package.json, the newest release in CHANGELOG.md and
 * every SDK's declared version (package manifests and the constants the SDKs send in `Tollgate-SDK`) agree.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const CHECKOUT = path.resolve(__dirname, '..', '..', '..');
const CLI = path.resolve(__dirname, '..', '..', 'bin', 'tollgate.js');

function read(file: string): string {
  return readFileSync(path.join(CHECKOUT, file), 'utf8');
}

function capture(file: string, pattern: RegExp): string {
  const match = pattern.exec(read(file));
  if (!match) throw new Error(`${file}: no version matching ${pattern}`);
  return match[1]!;
}

describe('one version scheme', () => {
  const release = capture('CHANGELOG.md', /^## (\d+\.\d+\.\d+) - \d{4}-\d{2}-\d{2}$/m);

  it('tollgate --version and package.json name the newest release of CHANGELOG.md', () => {
    const result = spawnSync(process.execPath, [CLI, '--version'], { encoding: 'utf8' });
    expect(result.status).to.equal(0);
    expect(result.stdout.trim()).to.equal(release);
    expect((JSON.parse(read('package.json')) as { version: string }).version).to.equal(release);
  });

  it('every SDK declares the same version', () => {
    const declared: Record<string, string> = {
      'sdk/react-native/package.json': capture('sdk/react-native/package.json', /"version": "([^"]+)"/),
      'sdk/react-native/src/request-builder.ts': capture('sdk/react-native/src/request-builder.ts', /SDK_VERSION = '([^']+)'/),
      'sdk/flutter/pubspec.yaml': capture('sdk/flutter/pubspec.yaml', /^version: (\S+)$/m),
      'sdk/flutter/lib/src/client.dart': capture('sdk/flutter/lib/src/client.dart', /tollgateVersion = '([^']+)'/),
      'sdk/flutter/ios/tollgate.podspec': capture('sdk/flutter/ios/tollgate.podspec', /s\.version\s*= '([^']+)'/),
      'TollgateSDK.podspec': capture('TollgateSDK.podspec', /s\.version\s*= '([^']+)'/),
      'sdk/ios/Sources/TollgateSDK/Tollgate.swift': capture('sdk/ios/Sources/TollgateSDK/Tollgate.swift', /static let version = "([^"]+)"/),
      'sdk/android/core/pom.xml': capture('sdk/android/core/pom.xml', /<artifactId>tollgate-core<\/artifactId>\s*<version>([^<]+)</),
      'sdk/android/core/build.gradle.kts': capture('sdk/android/core/build.gradle.kts', /^version = "([^"]+)"/m),
      'sdk/android/tollgate/build.gradle.kts': capture('sdk/android/tollgate/build.gradle.kts', /^version = "([^"]+)"/m),
      'sdk/android/core/src/main/kotlin/dev/tollgate/core/TollgateClient.kt': capture('sdk/android/core/src/main/kotlin/dev/tollgate/core/TollgateClient.kt', /VERSION: String = "([^"]+)"/),
    };
    for (const [file, version] of Object.entries(declared)) expect(version, file).to.equal(release);
  });
});
