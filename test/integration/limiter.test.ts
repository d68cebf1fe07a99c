/**
 * The shared sliding-window limiter on a real Redis, with several connections standing in for
 * several processes. The window is shortened to 1 s so the test stays quick; the arithmetic is
 * the same as with the API's 60 s.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/gate/limiter.js';
import { maxInWindow } from '../bench/support/window.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('lim');
const connections: Redis[] = [];
afterAll(async () => {
  await cleanupPrefix(prefix);
  for (const c of connections) c.disconnect();
});

function limiterOn(limit: number, windowMs: number, key: string, maxRequestMs = 100) {
  const redis = new Redis(testRedisUrl());
  connections.push(redis);
  return createRateLimiter(redis, {
    windowKey: `${prefix}:w:${key}`,
    pauseKey: `${prefix}:p:${key}`,
    ratePerMinute: limit,
    windowMarginMs: 0,
    windowMs,
    maxRequestMs,
  });
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('shared rate limiter', () => {
  it('holds the limit in every sliding window across four processes, with no margin, and uses it', async () => {
    const limit = 20;
    const windowMs = 1000;
    const runMs = 3500;
    // Each "request" reaches the API at a random moment between taking its slot and its response
    // (up to 30 ms of latency each way); the slot is stamped up to 30 ms later, dated back to the
    // moment the response arrived. No margin
    // is added to the window: the stamps alone must keep every window of arrivals within the limit.
    const limiters = Array.from({ length: 4 }, () => limiterOn(limit, windowMs, 'shared'));
    const arrivals: number[] = [];
    const deadline = Date.now() + runMs;
    await Promise.all(
      limiters.map(async (limiter) => {
        while (Date.now() < deadline) {
          const slot = await limiter.acquire(deadline - Date.now());
          if (slot === null) continue;
          await pause(Math.random() * 30);
          arrivals.push(Date.now());
          await pause(Math.random() * 30);
          // The response arrives; a busy process stamps the slot later, dated back to it.
          const respondedAt = performance.now();
          await pause(Math.random() * 30);
          await limiter.stamp(slot, respondedAt);
        }
      }),
    );
    expect(maxInWindow(arrivals, windowMs)).toBeLessThanOrEqual(limit);
    // A backlog keeps the limiter busy: close to limit per window over the run.
    expect(arrivals.length).toBeGreaterThanOrEqual(Math.floor((runMs / (windowMs + 60)) * limit * 0.9));
  });

  it('counts a slot not yet stamped until the longest request could have arrived', async () => {
    const limiter = limiterOn(1, 200, 'inflight', 1000);
    expect(await limiter.tryAcquire()).toBe(0);
    // The window (200 ms) alone would free the slot at once; in flight, it holds 1000 ms + 200 ms.
    const wait = await limiter.tryAcquire();
    expect(wait).toBeGreaterThan(1000);
  });

  it('counts a burst at the end of one window against the start of the next (no fixed windows)', async () => {
    const limiter = limiterOn(10, 1000, 'burst');
    for (let i = 0; i < 10; i += 1) expect(await limiter.tryAcquire()).toBe(0);
    const wait = await limiter.tryAcquire();
    expect(wait).toBeGreaterThan(0);
    // Not stamped (no response yet): the window plus the longest request (100 ms here).
    expect(wait).toBeLessThanOrEqual(1100);
  });

  it('removes the slots out of the window below its limit too, so that a window far from its limit stays small', async () => {
    // A limit never reached (a lifted one): the slots out of the window are removed at every 64th
    // slot, not at each, and not never (a window key holding every request since its last idle minute).
    const limiter = limiterOn(100_000, 1, 'far-below', 1);
    const redis = connections.at(-1)!;
    let largest = 0;
    for (let i = 0; i < 300; i += 1) {
      expect(await limiter.tryAcquire()).toBe(0);
      largest = Math.max(largest, await redis.zcard(`${prefix}:w:far-below`));
    }
    expect(largest).toBeGreaterThan(1);
    // Each slot is out of the window ~2 ms after it was taken; a few are in it at any time.
    expect(largest).toBeLessThan(100);
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
