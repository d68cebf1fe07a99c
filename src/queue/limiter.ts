/**
 * The API's rate limit, shared by every process that uses one key: a sliding-window log in Redis.
 *
 * Why not BullMQ's limiter: it is per queue (three queues would send three times the limit on one
 * key) and counts fixed windows (a burst at a window's end and the next one's start puts nearly
 * twice the limit into one 60 s). Here every request made with the key — items of every kind, the
 * 401 probe, webhook PATCHes — takes a slot in one sorted set per key; a slot is free when fewer
 * than `limit` requests were taken in the last `windowMs`. The window is the
 * API's 60 s plus a margin, so jitter between taking a slot and the request's arrival never puts
 * limit + 1 requests into any 60 s as the API counts them. Time comes from Redis (TIME), so clocks
 * of different machines do not matter. A 429 sets a pause key that holds every process back.
 */
import { randomBytes } from 'node:crypto';
import type { DeliveryConfig } from '../config/schema.js';
import { SyncError } from '../errors.js';
import { keyIdOf, type Keys } from './keys.js';
import type { RedisConnection } from './redis.js';

// KEYS[1] window sorted set, KEYS[2] pause key. ARGV[1] window ms, ARGV[2] limit, ARGV[3] member.
// Returns 0 when a slot was taken, else the milliseconds to wait before asking again.
const ACQUIRE = `
local pause = redis.call('PTTL', KEYS[2])
if pause > 0 then return pause end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = tonumber(oldest[2]) + window - now
if wait < 1 then wait = 1 end
return wait
`;

// KEYS[1] pause key. ARGV[1] ms. Extends the pause, never shortens it.
const PAUSE = `
local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
return 1
`;

export interface RateLimiterOptions {
  windowKey: string;
  pauseKey: string;
  ratePerMinute: number;
  windowMarginMs: number;
  /** The API's window; 60 s. Tests shorten it. */
  windowMs?: number;
}

export interface RateLimiter {
  /** Takes a slot: 0 when taken, else how long to wait before trying again. */
  tryAcquire(): Promise<number>;
  /** Waits for a slot; gives up (returns false) once `maxWaitMs` would be exceeded. */
  acquire(maxWaitMs: number, signal?: AbortSignal): Promise<boolean>;
  /** Holds every process back for `ms` (a 429's Retry-After). */
  pause(ms: number): Promise<void>;
  /** Milliseconds of pause left (0 when sending may go on). */
  pausedForMs(): Promise<number>;
  /** Requests counted in the current window. */
  inWindow(): Promise<number>;
}

export function createRateLimiter(redis: RedisConnection, options: RateLimiterOptions): RateLimiter {
  const windowMs = (options.windowMs ?? 60_000) + options.windowMarginMs;
  const tryAcquire = async (): Promise<number> => {
    const member = `${Date.now()}-${randomBytes(6).toString('hex')}`;
    const wait = await redis.eval(ACQUIRE, 2, options.windowKey, options.pauseKey, windowMs, options.ratePerMinute, member);
    return Number(wait);
  };
  return {
    tryAcquire,
    async acquire(maxWaitMs, signal) {
      const deadline = Date.now() + maxWaitMs;
      for (;;) {
        const wait = await tryAcquire();
        if (wait === 0) return true;
        if (signal?.aborted === true || Date.now() + wait > deadline) return false;
        // Ask again when the oldest slot frees (bounded, so a resumed pause is seen quickly).
        await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 1000)).unref());
      }
    },
    async pause(ms) {
      await redis.eval(PAUSE, 1, options.pauseKey, Math.max(1, Math.ceil(ms)));
    },
    async pausedForMs() {
      return Math.max(0, await redis.pttl(options.pauseKey));
    },
    async inWindow() {
      const [seconds, micros] = await redis.time();
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      return redis.zcount(options.windowKey, now - windowMs, '+inf');
    },
  };
}

/** The limiter shared by every process sending with `carrierKey` (kept in Redis under the key's id). */
export function rateLimiterFor(ctx: { redis: RedisConnection; keys: Pick<Keys, 'limiter' | 'pause'>; config: { delivery: Pick<DeliveryConfig, 'ratePerMinute' | 'rateWindowMarginMs'> } }, carrierKey: string): RateLimiter {
  const keyId = keyIdOf(carrierKey);
  return createRateLimiter(ctx.redis, {
    windowKey: ctx.keys.limiter(keyId),
    pauseKey: ctx.keys.pause(keyId),
    ratePerMinute: ctx.config.delivery.ratePerMinute,
    windowMarginMs: ctx.config.delivery.rateWindowMarginMs,
  });
}

/**
 * A slot for a one-off request outside the item queues (a webhook PATCH): waits up to `maxWaitMs`
 * for the window or a 429 pause, else throws API_RATE_LIMITED so the caller tries again later.
 */
export async function takeSlot(limiter: RateLimiter, maxWaitMs: number, what: string): Promise<void> {
  if (await limiter.acquire(maxWaitMs)) return;
  throw new SyncError('API_RATE_LIMITED', `${what}: no slot of the shared rate limit freed within ${maxWaitMs} ms; try again later`);
}
