/**
 * The default log destination: lines gathered in memory and written a batch at a time (core/server/logger.ts). What
 * must hold: order, a quiet gateway's line shows within a second, nothing is lost on `flush()` or when the process exits.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { BatchedDestination } from '../../core/server/logger';

/** A stand-in for sonic-boom that records what it was handed. */
class RecordingTarget {
  readonly written: string[] = [];
  flushes = 0;
  syncFlushes = 0;
  write(data: Buffer): boolean {
    this.written.push(data.toString('utf8'));
    return true;
  }
  flush(callback?: (error?: Error) => void): void {
    this.flushes += 1;
    callback?.();
  }
  flushSync(): void {
    this.syncFlushes += 1;
  }
}

const LOGGER_MODULE = path.resolve(__dirname, '..', '..', 'core', 'server', 'logger.js');

/** Runs `script` in a child node process (the logger module is `logger`); resolves with its stdout and timings. */
function runChild(script: string): Promise<{ stdout: string; lines: Array<{ text: string; atMs: number }>; exitedAtMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['-e', `const logger = require(${JSON.stringify(LOGGER_MODULE)});\n${script}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const lines: Array<{ text: string; atMs: number }> = [];
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      lines.push({ text: chunk.toString(), atMs: Date.now() - started });
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`child exited with ${code}: ${stderr}`));
      else resolve({ stdout, lines, exitedAtMs: Date.now() - started });
    });
  });
}

describe('default log destination (batched writes)', () => {
  it('hands lines over in order, a batch at a time once the batch size is reached', () => {
    const target = new RecordingTarget();
    const destination = new BatchedDestination(target, 100, 60_000);
    for (let index = 0; index < 9; index += 1) destination.write(`line ${index} ${'x'.repeat(10)}\n`);
    // 9 lines of 18 characters: handed over when 100 characters had gathered (after the 6th line), the rest still held.
    expect(target.written).to.have.length(1);
    expect(target.written[0]).to.equal(Array.from({ length: 6 }, (_, index) => `line ${index} ${'x'.repeat(10)}\n`).join(''));
    destination.flush();
    expect(target.written).to.have.length(2);
    expect(target.written[1]).to.equal(Array.from({ length: 3 }, (_, index) => `line ${index + 6} ${'x'.repeat(10)}\n`).join(''));
    expect(target.flushes).to.equal(1);
  });

  it('keeps lines whole and in order across batches, as bytes: multi-byte text, and a line longer than a batch', () => {
    const target = new RecordingTarget();
    const destination = new BatchedDestination(target, 100, 60_000);
    const lines = ['é 模型 🚀 ünïcode\n', `${'long '.repeat(200)}\n`, 'after\n', `${'ß'.repeat(40)}\n`, 'end\n'];
    for (const line of lines) destination.write(line);
    destination.flush();
    expect(target.written.join('')).to.equal(lines.join(''));
  });

  it('hands a lone line over after the delay, without waiting for a batch', async () => {
    const target = new RecordingTarget();
    const destination = new BatchedDestination(target, 12 * 1024, 30);
    destination.write('quiet\n');
    expect(target.written).to.deep.equal([]);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(target.written).to.deep.equal(['quiet\n']);
  });

  it('flushSync writes the gathered lines, then has the target write synchronously', () => {
    const target = new RecordingTarget();
    const destination = new BatchedDestination(target, 12 * 1024, 60_000);
    destination.write('a\n');
    destination.write('b\n');
    destination.flushSync();
    expect(target.written).to.deep.equal(['a\nb\n']);
    expect(target.syncFlushes).to.equal(1);
  });

  it('a real logger: a quiet line reaches stdout within about a second, while the process keeps running', async () => {
    const { lines, exitedAtMs } = await runChild(`const log = logger.createLogger('info'); log.info('first and only'); setTimeout(() => {}, 2500);`);
    const line = lines.find((entry) => entry.text.includes('first and only'));
    expect(line, 'the line reached stdout').to.not.equal(undefined);
    // Seen well before the process ended (2.5 s), so it came from the one-second hand-over, not the exit.
    expect(line!.atMs).to.be.below(exitedAtMs - 800);
    expect(JSON.parse(line!.text.trim())).to.include({ level: 30, service: 'tollgate', msg: 'first and only' });
  });

  it('a real logger: every line, access lines included, is written when the process exits at once', async () => {
    const { stdout } = await runChild(
      `const log = logger.createLogger('info'); const access = logger.infoLineWriter(log, 'request');
       for (let i = 0; i < 500; i += 1) { log.info({ i }, 'line'); access('"requestId":"r' + i + '"'); }
       log.warn('last words'); process.exit(0);`,
    );
    const lines = stdout.trim().split('\n').map((text) => JSON.parse(text) as { msg: string; i?: number; requestId?: string });
    expect(lines).to.have.length(1001);
    expect(lines[0]).to.include({ msg: 'line', i: 0 });
    expect(lines[1]).to.include({ msg: 'request', requestId: 'r0' });
    expect(lines[998]).to.include({ msg: 'line', i: 499 });
    expect(lines[999]).to.include({ msg: 'request', requestId: 'r499' });
    expect(lines[1000]).to.include({ msg: 'last words' });
  });
});
