/**
 * docs/reference/protocol.md is the wire protocol as the code speaks it. This test reads the server's sources (core,
 * plugins, providers; tests and fixtures left out) and keeps the page in step with them:
 * - every error reason the code can send (an error body's `reason`, a realtime close reason) is named in protocol.md
 *   or in errors.md, which protocol.md links for the management API's own reasons;
 * - every reason protocol.md (and errors.md) lists in its reason tables is one the code can send;
 * - every `Tollgate-*` header the code reads or writes is named in protocol.md, and every realtime close code too;
 * - the assistant server serves this page as its `tollgate://protocol` resource;
 * - no project file points at the design folder outside the repository.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { protocolReference } from '../../core/mcp/server';
import { CLOSE_CODES } from '../../core/realtime/session';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const read = (relative: string) => fs.readFileSync(path.join(ROOT, relative), 'utf8');

/** The server's TypeScript sources under `directory`: no tests, no fixtures, no declarations. */
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

const SOURCES = ['core', 'plugins', 'providers'].flatMap((directory) => sources(path.join(ROOT, directory))).map((file) => ({ file: path.relative(ROOT, file), text: fs.readFileSync(file, 'utf8') }));

/** A reason built from a prefix and a value only known at run time: the docs name it `<prefix><code>`. */
const PLACEHOLDER = '<code>';

/**
 * The reasons the code can send, each with a file that sends it. Literal reasons; the helpers that build errors from a
 * reason (`rejected`, `refused`, `unsafe`, the attestation verifiers' errors); the request limits, whose reason is
 * `rate_limited_` and the limit's policy; realtime close reasons set by hand; and reasons built from a runtime value
 * (`upstream_${code}`), as `upstream_<code>`.
 */
