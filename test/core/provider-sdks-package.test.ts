/**
 * The official-SDK suite's package stays test-only and pinned (docs/guides/provider-sdks.md): its SDKs are exact versions
 * with a lockfile, the root install does not grow by them, `npm test` installs it before mocha runs, and mocha loads its
 * ES-module tests.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as Record<string, unknown>;

describe('test/provider-sdks package', () => {
  const sdkPackage = readJson('test/provider-sdks/package.json') as { private?: boolean; dependencies: Record<string, string> };
  const sdkLock = readJson('test/provider-sdks/package-lock.json') as { packages: Record<string, { version?: string }> };
  const rootPackage = readJson('package.json') as { scripts: Record<string, string>; dependencies: Record<string, string>; devDependencies: Record<string, string> };

  it('pins every SDK to an exact version, and the lockfile holds that version', () => {
    expect(sdkPackage.private).to.equal(true);
    const names = Object.keys(sdkPackage.dependencies);
    expect(names.length).to.be.greaterThan(15);
    for (const name of names) {
      expect(sdkPackage.dependencies[name], name).to.match(/^\d+\.\d+\.\d+$/);
      expect(sdkLock.packages[`node_modules/${name}`]?.version, `${name} in package-lock.json`).to.equal(sdkPackage.dependencies[name]);
    }
  });

  it('keeps the SDKs out of the root install', () => {
    const root = new Set([...Object.keys(rootPackage.dependencies), ...Object.keys(rootPackage.devDependencies)]);
    // openai and @anthropic-ai/sdk were root dev dependencies before the suite (test/providers/providers.test.ts); ws is
    // the gateway's own WebSocket library and, here, the peer dependency the openai package's realtime client loads.
    const shared = new Set(['openai', '@anthropic-ai/sdk', 'ws']);
    const added = Object.keys(sdkPackage.dependencies).filter((name) => root.has(name) && !shared.has(name));
    expect(added).to.deep.equal([]);
  });

  it('is installed by npm test and loaded by mocha, never compiled by the root tsc', () => {
    expect(rootPackage.scripts.pretest).to.include('node scripts/install-provider-sdks.js');
    // The whole-suite spec of .mocharc.js (no test files named on the command line).
    const mocharc = readFileSync(path.join(ROOT, '.mocharc.js'), 'utf8');
    expect(mocharc).to.include("'test/provider-sdks/*.test.mjs'");
    expect((readJson('tsconfig.json') as { exclude: string[] }).exclude).to.include('test/provider-sdks');
  });
});
