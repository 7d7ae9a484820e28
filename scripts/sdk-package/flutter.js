// dist/sdk/flutter/tollgate-<version>.tar.gz: the Flutter package as `flutter pub` reads it (a hosted-style archive of
// sdk/flutter, without build output), with the Tollgate Android SDK as a Maven folder under android/maven (a copy of
// dist/sdk/maven, which the maven part writes first): the plugin's Android build depends on
// dev.tollgate:tollgate-android by its coordinates from there (android/build.gradle): no mavenLocal(), no line in the
// app. Unpack it and depend on it with `path:`, or host it.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const SKIP = new Set(['.dart_tool', 'build', '.packages', 'pubspec.lock', '.flutter-plugins', '.flutter-plugins-dependencies']);

function copyTree(from, to) {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    if (entry.isDirectory()) copyTree(source, target);
    else if (entry.isFile()) fs.copyFileSync(source, target);
  }
}

async function build({ root, out, log }) {
  const flutter = path.join(root, 'sdk', 'flutter');
  const version = /^version:\s*(\S+)/m.exec(fs.readFileSync(path.join(flutter, 'pubspec.yaml'), 'utf8'))[1];
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-flutter-'));
  try {
    const packageDirectory = path.join(staging, 'tollgate');
    copyTree(flutter, packageDirectory);
    const maven = path.join(out, 'maven');
    if (!fs.existsSync(path.join(maven, 'dev', 'tollgate', 'tollgate-android', version))) {
      throw new Error(`flutter: ${path.relative(root, maven)} has no dev.tollgate:tollgate-android:${version}; run the maven part first (npm run sdk:package)`);
    }
    copyTree(maven, path.join(packageDirectory, 'android', 'maven'));
    const license = path.join(root, 'LICENSE');
    if (fs.existsSync(license)) fs.copyFileSync(license, path.join(packageDirectory, 'LICENSE'));
    const directory = path.join(out, 'flutter');
    fs.rmSync(directory, { recursive: true, force: true });
    fs.mkdirSync(directory, { recursive: true });
    const archive = path.join(directory, `tollgate-${version}.tar.gz`);
    execFileSync('tar', ['-czf', archive, '-C', packageDirectory, '.']);
    log(`wrote ${path.relative(root, archive)}`);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

module.exports = { build };
