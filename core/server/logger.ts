/**
 * The pino logger. Logs are JSON lines with a request id. Credentials never reach them: the code logs redacted URLs and
 * no headers, and pino's `redact` removes credential fields anywhere they might appear anyway (defense in depth).
 */
import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * Top-level fields that would hold a credential if some code path ever logged one. Only fixed paths: wildcard paths
 * make pino's redaction walk every logged object, which cost a fifth of the proxy's throughput in the benchmark.
 */
const REDACT_PATHS = ['authorization', 'headers', 'appToken', 'adminKey', 'developmentToken', 'deviceToken', 'secret', 'value', 'password', 'err.config'];

const SERVICE = 'tollgate';

/**
 * A writer of one `info` line straight to the logger's destination, in pino's own format
 * (`{"level":30,"time":"…","service":"tollgate",…fields,"msg":"…"}`, undefined fields left out): the access log writes
 * one line per request, and pino's per-call machinery cost more than the line itself (docs/benchmarks.md). pino's
 * redaction is not applied: only for fields that never hold a credential (the access line's redacted path, ids, counts).
 */
export function infoLineWriter(logger: Logger, message: string): (fields: object) => void {
  const destination = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[pino.symbols.streamSym]!;
  const tail = `,"msg":${JSON.stringify(message)}}\n`;
  const service = JSON.stringify(SERVICE);
  // The timestamp's text, made once per millisecond.
  let stampedAt = 0;
  let head = '';
  return (fields) => {
    if (!logger.isLevelEnabled('info')) return;
    const body = JSON.stringify(fields);
    const now = Date.now();
    if (now !== stampedAt) {
      stampedAt = now;
      head = `{"level":30,"time":"${new Date(now).toISOString()}","service":${service}`;
    }
    destination.write(body.length > 2 ? `${head},${body.slice(1, -1)}${tail}` : `${head}${tail}`);
  };
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
    // Buffered (12 KiB per write: each asynchronous write is a thread-pool round trip) but flushed at least every second,
    // so that a quiet gateway's lines still show at once.
    destination ?? pino.destination({ dest: 1, sync: false, minLength: 12 * 1024, periodicFlush: 1000 }),
  );
}
