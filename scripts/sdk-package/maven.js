// dist/sdk/maven: a Maven repository layout with dev.tollgate:tollgate-core (JAR) and dev.tollgate:tollgate-android
// (AAR: classes.jar, AndroidManifest.xml, proguard.txt with the consumer rules, R.txt), each with a POM naming its
// dependencies and SHA-1/MD5 files as Maven repositories carry them. Built with Maven against android-all
// (sdk/android/typecheck), since Gradle's Android plugin is not reachable from CI machines; the classes are the same
// Kotlin compiler's output that a Gradle build would package.
'use strict';
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const GROUP = 'dev.tollgate';

function maven(root) {
  return execFileSync('bash', [path.join(root, '.ci', 'maven-tool')], { encoding: 'utf8' }).trim();
}

function pomVersion(file, property) {
  const text = fs.readFileSync(file, 'utf8');
  const match = new RegExp(`<${property}>([^<]+)</${property}>`).exec(text);
  if (!match) throw new Error(`${property} not found in ${file}`);
  return match[1];
}

function pom(artifactId, version, packaging, description, dependencies) {
  const deps = dependencies.map(([group, artifact, depVersion, scope]) => `    <dependency>
      <groupId>${group}</groupId>
      <artifactId>${artifact}</artifactId>
      <version>${depVersion}</version>
      <scope>${scope}</scope>
    </dependency>`).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>${GROUP}</groupId>
  <artifactId>${artifactId}</artifactId>
  <version>${version}</version>
  <packaging>${packaging}</packaging>
  <name>${artifactId}</name>
  <description>${description}</description>
  <licenses>
    <license>
      <name>Apache-2.0</name>
      <url>https://www.apache.org/licenses/LICENSE-2.0</url>
    </license>
  </licenses>
  <dependencies>
${deps}
  </dependencies>
</project>
`;
}

/** Writes a file and its .sha1 and .md5, as Maven repositories hold them. */
function publish(directory, name, content) {
  fs.mkdirSync(directory, { recursive: true });
  fs.writeFileSync(path.join(directory, name), content);
  for (const algorithm of ['sha1', 'md5']) {
    fs.writeFileSync(path.join(directory, `${name}.${algorithm}`), crypto.createHash(algorithm).update(content).digest('hex'));
  }
}

/** A zip of `directory`'s contents (the JDK's jar tool, without a manifest of its own). */
function zip(directory, file) {
  execFileSync('jar', ['--create', '--no-manifest', '--file', file, '-C', directory, '.']);
  return fs.readFileSync(file);
}

async function build({ root, out, log }) {
  const android = path.join(root, 'sdk', 'android');
  const corePom = path.join(android, 'core', 'pom.xml');
  const typecheckPom = path.join(android, 'typecheck', 'pom.xml');
  const version = /<artifactId>tollgate-core<\/artifactId>\s*<version>([^<]+)<\/version>/.exec(fs.readFileSync(corePom, 'utf8'))[1];
  const kotlin = pomVersion(corePom, 'kotlin.version');
  const coroutines = pomVersion(corePom, 'coroutines.version');
  const serialization = pomVersion(corePom, 'serialization.version');
  const okhttp = pomVersion(corePom, 'okhttp.version');
  const gradleLibrary = fs.readFileSync(path.join(android, 'tollgate', 'build.gradle.kts'), 'utf8');
  const minSdk = /minSdk\s*=\s*(\d+)/.exec(gradleLibrary)[1];
  const catalog = fs.readFileSync(path.join(android, 'gradle', 'libs.versions.toml'), 'utf8');
  const integrity = /playIntegrity\s*=\s*"([^"]+)"/.exec(catalog)[1];

  log(`mvn package in sdk/android/typecheck (core ${version}, android library against android-all)`);
  execFileSync(maven(root), ['-q', '-B', '-Dmaven.test.skip=true', 'package'], { cwd: path.dirname(typecheckPom), stdio: ['ignore', 'inherit', 'inherit'] });

  const repository = path.join(out, 'maven');
  fs.rmSync(repository, { recursive: true, force: true });

  // tollgate-core: the JAR Maven built, and its POM.
  const coreDirectory = path.join(repository, ...GROUP.split('.'), 'tollgate-core', version);
  publish(coreDirectory, `tollgate-core-${version}.jar`, fs.readFileSync(path.join(android, 'core', 'target', `tollgate-core-${version}.jar`)));
  publish(coreDirectory, `tollgate-core-${version}.pom`, pom('tollgate-core', version, 'jar',
    'Platform-free part of the Tollgate Android SDK: request building, errors, streams, realtime, OkHttp client.', [
      ['org.jetbrains.kotlin', 'kotlin-stdlib', kotlin, 'compile'],
      ['org.jetbrains.kotlinx', 'kotlinx-coroutines-core-jvm', coroutines, 'compile'],
      ['org.jetbrains.kotlinx', 'kotlinx-serialization-json-jvm', serialization, 'compile'],
      ['com.squareup.okhttp3', 'okhttp', okhttp, 'compile'],
    ]));

  // tollgate-android: an AAR (https://developer.android.com/studio/projects/android-library#aar-contents).
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-aar-'));
  try {
    const classes = path.join(android, 'typecheck', 'tollgate', 'target', 'classes');
    if (!fs.existsSync(path.join(classes, 'dev', 'tollgate', 'Tollgate.class'))) throw new Error('the Android library did not compile');
    const aar = path.join(staging, 'aar');
    fs.mkdirSync(aar);
    zip(classes, path.join(aar, 'classes.jar'));
    // The library manifest as AGP writes it into an AAR: the namespace as package, and minSdk.
    const manifest = fs.readFileSync(path.join(android, 'tollgate', 'src', 'main', 'AndroidManifest.xml'), 'utf8')
      .replace('<manifest xmlns:android="http://schemas.android.com/apk/res/android">',
        `<manifest xmlns:android="http://schemas.android.com/apk/res/android"\n    package="dev.tollgate">\n    <uses-sdk android:minSdkVersion="${minSdk}" />`);
    fs.writeFileSync(path.join(aar, 'AndroidManifest.xml'), manifest);
    fs.copyFileSync(path.join(android, 'tollgate', 'consumer-rules.pro'), path.join(aar, 'proguard.txt'));
    fs.writeFileSync(path.join(aar, 'R.txt'), '');
    const androidDirectory = path.join(repository, ...GROUP.split('.'), 'tollgate-android', version);
    publish(androidDirectory, `tollgate-android-${version}.aar`, zip(aar, path.join(staging, 'tollgate-android.aar')));
    publish(androidDirectory, `tollgate-android-${version}.pom`, pom('tollgate-android', version, 'aar',
      'The Tollgate SDK for Android: device attestation, AI provider calls through a Tollgate gateway, realtime sessions.', [
        [GROUP, 'tollgate-core', version, 'compile'],
        ['com.squareup.okhttp3', 'okhttp', okhttp, 'compile'],
        ['org.jetbrains.kotlinx', 'kotlinx-coroutines-android', coroutines, 'runtime'],
        ['com.google.android.play', 'integrity', integrity, 'runtime'],
      ]));
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  log(`wrote ${path.relative(root, repository)} (tollgate-core ${version} JAR, tollgate-android ${version} AAR)`);
}

module.exports = { build };
