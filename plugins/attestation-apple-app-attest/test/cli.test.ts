/**
 * `tollgate attest verify --method apple-app-attest` and `tollgate attest verify-assertion` (operations.md) on the real
 * App Attest artifacts of test/fixtures, at their validity instants, against Apple's real pinned root; tampered copies
 * exit 1 with the reason.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function projectRoot(from: string): string {
  let directory = from;
  while (!existsSync(path.join(directory, 'package.json'))) {
    const parent = path.dirname(directory);
    if (parent === directory) throw new Error(`no package.json above ${from}`);
    directory = parent;
  }
  return directory;
}

const ROOT = projectRoot(path.resolve(__dirname, '..', '..', '..', '..'));
const FIXTURES = path.join(ROOT, 'plugins', 'attestation-apple-app-attest', 'test', 'fixtures');
const CLI = path.join(ROOT, 'dist', 'bin', 'tollgate.js');

interface Fixture {
  appId: string;
  keyId: string;
  attestation: string;
  clientDataHash: string;
  environment: 'development' | 'production';
  validAt: string;
  leafNotAfter: string;
  assertion?: { assertion: string; clientDataHash: string; previousCounter: number; expectedCounter: number };
}

function tollgate(args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('tollgate attest verify (apple-app-attest) on real attestations', () => {
  let directory: string;
  before(() => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'tollgate-appattest-cli-'));
  });
  after(() => rmSync(directory, { recursive: true, force: true }));

  const fixtures = ['appattest-checker-node-development.json', 'node-app-attest-production.json', 'apple-validation-guide-sample.json'];
  for (const name of fixtures) {
    it(`verifies ${name} at its validity instant, and refuses it after its leaf expired or tampered`, () => {
      const fixture = JSON.parse(readFileSync(path.join(FIXTURES, name), 'utf8')) as Fixture;
      const file = path.join(directory, `${name}.b64`);
      writeFileSync(file, fixture.attestation);
      const common = ['attest', 'verify', '--method', 'apple-app-attest', '--app-id', fixture.appId, '--key-id', fixture.keyId, '--attestation', file, '--client-data-hash', Buffer.from(fixture.clientDataHash, 'base64').toString('hex'), '--environment', fixture.environment];
      const ok = tollgate([...common, '--at', fixture.validAt]);
      expect(ok.status, ok.stderr).to.equal(0);
      const printed = JSON.parse(ok.stdout) as { valid: boolean; publicKey: string; environment: string };
      expect(printed).to.include({ valid: true, environment: fixture.environment });
      expect(printed.publicKey).to.match(/BEGIN PUBLIC KEY/);

      const expired = tollgate([...common, '--at', new Date(Date.parse(fixture.leafNotAfter) + 86_400_000).toISOString()]);
      expect(expired.status).to.equal(1);
      expect(expired.stderr).to.match(/certificate_expired/);

      const raw = Buffer.from(fixture.attestation, 'base64');
      raw[raw.length - 40] = raw[raw.length - 40]! ^ 0x01; // a byte of authData
      writeFileSync(file, raw);
      const tampered = tollgate([...common, '--at', fixture.validAt]);
      expect(tampered.status).to.equal(1);
      expect(tampered.stderr).to.match(/invalid \(\w+\)/);

      const wrongApp = tollgate([...common.map((value) => (value === fixture.appId ? 'ABCDE12345.com.example.other' : value)), '--at', fixture.validAt]);
      expect(wrongApp.status).to.equal(1);
    });
  }

  it('verifies the real assertion from the same device with verify-assertion, and refuses a replay', () => {
    const fixture = JSON.parse(readFileSync(path.join(FIXTURES, 'appattest-checker-node-development.json'), 'utf8')) as Fixture;
    const attestationFile = path.join(directory, 'dev.b64');
    writeFileSync(attestationFile, fixture.attestation);
    const attested = tollgate(['attest', 'verify', '--method', 'apple-app-attest', '--app-id', fixture.appId, '--key-id', fixture.keyId, '--attestation', attestationFile, '--client-data-hash', Buffer.from(fixture.clientDataHash, 'base64').toString('hex'), '--environment', 'development', '--at', fixture.validAt]);
    const keyFile = path.join(directory, 'key.pem');
    writeFileSync(keyFile, (JSON.parse(attested.stdout) as { publicKey: string }).publicKey);
    const assertion = fixture.assertion!;
    const args = (previous: number) => ['attest', 'verify-assertion', '--public-key', keyFile, '--app-id', fixture.appId, '--assertion', assertion.assertion, '--client-data-hash', Buffer.from(assertion.clientDataHash, 'base64').toString('hex'), '--previous-counter', String(previous)];
    const ok = tollgate(args(assertion.previousCounter));
    expect(ok.status, ok.stderr).to.equal(0);
    expect(JSON.parse(ok.stdout)).to.deep.equal({ valid: true, counter: assertion.expectedCounter });
    const replay = tollgate(args(assertion.expectedCounter));
    expect(replay.status).to.equal(1);
    expect(replay.stderr).to.match(/counter_not_increased/);
  });
});
