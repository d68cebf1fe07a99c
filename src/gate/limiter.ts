/**
 * The API's rate limit, shared by every process that uses one key: a sliding-window log in Redis.
 *
 * Why not BullMQ's limiter: it is per queue (three queues would send three times the limit on one
 * key) and counts fixed windows (a burst at a window's end and the next one's start puts nearly
 * twice the limit into one 60 s). Here every request made with the key — items of every kind and
 * webhook PATCHes — takes a slot in one sorted set per key; a slot is free when fewer than `limit`
 * requests are counted in the last 60 s. Time comes from Redis (TIME), so clocks of different
 * machines do not matter. A 429 sets a pause key that holds every process back.
 *
 * No margin is needed on the window: a slot is scored with the latest time its request can reach
 * the API — while it is in flight, the time it was taken plus the longest a request can take; once
 * its response arrived, that time (`stamp`). Every score is then at or after the request's arrival
 * at the API, so when the last request of any 60 s of arrivals took its slot, every other request
 * of those 60 s was still counted: no 60 s as the API counts them can hold limit + 1 requests.
 */
import { randomBytes } from 'node:crypto';
import type { ApiConfig, DeliveryConfig } from '../config/schema.js';
import { SyncError } from '../errors.js';
import { keyIdOf, type Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';

/**
 * The rate window's Lua, for every script that takes or stamps a slot (the one-off ACQUIRE and
 * STAMP below, and the push gate's ENTER and LEAVE): one owner of the window's rules.
 *  - `nowMs()` (`CLOCK_LUA`, for scripts that need the clock without the window): Redis' time in
 *    whole milliseconds (every process reads one clock), read once per script call (a script runs
 *    atomically in microseconds: one instant serves all its steps);
 *  - `takeSlot(windowKey, pauseKey, windowMs, limit, member, maxRequestMs, isPauseAbsent)`: nil and
 *    the time when a slot was taken (scored as in flight till `maxRequestMs`), else the ms to wait (a
 *    429 pause, then the window); `isPauseAbsent` true when the caller read the pause key already
 *    and found none (the push gate's enter reads it with its other keys in one MGET: a PTTL fewer an
 *    item, issue 46), else the pause's PTTL is read here. Slots out of the window are removed only
 *    when the count could refuse one (`limit` or more, stale ones included: a count below the limit
 *    is at or above the true one, so it refuses nothing the true one would take), and at every
 *    `TRIM_EVERY`th slot, so that a window far below its limit stays small: below the limit a slot
 *    costs ZCARD, ZADD and the expiry, where it cost a ZREMRANGEBYSCORE more (issue 46); at the
 *    limit the same three and the removal, as before;
 *  - `stampSlot(windowKey, member, sinceResponseMs)`: scores a taken slot with the time its response
 *    arrived (`sinceResponseMs` ago by the process' monotonic clock); a no-op for '' or a slot gone.
 */
export const CLOCK_LUA = `
local scriptNowMs = nil
local function nowMs()
  if scriptNowMs == nil then
    local t = redis.call('TIME')
    scriptNowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return scriptNowMs
end
`;

/** Below the limit, the window's stale slots are removed at every this many slots (see `takeSlot`). */
const TRIM_EVERY = 64;

export const RATE_WINDOW_LUA = `${CLOCK_LUA}
local function takeSlot(windowKey, pauseKey, windowMs, limit, member, maxRequestMs, isPauseAbsent)
  if not isPauseAbsent then
    local pause = redis.call('PTTL', pauseKey)
    if pause > 0 then return pause, nil end
  end
  local now = nowMs()
  local count = redis.call('ZCARD', windowKey)
  if count >= limit or (count > 0 and count % ${TRIM_EVERY} == 0) then
    count = count - redis.call('ZREMRANGEBYSCORE', windowKey, '-inf', now - windowMs)
  end
  if count >= limit then
    local oldest = redis.call('ZRANGE', windowKey, 0, 0, 'WITHSCORES')
    local wait = tonumber(oldest[2]) + windowMs - now
    if wait < 1 then wait = 1 end
    return wait, nil
  end
  redis.call('ZADD', windowKey, now + maxRequestMs, member)
  redis.call('PEXPIRE', windowKey, windowMs + maxRequestMs)
  return nil, now
end
local function stampSlot(windowKey, member, sinceResponseMs)
  if member == '' then return end
  local late = tonumber(sinceResponseMs) or 0
  if late < 0 then late = 0 end
  redis.call('ZADD', windowKey, 'XX', nowMs() - late, member)
end
`;

// KEYS: 1 window (sorted set), 2 pause. ARGV: 1 window ms, 2 limit, 3 slot member, 4 longest request ms.
// Returns {'go'} when a slot was taken, else {'wait', ms}.
const ACQUIRE = defineScript(
  'limiterAcquire',
  `${RATE_WINDOW_LUA}
local windowKey, pauseKey = KEYS[1], KEYS[2]
local windowMs, limit, member, maxRequestMs = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local waitMs = takeSlot(windowKey, pauseKey, windowMs, limit, member, maxRequestMs)
if waitMs then return {'wait', waitMs} end
return {'go'}
`,
);

// KEYS: 1 window. ARGV: 1 slot member, 2 ms since the response arrived. Returns nothing.
const STAMP = defineScript(
  'limiterStamp',
  `${RATE_WINDOW_LUA}
local windowKey = KEYS[1]
local member, sinceResponseMs = ARGV[1], ARGV[2]
stampSlot(windowKey, member, sinceResponseMs)
`,
);

// KEYS: 1 pause. ARGV: 1 ms. Extends the pause, never shortens it. Returns 1.
const PAUSE = defineScript(
  'limiterPause',
  `
local pauseKey = KEYS[1]
local pauseMs = tonumber(ARGV[1])
if redis.call('PTTL', pauseKey) < pauseMs then redis.call('SET', pauseKey, '1', 'PX', pauseMs) end
return 1
`,
);

export interface RateLimiterOptions {
  windowKey: string;
  pauseKey: string;
  ratePerMinute: number;
  /** Added to the window (not needed, see above; kept for deployments that want slack). */
  windowMarginMs: number;
  /** The API's window; 60 s. Tests shorten it. */
  windowMs?: number;
  /** Longest a request can take: a slot not yet stamped counts as arriving up to then. */
  maxRequestMs?: number;
}

export interface RateLimiter {
  /** Takes a slot: 0 when taken, else how long to wait before trying again. */
  tryAcquire(): Promise<number>;
  /** Takes a slot: its member (to `stamp` when the response arrived), or how long to wait. */
  take(): Promise<{ slot: string } | { waitMs: number }>;
  /**
   * Scores a slot with the time its response arrived (frees it sooner than its in-flight score);
   * `respondedAt`: `performance.now()` when it arrived (default: now).
   */
  stamp(slot: string, respondedAt?: number): Promise<void>;
  /** Waits for a slot; gives up (returns null) once `maxWaitMs` would be exceeded. */
  acquire(maxWaitMs: number, signal?: AbortSignal): Promise<string | null>;
  /** Holds every process back for `ms` (a 429's Retry-After). */
  pause(ms: number): Promise<void>;
  /** Milliseconds of pause left (0 when sending may go on). */
  pausedForMs(): Promise<number>;
  /** Requests counted in the current window. */
  inWindow(): Promise<number>;
}

export function createRateLimiter(redis: RedisConnection, options: RateLimiterOptions): RateLimiter {
  const windowMs = (options.windowMs ?? 60_000) + options.windowMarginMs;
  const maxRequestMs = options.maxRequestMs ?? DEFAULT_MAX_REQUEST_MS;
  const take = async (): Promise<{ slot: string } | { waitMs: number }> => {
    const slot = `${Date.now()}-${randomBytes(6).toString('hex')}`;
    const [verdict, waitMs] = (await ACQUIRE(redis, [options.windowKey, options.pauseKey], [windowMs, options.ratePerMinute, slot, maxRequestMs])) as [
      string,
      number?,
    ];
    return verdict === 'go' ? { slot } : { waitMs: Number(waitMs) };
  };
  const tryAcquire = async (): Promise<number> => {
    const taken = await take();
    return 'slot' in taken ? 0 : taken.waitMs;
  };
  return {
    tryAcquire,
    take,
    async stamp(slot, respondedAt) {
      await STAMP(redis, [options.windowKey], [slot, sinceMs(respondedAt)]);
    },
    async acquire(maxWaitMs, signal) {
      const deadline = Date.now() + maxWaitMs;
      for (;;) {
        const taken = await take();
        if ('slot' in taken) return taken.slot;
        if (signal?.aborted === true || Date.now() + taken.waitMs > deadline) return null;
        // Ask again when the oldest slot frees (bounded, so a resumed pause is seen quickly).
        await new Promise((resolve) => setTimeout(resolve, Math.min(taken.waitMs, 1000)).unref());
      }
    },
    async pause(ms) {
      await PAUSE(redis, [options.pauseKey], [Math.max(1, Math.ceil(ms))]);
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

/** Whole milliseconds since a `performance.now()` time (0 when none is given). */
export function sinceMs(at: number | undefined): number {
  return at === undefined ? 0 : Math.max(0, Math.floor(performance.now() - at));
}

/** Used where no API config is at hand (a test's limiter): a generous bound. */
const DEFAULT_MAX_REQUEST_MS = 30_000;

export type LimitConfig = {
  delivery: Pick<DeliveryConfig, 'ratePerMinute' | 'rateWindowMarginMs'>;
  api?: Pick<ApiConfig, 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs'>;
};

/** The longest one request can take under the client's timeouts. */
export function maxRequestMsOf(config: LimitConfig): number {
  return config.api === undefined ? DEFAULT_MAX_REQUEST_MS : config.api.connectTimeoutMs + config.api.headersTimeoutMs + config.api.bodyTimeoutMs;
}

/** The limiter shared by every process sending with `carrierKey` (kept in Redis under the key's id). */
export function rateLimiterFor(ctx: { redis: RedisConnection; keys: Pick<Keys, 'limiter' | 'pause'>; config: LimitConfig }, carrierKey: string): RateLimiter {
  const keyId = keyIdOf(carrierKey);
  return createRateLimiter(ctx.redis, {
    windowKey: ctx.keys.limiter(keyId),
    pauseKey: ctx.keys.pause(keyId),
    ratePerMinute: ctx.config.delivery.ratePerMinute,
    windowMarginMs: ctx.config.delivery.rateWindowMarginMs,
    maxRequestMs: maxRequestMsOf(ctx.config),
  });
}

/**
 * A slot for a one-off request outside the item queues (a webhook PATCH): waits up to `maxWaitMs`
 * for the window or a 429 pause, else throws API_RATE_LIMITED so the caller tries again later.
 * Returns the slot, to `stamp` when the response arrived.
 */
export async function takeSlot(limiter: RateLimiter, maxWaitMs: number, what: string): Promise<string> {
  const slot = await limiter.acquire(maxWaitMs);
  if (slot !== null) return slot;
  throw new SyncError('API_RATE_LIMITED', `${what}: no slot of the shared rate limit freed within ${maxWaitMs} ms; try again later`);
}
