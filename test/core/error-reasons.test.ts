/**
 * protocol.md ("Errors"): every gateway-made error carries a stable snake_case `reason`, and docs/reference/errors.md
 * lists every one. This test reads the server's sources (core, plugins, providers) for the reasons they can send and
 * fails when one is missing from the reference, so that a new reason cannot ship undocumented.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function sources(directory: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(directory, { withFileTypes: true })) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === 'test' || entry.name === 'node_modules') continue;
      out.push(...sources(full));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !entry.name.includes('fixture')) {
      out.push(full);
    }
  }
  return out;
}

/** The reasons a source file can put in an error body. */
function reasonsIn(text: string): string[] {
  const found: string[] = [];
  const patterns: Array<[RegExp, (match: RegExpExecArray) => string]> = [
    [/reason: '([a-z][a-z0-9_]*)'/g, (m) => m[1]!],
    [/\brejected\('([a-z][a-z0-9_]*)'/g, (m) => m[1]!],
    [/\bunsafe\('([a-z][a-z0-9_]*)'/g, (m) => `unsafe_path_${m[1]!}`],
    [/new (?:AppAttest|KeyAttestation|PlayIntegrity)Error\('([a-z][a-z0-9_]*)'/g, (m) => m[1]!],
  ];
  for (const [pattern, name] of patterns) {
    for (let match = pattern.exec(text); match; match = pattern.exec(text)) found.push(name(match));
  }
  return found;
}

describe('error reasons (docs/reference/errors.md)', () => {
  const reference = fs.readFileSync(path.join(ROOT, 'docs', 'reference', 'errors.md'), 'utf8');
  const documented = new Set([...reference.matchAll(/`([a-z][a-z0-9_]*)`/g)].map((match) => match[1]!));
  const used = new Map<string, string>();
  for (const directory of ['core', 'plugins', 'providers']) {
    for (const file of sources(path.join(ROOT, directory))) {
      for (const reason of reasonsIn(fs.readFileSync(file, 'utf8'))) used.set(reason, path.relative(ROOT, file));
    }
  }

  it('finds the reasons the SDKs act on in the sources (the scan works)', () => {
    for (const reason of ['device_revoked', 'device_token_expired', 'device_token_invalid', 'device_key_unknown', 'assertion_required', 'route_not_allowed']) {
      expect(used.has(reason), reason).to.equal(true);
    }
  });

  it('lists every reason the server can send', () => {
    const missing = [...used].filter(([reason]) => !documented.has(reason)).map(([reason, file]) => `${reason} (${file})`);
    expect(missing, 'reasons used in code but not in docs/reference/errors.md').to.deep.equal([]);
  });

  it('keeps every reason snake_case', () => {
    for (const reason of used.keys()) expect(reason).to.match(/^[a-z][a-z0-9_]*$/);
  });
});
