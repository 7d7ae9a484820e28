#!/usr/bin/env node
/**
 * Installs the test-only package test/provider-sdks (the official provider SDKs the official-SDK suite drives) with
 * `npm ci`, from its own lockfile, only when its node_modules is missing or older than the lockfile. Run by `npm test`
 * (pretest) and so by .ci/run; `npm install && npm start` never downloads these SDKs.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const directory = path.join(__dirname, '..', 'test', 'provider-sdks');
const lockfile = path.join(directory, 'package-lock.json');
// npm ci writes node_modules/.package-lock.json last: its presence and age say whether the install is complete and current.
const installed = path.join(directory, 'node_modules', '.package-lock.json');

function fresh() {
  try {
    return fs.statSync(installed).mtimeMs >= fs.statSync(lockfile).mtimeMs;
  } catch {
    return false;
  }
}

if (fresh()) process.exit(0);
console.log('Installing the official provider SDKs for the test suite (test/provider-sdks)…');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
// Windows runs npm.cmd through a shell (Node refuses to spawn .cmd files directly).
const result = spawnSync(npm, ['ci', '--prefix', directory, '--no-audit', '--no-fund', '--ignore-scripts'], { stdio: 'inherit', shell: process.platform === 'win32' });
if (result.status !== 0) process.exit(result.status ?? 1);
// npm ci keeps the lockfile's mtime; touch the marker so a later run sees the install as current.
const now = new Date();
fs.utimesSync(installed, now, now);
