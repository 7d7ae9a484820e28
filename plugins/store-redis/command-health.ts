/**
 * Bounded Redis calls and what their failures say about Redis.
 *
 * ioredis's `commandTimeout` bounds one command on one connection. A frozen Redis keeps its TCP connection open, so
 * the client never sees `close`: without this the node kept reporting Redis up while every command timed out. A
 * failed command therefore reports Redis down at once (one line, one gauge change, through the host), a probe pings it
 * until it answers, and the next answered command or probe reports it up again.
 *
 * On Redis Cluster one call may be retried across redirections and slot refreshes, each attempt with its own command
 * timeout; {@link CommandHealth.bound} puts one deadline on the whole call so that a refusal never waits longer than
 * the configured timeout (plus one timer tick).
 */

/** Default `TOLLGATE_REDIS_COMMAND_TIMEOUT_MS`. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 500;

/** The command timeout from the host's settings: `TOLLGATE_REDIS_COMMAND_TIMEOUT_MS`, never above the readiness deadline. */
export function commandTimeoutOf(settings: Readonly<Record<string, string | undefined>>): number {
  const parse = (name: string, fallback: number): number => {
    const raw = settings[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 10 || value > 60_000) throw new Error(`${name} must be an integer between 10 and 60000 (got "${raw}")`);
    return value;
  };
  const readiness = parse('TOLLGATE_READINESS_TIMEOUT_MS', 2000);
  return Math.min(parse('TOLLGATE_REDIS_COMMAND_TIMEOUT_MS', DEFAULT_COMMAND_TIMEOUT_MS), readiness);
}

/** Thrown when a whole call (all of its cluster retries) outlived the deadline. */
export class RedisDeadlineError extends Error {
  constructor(timeoutMs: number) {
    super(`redis did not answer within ${timeoutMs} ms`);
    this.name = 'RedisDeadlineError';
  }
}

export class CommandHealth {
  private failing = false;
  private probe: NodeJS.Timeout | undefined;

  constructor(
    readonly timeoutMs: number,
    /** Bound whole calls with a timer of their own (Redis Cluster only: a single server's commandTimeout suffices). */
    private readonly boundCalls: boolean,
    /** Reports Redis's state to the host (it logs and exports changes only). */
    private readonly report: (up: boolean, cause?: string) => void,
    /** Answers 'PONG' when Redis is back. */
    private readonly ping: () => Promise<unknown>,
  ) {}

  /** `call`, bounded by the deadline on a cluster; its failure reports Redis down, its success up. */
  run<T>(call: Promise<T>): Promise<T> {
    const bounded = this.boundCalls ? this.withDeadline(call) : call;
    return bounded.then(
      (value) => {
        if (this.failing) this.recovered();
        return value;
      },
      (error: unknown) => {
        this.failed(error);
        throw error;
      },
    );
  }

  private withDeadline<T>(call: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new RedisDeadlineError(this.timeoutMs)), this.timeoutMs);
      call.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  /** A call failed: Redis is reported down, and probed every timeout period until it answers. */
  failed(error: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.report(false, error instanceof Error ? error.message : String(error));
    const tick = () => {
      this.probe = undefined;
      if (!this.failing) return;
      this.withDeadline(this.ping()).then(
        (answer) => {
          if (answer === 'PONG') this.recovered();
          else this.schedule(tick);
        },
        () => this.schedule(tick),
      );
    };
    this.schedule(tick);
  }

  private schedule(tick: () => void): void {
    if (this.probe !== undefined || !this.failing) return;
    this.probe = setTimeout(tick, Math.max(100, this.timeoutMs));
    this.probe.unref();
  }

  private recovered(): void {
    this.failing = false;
    if (this.probe !== undefined) clearTimeout(this.probe);
    this.probe = undefined;
    this.report(true);
  }

  stop(): void {
    this.failing = false;
    if (this.probe !== undefined) clearTimeout(this.probe);
    this.probe = undefined;
  }
}
