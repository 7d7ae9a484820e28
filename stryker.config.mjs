// Mutation testing (Stryker) of the security- and budget-critical code: `npm run test:mutation`. Not part of `npm test`.
// docs/security.md ("Mutation testing") records the runs, the scores and what became of the surviving mutants.
//
// Stryker mutates the TypeScript sources and compiles them once per run with `buildCommand` (tsc) in its sandbox.
// Every mutant is compiled in at once behind a switch (mutant schemata), so this is one tsc run per Stryker run, not
// one per mutant. Chosen over mutating the compiled JavaScript in dist/ because the findings then name the .ts lines
// directly (no mapping back through source maps), tsc's own helpers (__decorate, __metadata, module glue) produce no
// meaningless mutants, and the incremental files stay keyed to the sources that are reviewed.
//
// The whole scope takes hours at one worker on a shared machine, so it is split into parts, one per run:
//   TOLLGATE_MUTATION_PART=security npm run test:mutation      core/security
//   TOLLGATE_MUTATION_PART=budgets npm run test:mutation       token budgets, reservations, rate limits, limit stores
//   TOLLGATE_MUTATION_PART=attestation npm run test:mutation   App Attest, Play Integrity, Android key attestation
//   TOLLGATE_MUTATION_PART=pipeline-keys npm run test:mutation     app tokens, secrets, key injection, signed-in users
//   TOLLGATE_MUTATION_PART=pipeline-routes npm run test:mutation   proxy paths, route classes, model policy
//   TOLLGATE_MUTATION_PART=pipeline-forward npm run test:mutation  forward, header hygiene, response scrub, usage tap
// Without TOLLGATE_MUTATION_PART it runs every part in one (long) run. A part can be narrowed further from the command
// line: `TOLLGATE_MUTATION_PART=pipeline-keys npm run test:mutation -- --mutate core/pipeline/inject-key.ts`.
// Each part names only the specs that exercise it and need no external service (no PostgreSQL, Redis or Chromium).
const parts = {
  security: {
    mutate: ['core/security/**/*.ts'],
    // The credential lists are module-level regular expressions (static mutants): run them too. Each needs a fresh
    // process and every spec, but the unit specs come first and stop the run at their first failure.
    ignoreStatic: false,
    spec: [
      'core/redaction', 'core/units', 'core/request-fields', 'core/secret-leaks', 'core/header-hygiene', 'core/limits',
      'hardening/access-log-query-keys', 'hardening/echo-paths', 'hardening/server-surface', 'hardening/admin-key-scopes',
    ],
  },
  budgets: {
    mutate: [
      'core/stores/*.ts', 'core/pipeline/token-budget.ts', 'core/pipeline/token-reservation.ts', 'core/pipeline/limit-rate.ts',
    ],
    spec: [
      'core/limit-stores', 'core/token-budget-units', 'core/units', 'core/token-budget-reservations', 'core/token-budgets', 'core/limits', 'core/usage-tokens', 'core/request-fields',
      'hardening/limit-faults', 'hardening/policies',
    ],
  },
  attestation: {
    mutate: ['plugins/attestation-*/*.ts', 'core/pipeline/verify-device.ts'],
    spec: [
      '../plugins/attestation-android-key-attestation/test/verify', '../plugins/attestation-android-key-attestation/test/route',
      '../plugins/attestation-android-play-integrity/test/verify', '../plugins/attestation-android-play-integrity/test/route',
      '../plugins/attestation-apple-app-attest/test/verify', '../plugins/attestation-apple-app-attest/test/policy',
      '../plugins/attestation-apple-app-attest/test/route', 'hardening/lower-findings', 'hardening/policies',
      // The device-token refusals of verify-device.ts (wrong app, revoked, development in production, monitor mode).
      'core/errors', 'core/monitor-mode', 'hardening/monitor-mode-visibility',
      // The stage on its own with the clock in hand: request-time bounds, the replay window, monitor-mode refusals.
      'core/verify-device',
    ],
  },
  // The rest of core/pipeline, in three parts: a surviving mutant runs every test that reached it, and nearly every
  // proxied request reaches forward.ts, so one part with every pipeline spec spent about two minutes per survivor.
  'pipeline-keys': {
    mutate: [
      'core/pipeline/inject-key.ts', 'core/pipeline/resolve-secret.ts', 'core/pipeline/verify-token.ts',
      'core/pipeline/credential-lifetime.ts', 'core/pipeline/verify-user.ts', 'core/pipeline/pipeline.ts',
      'core/pipeline/realtime-upgrades.ts',
    ],
    spec: [
      'core/proxy-exchange', 'core/secret-leaks', 'core/units', 'hardening/policies', 'hardening/signed-bodies',
      // App-token refusals (unknown, rotated, disabled) and credential routes with their lifetimes.
      'core/errors', 'hardening/provider-route-lists', 'core/account-routes',
      // Signed-in users; realtime upgrades run the same stages; credential routes' lifetimes (credential-lifetime.ts).
      'core/end-users', 'core/realtime-sessions', 'core/realtime-providers',
      // Answers asked for uncompressed where usage is read (injectKey's Accept-Encoding), under a token budget.
      'core/token-budget-reservations',
      // The app's allowedProviders and allowedRoutes (resolve-secret.ts), each refusal by its reason.
      'providers/providers',
      // Every provider's documented exchanges through the gateway: tenant base URLs, selectBaseUrl, default headers,
      // computed (signed) auth in inject-key.ts. The stage runner on its own (pipeline.ts).
      'conformance/providers', 'core/pipeline-stages',
      // injectKey on its own: base URLs (override, tenant, selectBaseUrl, second hosts) and what the upstream request carries.
      'core/inject-key', 'core/credential-lifetime',
    ],
    // The key-set cache over 1,000 requests: a load test, not a check of these lines' decisions.
    grep: '^(?!.*fetches the key set once for 1,000 requests)',
  },
  'pipeline-routes': {
    mutate: ['core/pipeline/proxy-path.ts', 'core/pipeline/route-class.ts', 'core/pipeline/path-model.ts', 'core/pipeline/model-policy.ts'],
    spec: [
      'core/path-units', 'core/route-class', 'core/unsafe-paths', 'core/model-policy', 'core/request-fields', 'core/path-model-policy',
      'core/realtime-model-policy', 'hardening/echo-paths', 'hardening/lower-findings', 'hardening/provider-route-lists',
      'core/account-routes',
      // Credential routes closed unless the app opens them (route-class.ts), each provider's.
      'core/realtime-providers',
    ],
    // Left out (it runs in `npm test`): test/hardening/account-routes-every-version.test.ts, one generated test of
    // every account route under every version (17 s; a survivor of route-class.ts ran it each time).
  },
  'pipeline-forward': {
    mutate: [
      'core/pipeline/forward.ts', 'core/pipeline/header-hygiene.ts', 'core/pipeline/response-scrub.ts',
      'core/pipeline/response-urls.ts', 'core/pipeline/request-body.ts', 'core/pipeline/usage-tap.ts',
      'core/pipeline/usage-event-filter.ts', 'core/pipeline/in-flight-list.ts', 'core/pipeline/upstream-views.ts',
    ],
    // The unit specs first: a mutant stops at its first failing test, and a survivor runs them all.
    spec: [
      'core/response-scrub', 'core/header-hygiene', 'core/usage-tap', 'core/request-body', 'core/usage-tokens', 'core/request-fields',
      'core/error-reasons', 'core/units', 'core/unsafe-paths', 'core/proxy-exchange', 'core/streaming', 'core/secret-leaks',
      'core/errors', 'hardening/signed-bodies', 'hardening/hostile-upstream', 'hardening/client-faults',
      'hardening/echo-paths', 'hardening/unread-bodies',
      // The usage filter and tap only on 2xx answers, under a token budget (2 s); a provider without usage reading
      // (inject-key's test provider) sending whole bodies.
      'core/token-budget-reservations', 'core/inject-key',
    ],
    // Descriptor exhaustion by 300 trickling clients: a load test (test/hardening/unread-bodies.test.ts), not a check
    // of these lines' decisions; the spec's other tests stay. Left out as well (they run in `npm test`): the property
    // runs of test/hardening/forwarding-properties.test.ts and the timed client departures of
    // test/hardening/client-gone-upstream.test.ts, four to seven seconds a survivor; and, four seconds or more each,
    // test/hardening/upstream-pool.test.ts (the queue deadline, pool statistics), slow-bodies.test.ts (413 before
    // reading, on every route) and account-routes-every-version.test.ts (upstream views through the proxy route).
    grep: '^(?!.*300 trickling clients)',
  },
};

