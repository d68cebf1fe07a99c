import { defineConfig } from 'vitest/config';

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
        test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'] },
      },
    ],
  },
});
