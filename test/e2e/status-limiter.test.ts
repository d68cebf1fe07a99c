/**
 * `status` shows the rate limiter's window figures in every mode: also on the embedded default,
 * where no key is in the environment and requests go out under the sandbox seed's carrier key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createKeys } from '../../src/store/keys.js';
import { rateLimiterFor } from '../../src/gate/limiter.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { loadSeed } from '../../src/sandbox/seed.js';
import { runCli } from '../support/process.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('status');
const redis = connectRedis(testRedisUrl(), 'status-test');
const seedKey = loadSeed(undefined).carriers[0]!.key;
const SLOTS = 3;

beforeAll(async () => {
  // Take slots the way the embedded daemon's workers do: in the window of the seed's first carrier key.
  const limiter = rateLimiterFor({ redis, keys: createKeys(prefix), config: loadConfig({ env: {} }) }, seedKey);
  for (let i = 0; i < SLOTS; i += 1) expect(await limiter.tryAcquire()).toBe(0);
  await limiter.pause(60_000);
});
afterAll(async () => {
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

describe('status on the embedded default (no API URL, no key in the environment)', () => {
  const env = { REDIS_URL: testRedisUrl(), CARRIER_SYNC_PREFIX: prefix };

  it('prints the window figures of the sandbox key', async () => {
    const result = await runCli(['status'], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`rate limiter: ${SLOTS} of 300 per minute in the window, paused \\d+ ms by a 429`));
    expect(result.stdout).not.toContain('?');
  });

  it('--json gives numbers, not nulls', async () => {
    const result = await runCli(['status', '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    const { rateLimiter } = JSON.parse(result.stdout) as { rateLimiter: { ratePerMinute: number; inWindow: number | null; pausedForMs: number | null } };
    expect(rateLimiter.ratePerMinute).toBe(300);
    expect(rateLimiter.inWindow).toBe(SLOTS);
    expect(rateLimiter.pausedForMs).toBeGreaterThan(50_000);
  });

  it('a carrier key in the environment does not change whose window it is while no API URL is set', async () => {
    const result = await runCli(['status', '--json'], { env: { ...env, CARRIER_SYNC_CARRIER_KEY: 'a-key-the-sandbox-does-not-use' } });
    expect(result.code, result.stderr).toBe(0);
    expect((JSON.parse(result.stdout) as { rateLimiter: { inWindow: number } }).rateLimiter.inWindow).toBe(SLOTS);
    expect(result.stdout + result.stderr).not.toContain('a-key-the-sandbox-does-not-use');
  });
});
