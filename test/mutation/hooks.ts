import { clearProcessCaches } from '../../core/pipeline/process-caches';

/**
 * A Mocha root hook for the mutation run only (`npm run test:mutation`, stryker.config.mjs names it; `npm test` never
 * loads it).
 *
 * Before each test it empties the pipeline's process-wide caches (compiled manifest patterns, parsed routes, checked
 * paths): Stryker switches mutants on and off in one process, and a compile step that an earlier test already cached
 * would never run under the mutant being tested, which would then survive although a fresh process kills it.
 *
 * After each test it forgets which test is running, so code that a later suite's `before` hook runs (a gateway
 * starting) is not counted as covered by the test that happened to run before it. Stryker then treats such code as
 * start-up code ("static"): mutants reached only there are reported Ignored instead of run against an unrelated test
 * and reported Survived.
 */
interface StrykerContext {
  currentTestId?: string;
}

export const mochaHooks = {
  beforeEach(): void {
    clearProcessCaches();
  },
  afterEach(): void {
    const context = (globalThis as { __stryker__?: StrykerContext }).__stryker__;
    if (context) context.currentTestId = undefined;
  },
};
