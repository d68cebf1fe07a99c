/**
 * The shared sliding-window limiter on a real Redis, with several connections standing in for
 * several processes. The window is shortened to 1 s so the test stays quick; the arithmetic is
 * the same as with the API's 60 s.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/queue/limiter.js';
import { maxInWindow } from '../bench/support/window.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('lim');
const connections: Redis[] = [];
afterAll(async () => {
  await cleanupPrefix(prefix);
  for (const c of connections) c.disconnect();
});

function limiterOn(limit: number, windowMs: number, key: string, windowMarginMs = 0) {
  const redis = new Redis(testRedisUrl());
  connections.push(redis);
  return createRateLimiter(redis, { windowKey: `${prefix}:w:${key}`, pauseKey: `${prefix}:p:${key}`, ratePerMinute: limit, windowMarginMs, windowMs });
}

describe('shared rate limiter', () => {
  it('holds the limit in every sliding window across four processes, and uses it', async () => {
    const limit = 20;
    const windowMs = 1000;
    const runMs = 3500;
    // The margin plays the part of the daemon's rateWindowMarginMs: it absorbs the jitter between
    // taking a slot and the moment the request (here: the stamp) happens.
    const limiters = Array.from({ length: 4 }, () => limiterOn(limit, windowMs, 'shared', 50));
    const stamps: number[] = [];
    const deadline = Date.now() + runMs;
    await Promise.all(
      limiters.map(async (limiter) => {
        while (Date.now() < deadline) {
          if (await limiter.acquire(deadline - Date.now())) stamps.push(Date.now());
        }
      }),
    );
    expect(maxInWindow(stamps, windowMs)).toBeLessThanOrEqual(limit);
    // A backlog keeps the limiter busy: close to limit per window over the run.
    expect(stamps.length).toBeGreaterThanOrEqual(Math.floor((runMs / (windowMs + 50)) * limit * 0.9));
  });

  it('counts a burst at the end of one window against the start of the next (no fixed windows)', async () => {
    const limiter = limiterOn(10, 1000, 'burst');
    for (let i = 0; i < 10; i += 1) expect(await limiter.tryAcquire()).toBe(0);
    const wait = await limiter.tryAcquire();
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000);
  });

  it('a pause (429) holds every process back for its duration', async () => {
    const a = limiterOn(100, 1000, 'pause');
    const b = limiterOn(100, 1000, 'pause');
    await a.pause(400);
    const wait = await b.tryAcquire();
    expect(wait).toBeGreaterThan(300);
    expect(await b.pausedForMs()).toBeGreaterThan(0);
    // A shorter pause never shortens a longer one.
    await b.pause(10);
    expect(await a.pausedForMs()).toBeGreaterThan(300);
  });
});
