/**
 * A Mocha root hook for the mutation run only (`npm run test:mutation`, stryker.config.mjs names it; `npm test` never
 * loads it): after each test it forgets which test is running, so code that a later suite's `before` hook runs (a
 * gateway starting) is not counted as covered by the test that happened to run before it. Stryker then treats such
 * code as start-up code ("static"): mutants reached only there are reported Ignored instead of run against an
 * unrelated test and reported Survived.
 */
interface StrykerContext {
  currentTestId?: string;
}

export const mochaHooks = {
  afterEach(): void {
    const context = (globalThis as { __stryker__?: StrykerContext }).__stryker__;
    if (context) context.currentTestId = undefined;
  },
};
