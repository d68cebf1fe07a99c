/**
 * A lease in Redis: one key whose value names the holder (JSON) and whose TTL is the lease. Taken
 * (a GET, then SET PX when free) and renewed, given up and read by Lua scripts that compare the holder's `id`, so a
 * process can only extend or delete its own lease, never one another process took after its own
 * expired. Time is Redis's: the key disappears `leaseMs` after the last renewal Redis executed.
 */
import { appVersion } from '../version.js';
import type { RedisConnection } from './redis.js';
import { defineScript } from './script.js';

/** Who holds a lease. `id` is random per process; host and pid are for people reading `status`. */
export interface LeaseHolder {
  id: string;
  host: string;
  pid: number;
  /** When this holder took the lease (ISO 8601). */
  since: string;
}

/** A holder as read back: also the version of carrier-sync it runs (null: written by a version that did not record it). */
export type ReadHolder = LeaseHolder & { version: string | null };

export interface AcquireResult {
  isAcquired: boolean;
  /** The holder now in Redis: this process when acquired, another otherwise (null if unreadable). */
  holder: ReadHolder | null;
}

export interface Lease {
  readonly key: string;
  /** Takes the lease if free (or already ours: then only its TTL is renewed). */
  acquire(holder: LeaseHolder, leaseMs: number): Promise<AcquireResult>;
  /** Extends the lease if `holderId` still holds it; false when it does not (expired or taken). */
  renew(holderId: string, leaseMs: number): Promise<boolean>;
  /**
   * Deletes the lease if `holderId` holds it; another holder's lease is left alone. False at once
   * while Redis is away (a stop must not wait for it: the lease then expires on its own).
   */
  release(holderId: string): Promise<boolean>;
  /** The current holder and the lease's remaining time, or null when nobody holds it. */
  read(): Promise<(ReadHolder & { ttlMs: number }) | null>;
}

// cjson is part of Redis's (and Valkey's) Lua. A value that is not our JSON never matches.
const HOLDER_ID = `local function holderId(value)
  local ok, holder = pcall(cjson.decode, value)
  if ok and type(holder) == 'table' then return holder.id end
  return nil
end
`;

// KEYS: 1 the lease. ARGV: 1 holder id, 2 holder JSON, 3 lease ms.
// Returns {1, holder JSON} when taken (or already ours: its TTL renewed), else {0, the other holder's JSON}.
const ACQUIRE = defineScript(
  'leaseAcquire',
  `${HOLDER_ID}
local leaseKey = KEYS[1]
local id, holder, leaseMs = ARGV[1], ARGV[2], ARGV[3]
local current = redis.call('GET', leaseKey)
if current == false then
  redis.call('SET', leaseKey, holder, 'PX', leaseMs)
  return {1, holder}
end
if holderId(current) == id then
  redis.call('PEXPIRE', leaseKey, leaseMs)
  return {1, current}
end
return {0, current}
`,
  { isUrgent: true },
);

// KEYS: 1 the lease. ARGV: 1 holder id, 2 lease ms. Returns 1 when extended, 0 when another holds it (or nobody).
const RENEW = defineScript(
  'leaseRenew',
  `${HOLDER_ID}
local leaseKey = KEYS[1]
local id, leaseMs = ARGV[1], ARGV[2]
local current = redis.call('GET', leaseKey)
if current ~= false and holderId(current) == id then
  redis.call('PEXPIRE', leaseKey, leaseMs)
  return 1
end
return 0
`,
  { isUrgent: true },
);

// KEYS: 1 the lease. ARGV: 1 holder id. Returns 1 when deleted, 0 when another holds it (or nobody).
const RELEASE = defineScript(
  'leaseRelease',
  `${HOLDER_ID}
local leaseKey = KEYS[1]
local id = ARGV[1]
local current = redis.call('GET', leaseKey)
if current ~= false and holderId(current) == id then
  redis.call('DEL', leaseKey)
  return 1
end
return 0
`,
  { isUrgent: true },
);

export function createLease(redis: RedisConnection, key: string): Lease {
  return {
    key,
    async acquire(holder, leaseMs) {
      // The version rides along for people reading `status` and the overview.
      const record = JSON.stringify({ ...holder, version: appVersion() });
      const [isAcquired, value] = (await ACQUIRE(redis, [key], [holder.id, record, leaseMs])) as [number, string];
      return { isAcquired: isAcquired === 1, holder: parseHolder(value) };
    },
    async renew(holderId, leaseMs) {
      return Number(await RENEW(redis, [key], [holderId, leaseMs])) === 1;
    },
    async release(holderId) {
      if (redis.status !== 'ready') return false;
      return Number(await RELEASE(redis, [key], [holderId])) === 1;
    },
    async read() {
      const [value, ttlMs] = await Promise.all([redis.get(key), redis.pttl(key)]);
      const holder = value === null ? null : parseHolder(value);
      return holder === null ? null : { ...holder, ttlMs: Math.max(0, ttlMs) };
    },
  };
}

function parseHolder(value: string): ReadHolder | null {
  try {
    const parsed = JSON.parse(value) as Partial<Record<keyof ReadHolder, unknown>>;
    if (typeof parsed.id !== 'string') return null;
    const version = typeof parsed.version === 'string' ? parsed.version : null;
    return { id: parsed.id, host: String(parsed.host ?? '?'), pid: Number(parsed.pid ?? 0), since: String(parsed.since ?? ''), version };
  } catch {
    return null;
  }
}
