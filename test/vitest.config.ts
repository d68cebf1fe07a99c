import { defineConfig } from 'vitest/config';

/**
 * The e2e files `npm test` (so CI, `npm run check`) leaves to `npm run test:long`: variants of what
 * the files it keeps already drive end to end (Redis over TLS, late, promoted or managed; the
 * watchdog's failpoints; traces; notifications end to end; a backlog beyond the inbox window;
 * several deployments on one Redis; answers kept across a kill; help in Portuguese), each 15–45 s
 * of CPU in the daemons, CLIs and redis-servers it starts. The suite had outgrown CI's 10 minutes:
 * 13:36 on a clean clone (issue 46, sixteenth session), CPU-bound on two cores, 55 % of its CPU in
 * Node processes starting (a daemon ~3 s, a CLI ~1 s). `npm run test:all` runs both; a change is
 * run through `test:long` before it lands, and its note says so.
 */
const LONG_E2E = [
  'answer-kept',
  'history-kill9',
  'inbox-window',
  'managed-redis',
  'notify',
  'pt-br-help',
  'redis-config',
  'redis-late',
  'redis-promotion',
  'redis-tls',
  'scale-out',
  'spool-deployments',
  'traces',
  'traces-failover',
  'watchdog',
  'watchdog-not-stalls',
].map((name) => `test/e2e/${name}.test.ts`);

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    globalSetup: ['test/support/global-redis.ts', 'test/support/global-build.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Four files at once: the e2e files mostly wait on their daemons (the suite used 58 % of 2 cores
    // with two). Measured on a clean clone: 468 s with 2, 328 s with 3 (one machine); on a slower one
    // (stop 43) 418 s with 3 and 360 s with 4, the files' summed time 9 % longer.
    maxWorkers: 4,
    reporters: ['default'],
    projects: [
      {
        // The unit and integration files share a worker's modules (no fresh module graph a file):
        // what they start is per test (a Redis prefix, a sandbox, a temporary folder), and loading
        // src/ again for each of 102 files was half their CPU (issue 46, seventh session, a clean
        // clone: test/unit 41 → 16 CPU-s, test/integration 133 → 68). Proven against leaks between
        // files by runs in shuffled file orders (`--sequence.shuffle.files --sequence.seed=N`).
        extends: true,
        test: { name: 'in-process', include: ['test/{unit,integration}/**/*.test.ts'], isolate: false },
      },
      {
        // Each e2e file in a fresh process: they trap signals, spawn process groups and run daemons
        // in-process with module state (failpoints, the metrics registry) of their own.
        extends: true,
        test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], exclude: LONG_E2E },
      },
      { extends: true, test: { name: 'e2e-long', include: LONG_E2E } },
    ],
  },
});
