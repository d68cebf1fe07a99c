import { defineConfig } from 'vitest/config';

// `npm run test:image`: the container image checks (opt-in, not in `npm run check`). One file, one
// worker: the build is the long part and the containers share this machine's loopback.
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/image/**/*.test.ts'],
    globalSetup: ['test/support/global-redis.ts', 'test/support/global-build.ts'],
    testTimeout: 120_000,
    hookTimeout: 1_800_000,
    pool: 'forks',
    maxWorkers: 1,
    reporters: ['default'],
  },
});