function codeReasons(): Map<string, string> {
  const patterns: Array<[RegExp, (match: RegExpExecArray) => string]> = [
    [/reason: '([a-z][a-z0-9_]*)'/g, (m) => m[1]!],
    [/\b(?:rejected|refused)\('([a-z][a-z0-9_]*)'/g, (m) => m[1]!],
    [/\bunsafe\('([a-z][a-z0-9_]*)'/g, (m) => `unsafe_path_${m[1]!}`],
    [/new (?:AppAttest|KeyAttestation|PlayIntegrity)Error\('([a-z][a-z0-9_]*)'/g, (m) => m[1]!],
    [/\{ policy: '([a-z][a-z-]*)', key: .*?, windowSeconds: /g, (m) => `rate_limited_${m[1]!.replace(/-/g, '_')}`],
    [/closeReason = '([a-z][a-z0-9_]*)'/g, (m) => m[1]!],
    [/reason: `([a-z][a-z0-9_]*_)\$\{/g, (m) => `${m[1]!}${PLACEHOLDER}`],
  ];
  const found = new Map<string, string>();
  for (const { file, text } of SOURCES) {
    for (const [pattern, name] of patterns) {
      for (let match = pattern.exec(text); match; match = pattern.exec(text)) found.set(name(match), file);
    }
  }
  // Prefixes whose every value is enumerated above (the limits' policies, the path rules) need no placeholder.
  for (const prefix of ['rate_limited_', 'unsafe_path_']) found.delete(`${prefix}${PLACEHOLDER}`);
  return found;
}

/** Backticked snake_case words (and `prefix_<code>` placeholders) in a text. */
function words(text: string): Set<string> {
  return new Set([...text.matchAll(/`([a-z][a-z0-9_]*(?:<code>)?)`/g)].map((match) => match[1]!));
}

/**
 * The reasons a page lists in the tables of one of its sections: the first cell of each row (`| `reason` | …`), and
 * for the realtime close-code table, its third cell.
 */
function listedReasons(page: string, section: RegExp): Set<string> {
  const start = page.search(section);
  expect(start, `section ${section} of the page`).to.be.at.least(0);
  const rest = page.slice(start);
  const next = rest.slice(1).search(/\n## /);
  const body = next < 0 ? rest : rest.slice(0, next + 1);
  const listed = new Set<string>();
  for (const line of body.split('\n')) {
    if (!line.startsWith('| `')) continue;
    for (const word of words(line.split('|')[1]!)) listed.add(word);
  }
  return listed;
}

/** The rows of the table whose header line is `header` (up to the first line that is not a row). */
function tableRows(page: string, header: string): string[] {
  const start = page.indexOf(header);
  expect(start, header).to.be.at.least(0);
  const rows: string[] = [];
  for (const line of page.slice(start).split('\n').slice(2)) {
    if (!line.startsWith('|')) break;
    rows.push(line);
  }
  return rows;
}

/** The `Tollgate-*` headers the code reads (`headers['tollgate-…']`) or writes (`Tollgate-Error`, …), lower-cased. */
function codeHeaders(): Map<string, string> {
  const found = new Map<string, string>();
  for (const { file, text } of SOURCES.filter((source) => !source.file.startsWith('providers/'))) {
    // Title-cased names are the gateway's header spellings; a name followed by `/` is a product token (User-Agent).
    for (const match of text.matchAll(/\bTollgate-[A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)*\b(?!\/)/g)) found.set(match[0].toLowerCase(), file);
    for (const match of text.matchAll(/headers(?:\?\.)?\[['"](tollgate-[a-z-]+)['"]\]/g)) found.set(match[1]!, file);
  }
  return found;
}

describe('the protocol reference (docs/reference/protocol.md) and the code', () => {
  const protocol = read('docs/reference/protocol.md');
  const errors = read('docs/reference/errors.md');
  const used = codeReasons();
  const headers = codeHeaders();

  it('finds what the SDKs act on in the sources (the scans work)', () => {
    for (const reason of ['device_revoked', 'device_token_expired', 'device_token_invalid', 'device_key_unknown', 'assertion_required', 'user_token_expired', 'rate_limited_device', 'rate_limited_user_day', 'unsafe_path_dot_segment', 'upstream_<code>', 'upstream_closed', 'session_idle', 'draining']) {
      expect(used.has(reason), reason).to.equal(true);
    }
    for (const header of ['tollgate-app-token', 'tollgate-device-token', 'tollgate-user-token', 'tollgate-assertion', 'tollgate-request-time', 'tollgate-request-id', 'tollgate-error']) {
      expect(headers.has(header), header).to.equal(true);
    }
  });

  it('links errors.md, where the management API reasons are', () => {
    expect(protocol).to.include('(errors.md)');
  });

  it('names every reason the code can send, in protocol.md or errors.md', () => {
    const documented = new Set([...words(protocol), ...words(errors)]);
    const missing = [...used].filter(([reason]) => !documented.has(reason)).map(([reason, file]) => `${reason} (${file})`);
    expect(missing, 'reasons the code sends that neither page names').to.deep.equal([]);
  });

  it('lists no reason the code cannot send', () => {
    const unknown = (listed: Set<string>) => [...listed].filter((reason) => !used.has(reason));
    expect(unknown(listedReasons(protocol, /\n## Error reasons\n/)), 'protocol.md, "Error reasons"').to.deep.equal([]);
    const sdkTable = tableRows(protocol, '| reason | the SDK |').flatMap((line) => [...words(line.split('|')[1]!)]);
    expect(sdkTable.length, 'the SDK table').to.be.greaterThan(5);
    expect(sdkTable.filter((reason) => !used.has(reason)), 'protocol.md, the SDK table').to.deep.equal([]);
    expect(unknown(listedReasons(errors, /\n## Reasons\n/)), 'errors.md, "Reasons"').to.deep.equal([]);
    // The close-code table: its reasons column.
    const closeReasons = tableRows(protocol, '| code | type | reasons sent |').flatMap((line) => [...words(line.split('|')[3]!)]);
    expect(closeReasons.length, 'the close-code table').to.be.greaterThan(5);
    expect(closeReasons.filter((reason) => !used.has(reason)), 'protocol.md, close reasons').to.deep.equal([]);
  });

  it('names every realtime close code the gateway uses', () => {
    for (const [type, code] of Object.entries(CLOSE_CODES)) {
      expect(protocol, `${code} ${type}`).to.match(new RegExp(`\\| ${code} \\| \`${type}\` \\|`));
    }
  });

  it('names every Tollgate-* header the code reads or writes', () => {
    const named = new Set([...protocol.matchAll(/`(Tollgate-[A-Za-z-]+)`/g)].map((match) => match[1]!.toLowerCase()));
    const missing = [...headers].filter(([header]) => !named.has(header)).map(([header, file]) => `${header} (${file})`);
    expect(missing, 'headers the code reads or writes that protocol.md does not name').to.deep.equal([]);
  });

  it('is what README.md and the reference docs point at for the protocol', () => {
    expect(read('README.md')).to.include('docs/reference/protocol.md');
    expect(read('docs/reference/routes.md')).to.include('(protocol.md)');
    expect(read('docs/reference/errors.md')).to.include('(protocol.md)');
  });

  it('is what the assistant server serves as tollgate://protocol', () => {
    expect(protocolReference().startsWith(protocol.trimEnd())).to.equal(true);
    expect(protocolReference()).to.include('Rules for an app that uses an SDK');
  });

  it('leaves no project file pointing at the design folder outside the repository', () => {
    const skip = new Set(['node_modules', 'dist', '.git', 'test-artifacts', 'build', '.dart_tool', '.gradle', 'Pods', 'DerivedData']);
    const text = /\.(ts|js|mjs|cjs|md|json|ya?ml|kt|kts|swift|dart|gradle|txt|sh|html|css|podspec)$/;
    const offenders: string[] = [];
    const walk = (directory: string) => {
      for (const entry of fs.readdirSync(directory, { withFileTypes: true })) {
        if (skip.has(entry.name)) continue;
        const full = path.join(directory, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (text.test(entry.name) && fs.statSync(full).size < 2_000_000) {
          const content = fs.readFileSync(full, 'utf8');
          // Built from parts, so that this file does not name what it looks for.
          if (content.includes(['shared', 'design'].join('/')) || content.includes(['..', 'shared'].join('/'))) offenders.push(path.relative(ROOT, full));
        }
      }
    };
    walk(ROOT);
    expect(offenders).to.deep.equal([]);
  });
});
