/**
 * cron-parser (and Luxon with it) loads when a job scheduler first parses a pattern, not with
 * BullMQ's Queue and Worker (src/queue/bullmq.ts; issue 29, idle memory). Run in a fresh node on the
 * built module, since the test runner's own process may have loaded either already: after the
 * import neither is loaded; a scheduler with a cron pattern then works as before (its next run is
 * the pattern's next time), and both are loaded.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const prefix = uniquePrefix('lazy-cron');

afterAll(async () => {
  await cleanupPrefix(prefix);
});

const SCRIPT = `
import { createRequire } from 'node:module';
const { Queue } = await import(process.env.BULLMQ_MODULE);
const require = createRequire(process.env.BULLMQ_MODULE);
const cronParser = createRequire(require.resolve('bullmq/dist/cjs/classes/job-scheduler.js')).resolve('cron-parser');
const luxon = createRequire(cronParser).resolve('luxon');
const atImport = { luxon: require.cache[luxon] !== undefined };
const queue = new Queue('housekeeping', { connection: { url: process.env.REDIS_URL }, prefix: process.env.PREFIX });
const from = Date.UTC(2026, 10, 25, 10, 17);
await queue.upsertJobScheduler('hourly', { pattern: '0 * * * *', tz: 'UTC', startDate: from }, { name: 'hourly', data: {} });
const scheduler = await queue.getJobScheduler('hourly');
await queue.close();
console.log(JSON.stringify({ atImport, afterScheduler: { luxon: require.cache[luxon] !== undefined }, next: scheduler?.next ?? null }));
`;

it('loads cron-parser and Luxon only when a scheduler parses a pattern, and the scheduler works', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    cwd: ROOT,
    env: { ...process.env, BULLMQ_MODULE: pathToFileURL(join(ROOT, 'dist', 'src', 'queue', 'bullmq.js')).href, REDIS_URL: testRedisUrl(), PREFIX: prefix },
  });
  const result = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as {
    atImport: { luxon: boolean };
    afterScheduler: { luxon: boolean };
    next: number | null;
  };
  expect(result.atImport.luxon).toBe(false);
  expect(result.afterScheduler.luxon).toBe(true);
  // The next full hour after now (the scheduler counts from the later of startDate and now).
  expect(result.next).toBeGreaterThan(Date.now() - 60_000);
  expect(new Date(result.next!).getUTCMinutes()).toBe(0);
  expect(new Date(result.next!).getUTCSeconds()).toBe(0);
});