const chosen = process.env.TOLLGATE_MUTATION_PART;
if (chosen && !(chosen in parts)) throw new Error(`TOLLGATE_MUTATION_PART must be one of ${Object.keys(parts).join(', ')}`);
const selected = chosen ? [parts[chosen]] : Object.values(parts);
const name = chosen ?? 'all';
const specFile = (spec) => `dist/${spec.startsWith('../') ? spec.slice(3) : `test/${spec}`}.test.js`;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'mocha',
  packageManager: 'npm',
  // The dashboard's build too: the server-surface spec checks the compiled dashboard assets.
  buildCommand: 'node scripts/mutation-build.js',
  mutate: selected.flatMap((part) => part.mutate),
  mochaOptions: {
    spec: [...new Set(selected.flatMap((part) => part.spec.map(specFile)))],
    // reflect-metadata as in .mocharc.js; the root hook keeps start-up code (gateways started in `before`) out of the
    // coverage of whichever test ran before it (test/mutation/hooks.ts).
    require: ['reflect-metadata', './dist/test/mutation/hooks.js'],
    // Tests a part leaves out (each `grep` is one negative lookahead at the start: they chain).
    ...(selected.some((part) => part.grep) ? { grep: `^${selected.map((part) => part.grep?.slice(1) ?? '').join('')}` } : {}),
  },
  // Each mutant runs only the tests that reached it. Mutants reached only while modules load or a suite starts its
  // gateway are "static": each needs every spec rerun in a fresh process, so they are reported Ignored, except in the
  // parts that ask for them (security).
  coverageAnalysis: 'perTest',
  ignoreStatic: !selected.every((part) => part.ignoreStatic === false),
  // The machine is shared: one worker, and a generous timeout so that a slow moment is not scored as a kill.
  concurrency: 1,
  timeoutMS: 8000,
  // Stryker adds `// @ts-nocheck` to the mutated files so that tsc emits them with every mutant compiled in.
  disableTypeChecks: '{core,plugins}/**/*.ts',
  // sdk/ (and its tests) is left out but for the protocol's conformance vectors, which the attestation specs read;
  // docs/ stays (specs check the reference pages).
  ignorePatterns: ['dist', '/sdk/*', '!/sdk/conformance', 'test/sdk', 'deploy', 'reports', 'test-artifacts', 'data', '.ci', '.build', '.swiftpm'],
  incremental: true,
  incrementalFile: `test/mutation/incremental-${name}.json`,
  reporters: ['progress', 'clear-text', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  thresholds: { high: 90, low: 75, break: null },
};
