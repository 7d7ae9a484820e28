/** What bin/tollgate.ts hands a command group of its own file. */
import type { GatewayCore } from '../../core/server/gateway';

export interface CommandHelpers {
  /** Runs `work` on a gateway core (database, master key) and prints its result as one JSON object. */
  withCore<T>(work: (core: GatewayCore) => Promise<T>): Promise<void>;
  /** A changing command: the change and its audit entry (`cli.<action>`, actor `cli:<user>`). */
  change<T>(action: string, target: (result: NoInfer<T>) => string | null, work: (core: GatewayCore) => Promise<T>): Promise<void>;
  /** A usage error (exit code 2). */
  usage(message: string): Error;
}
