/**
 * The log destination's last step: synchronous writes to a file descriptor (stdout) that never throw.
 *
 * A log volume that is full (`ENOSPC`), a file past `ulimit -f` (`EFBIG`), a closed pipe (`EPIPE`) or a failing disk
 * (`EIO`) used to be an unhandled error from pino's destination: the gateway exited, cut every stream, lost its usage
 * buffer, and crash-looped while the disk stayed full. Here such a write is dropped and counted
 * (`tollgate_log_lines_dropped_total`); the next batch is tried again, so logging resumes by itself when space returns,
 * and the first line written then says how many lines were lost and why.
 *
 * A pipe whose reader is slow answers `EAGAIN`: retried for up to {@link BUSY_RETRY_MS} ms (as pino's sonic-boom does,
 * but bounded: a log reader that stopped must not stop the gateway), then dropped and counted like the rest.
 */
import { writeSync } from 'node:fs';

/** How long a batch waits in total for a busy pipe before it is dropped. */
const BUSY_RETRY_MS = 100;

let droppedTotal = 0;

/** Log lines dropped by every writer of this process since it started (`tollgate_log_lines_dropped_total`). */
export function logLinesDropped(): number {
  return droppedTotal;
}

const NEWLINE = 0x0a;
const pause = new Int32Array(new SharedArrayBuffer(4));

function newlines(data: Buffer, from: number): number {
  let count = 0;
  for (let index = data.indexOf(NEWLINE, from); index !== -1; index = data.indexOf(NEWLINE, index + 1)) count += 1;
  return count;
}

export class FaultTolerantWriter {
  /** Lines dropped since the last line that said so, and the error code of the last drop. */
  private unreported = 0;
  private cause = '';
  /** The last write stopped inside a line: the next one starts on a new line. */
  private midLine = false;

  constructor(
    private readonly fd: number,
    /** Writes the bytes at `offset`; returns how many were written (fs.writeSync; replaceable in tests). */
    private readonly writeBytes: (fd: number, data: Buffer, offset: number, length: number) => number = (fd, data, offset, length) => writeSync(fd, data, offset, length),
  ) {}

  write(data: Buffer): boolean {
    if (this.unreported > 0 || this.midLine) {
      const notice = Buffer.from(
        `${this.midLine ? '\n' : ''}${this.unreported > 0 ? `{"level":40,"time":"${new Date().toISOString()}","service":"tollgate","dropped":${this.unreported},"cause":"${this.cause}","msg":"log lines were dropped: the log destination could not be written"}\n` : ''}`,
        'utf8',
      );
      const reported = this.unreported;
      if (!this.writeAll(notice, false)) {
        // Still failing: this batch is dropped too (its lines counted), the notice kept for later.
        this.drop(data, 0);
        return true;
      }
      this.unreported -= reported;
      this.midLine = false;
    }
    this.writeAll(data, true);
    return true;
  }

  /** Writes all of `data`; on a failure drops the rest (counted when `count`) and answers false. */
  private writeAll(data: Buffer, count: boolean): boolean {
    let offset = 0;
    let waitedMs = 0;
    while (offset < data.length) {
      try {
        offset += this.writeBytes(this.fd, data, offset, data.length - offset);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'EIO';
        if ((code === 'EAGAIN' || code === 'EBUSY') && waitedMs < BUSY_RETRY_MS) {
          Atomics.wait(pause, 0, 0, 1);
          waitedMs += 1;
          continue;
        }
        this.cause = code;
        if (offset > 0 && data[offset - 1] !== NEWLINE) this.midLine = true;
        if (count) this.drop(data, offset);
        return false;
      }
    }
    return true;
  }

  private drop(data: Buffer, from: number): void {
    // A line cut in the middle counts as dropped: its newline is among the bytes not written.
    const lines = newlines(data, from);
    this.unreported += lines;
    droppedTotal += lines;
  }

  /** Writes are synchronous: nothing is ever pending. */
  flush(callback?: (error?: Error) => void): void {
    callback?.();
  }

  flushSync(): void {
    // Nothing pending.
  }
}

/** `/metrics` series of the log writer. */
export function logMetricLines(): string[] {
  return [
    '# HELP tollgate_log_lines_dropped_total Log lines that could not be written (a full or failing log volume, a closed or stalled pipe) and were dropped.',
    '# TYPE tollgate_log_lines_dropped_total counter',
    `tollgate_log_lines_dropped_total ${droppedTotal}`,
  ];
}
