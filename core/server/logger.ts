/**
 * The pino logger. Logs are JSON lines with a request id. Credentials never reach them: the code logs redacted URLs and
 * no headers, and pino's `redact` removes credential fields anywhere they might appear anyway (defense in depth).
 */
import pino, { type DestinationStream, type Logger } from 'pino';
import { FaultTolerantWriter } from './log-writer';

/**
 * Top-level fields that would hold a credential if some code path ever logged one. Only fixed paths: wildcard paths
 * make pino's redaction walk every logged object, which cost a fifth of the proxy's throughput in the benchmark.
 */
const REDACT_PATHS = ['authorization', 'headers', 'appToken', 'adminKey', 'developmentToken', 'deviceToken', 'secret', 'value', 'password', 'err.config'];

const SERVICE = 'tollgate';

/**
 * A writer of one `info` line straight to the logger's destination, in pino's own format
 * (`{"level":30,"time":"…","service":"tollgate",…members,"msg":"…"}`): the access log writes one line per request, and
 * pino's per-call machinery cost more than the line itself (docs/benchmarks.md). It takes the line's members as JSON
 * text (`"name":value,…`, without braces), which the caller builds, escaping every value it does not produce itself.
 * pino's redaction is not applied: only for fields that never hold a credential (the access line's redacted path, ids,
 * counts).
 */
export function infoLineWriter(logger: Logger, message: string): (members: string) => void {
  const destination = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[pino.symbols.streamSym]!;
  const tail = `,"msg":${JSON.stringify(message)}}\n`;
  const service = JSON.stringify(SERVICE);
  // The timestamp's text, made once per millisecond.
  let stampedAt = 0;
  let head = '';
  return (members) => {
    if (!logger.isLevelEnabled('info')) return;
    const now = Date.now();
    if (now !== stampedAt) {
      stampedAt = now;
      head = `{"level":30,"time":"${new Date(now).toISOString()}","service":${service}`;
    }
    destination.write(members ? `${head},${members}${tail}` : `${head}${tail}`);
  };
}

/** What the batching layer needs of pino's file destination (sonic-boom in buffer mode). */
interface FileDestination {
  write(data: Buffer): boolean;
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/** Destinations holding lines not yet written: written when the process exits. */
const unwritten = new Set<BatchedDestination>();
process.on('exit', () => {
  for (const destination of unwritten) destination.flushSync();
});

/**
 * Log lines gathered in memory and written a batch at a time: at 12 KiB, after a second at most, on `flush()` and when
 * the process exits. Each batch is one synchronous write (pino's own default for stdout, and Node's for stdout on
 * Linux): a 12 KiB write costs a few microseconds, less than a thread-pool round trip, and nothing is ever in flight
 * when the process exits, so no line is lost or reordered then. A line costs an array push; sonic-boom's own buffering
 * measures the byte length of its whole pending buffer on every write, which cost more per access line than the line
 * itself (docs/benchmarks.md).
 *
 * A batch is joined, encoded once and handed to the writer as bytes. (Handed to sonic-boom as a string, its UTF-8 length
 * was measured twice and it was encoded twice, docs/benchmarks.md; stdout is now written by log-writer.ts, which never
 * throws on a full volume.)
 */
export class BatchedDestination {
  private parts: string[] = [];
  private size = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly target: FileDestination,
    private readonly batchChars = 12 * 1024,
    private readonly maxDelayMs = 1000,
  ) {}

  write(line: string): boolean {
    this.parts.push(line);
    this.size += line.length;
    if (this.size >= this.batchChars) this.writeBatch();
    else if (this.timer === undefined) {
      unwritten.add(this);
      this.timer = setTimeout(this.onTimer, this.maxDelayMs);
      this.timer.unref();
    }
    return true;
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.writeBatch();
  };

  /** Writes the gathered lines. */
  private writeBatch(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    unwritten.delete(this);
    if (this.size === 0) return;
    const data = this.parts.length === 1 ? this.parts[0]! : this.parts.join('');
    this.parts = [];
    this.size = 0;
    this.target.write(Buffer.from(data, 'utf8'));
  }

  flush(callback?: (error?: Error) => void): void {
    this.writeBatch();
    this.target.flush(callback);
  }

  flushSync(): void {
    this.writeBatch();
    this.target.flushSync();
  }
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: SERVICE },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: {
        // Errors are logged by message, code and stack only: no request objects or option bags that might hold keys.
        err: (error: unknown) => {
          if (!(error instanceof Error)) return { message: String(error) };
          const coded = error as Error & { code?: string; reason?: string; type?: string };
          return { type: error.name, message: error.message, code: coded.code, reason: coded.reason, errorType: coded.type, stack: error.stack };
        },
      },
    },
    // Batched (one write per 12 KiB) but written at least every second, so that a quiet gateway's lines still show.
    // Written to stdout by a writer that drops and counts what cannot be written (a full volume) instead of throwing.
    destination ?? new BatchedDestination(new FaultTolerantWriter(1)),
  );
}
