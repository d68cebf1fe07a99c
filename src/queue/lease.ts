/**
 * A lease in Redis: one key whose value names the holder (JSON) and whose TTL is the lease. Taken
 * with SET NX PX; renewed, given up and read by Lua scripts that compare the holder's `id`, so a
 * process can only extend or delete its own lease, never one another process took after its own
 * expired. Time is Redis's: the key disappears `leaseMs` after the last renewal Redis executed.
 */
import { appVersion } from '../version.js';
import type { RedisConnection } from './redis.js';

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
  /** Deletes the lease if `holderId` holds it; another holder's lease is left alone. */
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

const ACQUIRE = `${HOLDER_ID}
local current = redis.call('GET', KEYS[1])
if current == false then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return {1, ARGV[2]}
end
if holderId(current) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {1, current}
end
return {0, current}`;

const RENEW = `${HOLDER_ID}
local current = redis.call('GET', KEYS[1])
if current ~= false and holderId(current) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`;

const RELEASE = `${HOLDER_ID}
local current = redis.call('GET', KEYS[1])
if current ~= false and holderId(current) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`;

export function createLease(redis: RedisConnection, key: string): Lease {
  return {
    key,
    async acquire(holder, leaseMs) {
      // The version rides along for people reading `status` and the overview.
      const record = JSON.stringify({ ...holder, version: appVersion() });
      const [isAcquired, value] = (await redis.eval(ACQUIRE, 1, key, holder.id, record, String(leaseMs))) as [number, string];
      return { isAcquired: isAcquired === 1, holder: parseHolder(value) };
    },
    async renew(holderId, leaseMs) {
      return (await redis.eval(RENEW, 1, key, holderId, String(leaseMs))) === 1;
    },
    async release(holderId) {
      return (await redis.eval(RELEASE, 1, key, holderId)) === 1;
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
