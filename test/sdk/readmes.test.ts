/**
 * Every SDK README shows initialization at app start and a request through the SDK, and no provider key appears in any
 * SDK file (README, example, source): apps carry an app token and nothing else.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const SDK = path.resolve(__dirname, '..', '..', '..', 'sdk');

/** Shapes of real provider keys (OpenAI, Anthropic, Google, xAI, Groq, ElevenLabs-style hex, AWS). */
const PROVIDER_KEY = /\b(sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{30,}|xai-[A-Za-z0-9]{20,}|gsk_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16})\b/;

const PLATFORMS: Record<string, { readme: string; init: RegExp; request: RegExp }> = {
  'react-native': { readme: 'react-native/README.md', init: /Tollgate\.initialize\(\{\s*appToken/, request: /Tollgate\.request\(\{/ },
  android: { readme: 'android/tollgate/README.md', init: /Tollgate\.initialize\(/, request: /Tollgate\.request\(/ },
  ios: { readme: 'ios/README.md', init: /Tollgate\.configure\(appToken:/, request: /Tollgate\.request\(/ },
  flutter: { readme: 'flutter/README.md', init: /await Tollgate\.initialize\(/, request: /Tollgate\.request\(/ },
};

function files(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const full = path.join(directory, name);
    if (['node_modules', 'target', 'build', 'lib', '.dart_tool'].includes(name) || name.startsWith('.')) return [];
    return statSync(full).isDirectory() ? files(full) : [full];
  });
}

describe('SDK documentation', () => {
  for (const [platform, expected] of Object.entries(PLATFORMS)) {
    it(`${platform}: the README initializes at app start and calls a provider through the SDK`, () => {
      const text = readFileSync(path.join(SDK, expected.readme), 'utf8');
      expect(text).to.match(expected.init);
      expect(text).to.match(expected.request);
    });
  }

  it('no provider key anywhere under sdk/', () => {
    const checked = files(SDK).filter((file) => /\.(md|ts|tsx|js|kt|kts|swift|dart|json|yaml|xml)$/.test(file));
    expect(checked.length).to.be.greaterThan(50);
    for (const file of checked) expect(readFileSync(file, 'utf8'), file).to.not.match(PROVIDER_KEY);
  });
});
