/**
 * The Kotlin SDK core (sdk/android/core) runs every conformance vector under Maven, and the vectors are up to date with
 * their generator. Part of `npm test` so that CI runs the Kotlin side too. Without an installed Maven, Apache Maven
 * itself comes from Maven Central (.ci/maven-tool); under CI=true a missing JDK fails.
 */
import { expect } from 'chai';
import { mavenCommand, requireTool } from '../support/services';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function available(command: string): boolean {
  return spawnSync(command, ['--version'], { encoding: 'utf8' }).status === 0;
}

describe('SDK conformance vectors: generator and Kotlin core', function () {
  this.timeout(15 * 60 * 1000);

  it('the JSON vectors match their generator (python3 sdk/conformance/generate.py --check)', function () {
    requireTool(this, available('python3'), 'python3 is missing');
    const result = spawnSync('python3', [path.join(ROOT, 'sdk', 'conformance', 'generate.py'), '--check'], { encoding: 'utf8' });
    expect(result.status, `${result.stdout}${result.stderr}`).to.equal(0);
  });

  it('mvn test in sdk/android/core passes every vector', function () {
    const mvn = mavenCommand();
    requireTool(this, mvn !== null, 'Maven is missing and .ci/maven-tool could not fetch it (a JDK, or Debian\'s JDK packages, and Maven Central are needed)');
    const module = path.join(ROOT, 'sdk', 'android', 'core');
    expect(existsSync(path.join(module, 'pom.xml'))).to.equal(true);
    // Reports of an earlier run (the gateway end-to-end profile writes its own) are not this run's.
    rmSync(path.join(module, 'target', 'surefire-reports'), { recursive: true, force: true });
    const result = spawnSync(mvn!, ['-q', '-B', 'test'], { cwd: module, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(result.status, `${result.stdout.slice(-4000)}${result.stderr.slice(-4000)}`).to.equal(0);
    // Surefire's reports: every test ran, none failed or was skipped.
    const reports = spawnSync('bash', ['-c', `cat ${path.join(module, 'target', 'surefire-reports')}/*.txt`], { encoding: 'utf8' }).stdout;
    const counts = [...reports.matchAll(/Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)/g)].map((match) => match.slice(1).map(Number));
    const total = counts.reduce((sum, [run]) => sum + run!, 0);
    expect(total).to.be.greaterThan(300);
    expect(counts.every(([, failures, errors, skipped]) => failures === 0 && errors === 0 && skipped === 0)).to.equal(true);
    // One test per vector of every file (realtime close codes, subprotocols, user tokens and /v1/me included), and the
    // scripted-transport session test that proves no new key is attested after device_revoked.
    const files = readdirSync(path.join(ROOT, 'sdk', 'conformance')).filter((name) => name.endsWith('.json'));
    expect(files).to.include.members(['request-building.json', 'error-mapping.json', 'stream-parsing.json', 'client-behaviour.json', 'realtime-close-codes.json', 'subprotocols.json', 'user-token.json', 'me.json']);
    const vectors = files
      .map((name) => (JSON.parse(readFileSync(path.join(ROOT, 'sdk', 'conformance', name), 'utf8')) as { vectors: unknown[] }).vectors.length)
      .reduce((sum, count) => sum + count, 0);
    expect(reports).to.match(new RegExp(`Tests run: ${vectors}, Failures: 0, Errors: 0, Skipped: 0[^\\n]*ConformanceTest`));
    expect(reports).to.match(/Tests run: [1-9]\d*, Failures: 0, Errors: 0, Skipped: 0[^\n]*DeviceSessionTest/);
  });
});
