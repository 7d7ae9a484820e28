/**
 * Tests only: a plugin (loaded through `TOLLGATE_PLUGINS=<path of this compiled file>`) whose rate-limit store cannot
 * count: `consume` fails while the stream-slot calls succeed (the in-process store's own), so that a test sees what the
 * gateway does when only the counting fails. `TOLLGATE_TEST_FAULTY_CONSUME` picks how it fails: `reject` (a rejected
 * promise, as a shared store that lost its connection) or `throw` (a synchronous throw).
 */
import type { RateLimitRule, RateLimitRuleResult, TollgatePlugin } from '../../core/contract';
import { MemoryRateLimitStore } from '../../core/stores/memory-rate-limit-store';

export class FaultyConsumeStore extends MemoryRateLimitStore {
  /** How many times `consume` was called (and failed). */
  static consumeCalls = 0;

  constructor(private readonly mode: 'reject' | 'throw') {
    super();
  }

  override consume(rules: readonly RateLimitRule[], nowMs: number): RateLimitRuleResult[] {
    FaultyConsumeStore.consumeCalls += 1;
    const failure = new Error(`test store: counting failed (${rules.length} rules at ${nowMs})`);
    if (this.mode === 'throw') throw failure;
    return Promise.reject(failure) as unknown as RateLimitRuleResult[];
  }
}

export const tollgatePlugin: TollgatePlugin = {
  name: 'test-faulty-rate-limit-store',
  contractVersion: 1,
  register(host) {
    const mode = host.settings.TOLLGATE_TEST_FAULTY_CONSUME === 'throw' ? 'throw' : 'reject';
    host.replaceRateLimitStore(new FaultyConsumeStore(mode));
  },
};
