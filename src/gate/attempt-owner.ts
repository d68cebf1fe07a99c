/**
 * Who holds a request's answer. Before a request leaves, the gate's `enter` writes the job's
 * attempt record (`attempt-owner:<jobId>`, a string: the owner process and the attempt's slot
 * member, a newline between, written by one SET; `parseAttemptRecord` reads it) and `leave` removes
 * it with the answer (push-gate-scripts.ts). A record of the earlier layout (a hash: `o`, `m`, `g`)
 * is still read. Each worker process keeps a liveness key (`owner:<ownerId>`) while it runs. A run
 * of the job that finds an attempt record of another owner:
 *   - owner alive (its liveness key exists) → waits ('owned'): that owner holds the answer, or will
 *     (push/kept-answers.ts keeps it through an outage or a refusal and writes it when it can);
 *   - owner's liveness key missing → the owner may be dead, or a failover lost its key: the run
 *     marks the record (a third line: when the key was first seen missing) and waits a grace;
 *   - still missing after the grace → the owner died with the answer: the request is sent again,
 *     and the journey says so ("answer unknown: owner process died; sent again").
 *
 * Why a live owner is never taken for a dead one, even across a failover. The attempt record is on
 * a replica before the request leaves (replica-wait.ts), so a promoted replica has it. The liveness
 * key has a TTL (`ttlMs`) and is written again every `ttlMs / 3`, and at once whenever the
 * process's connection becomes ready (a reconnect, possibly to a promoted replica that lacks the
 * newest writes). A failover can lose the key (it was not yet on the replica); the owner then
 * writes it again within one reconnect (ioredis retries at most every RECONNECT_MAX_MS) and one
 * heartbeat. The successor's grace,
 * counted on Redis' clock from the first time it found the key missing, is longer than both
 * together, so a live owner is seen again before the grace ends. A dead owner costs one TTL plus
 * one grace before its job is sent again. The in-memory timers of the successor play no part: the
 * grace mark and the liveness key are both in Redis and both are written again by whoever still
 * runs.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../log.js';
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { RECONNECT_MAX_MS } from '../store/redis.js';

/** The shortest liveness TTL: a shorter one would make every GC pause look like a death. */
const MIN_TTL_MS = 3000;

/** This process as an attempt's owner: host, pid and a random part (a restarted pid is not the same owner). */
export const SELF_OWNER = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

export interface OwnerTiming {
  /** The liveness key's TTL. */
  ttlMs: number;
  /** How often it is written again. */
  heartbeatMs: number;
  /** How long a successor waits after first finding an owner's key missing. */
  graceMs: number;
}

/** From the job lock's duration: an owner is declared dead about as fast as BullMQ declares a job stalled, plus the grace. */
export function ownerTiming(lockMs: number): OwnerTiming {
  const ttlMs = Math.max(MIN_TTL_MS, lockMs);
  const heartbeatMs = Math.floor(ttlMs / 3);
  return { ttlMs, heartbeatMs, graceMs: heartbeatMs + RECONNECT_MAX_MS + 2000 };
}

// `ownerCheck(attemptKey, ownerStem, self, graceMs)`: nil when this run may go (no record, its own,
// or the owner's grace is over: then the second value is true, "sent again"), else {'owned', ms}.
export const OWNER_LUA = `
-- known: the record's value as the caller read it already (an MGET; false when absent there, which
-- is also what an MGET answers for a record of the earlier layout, a hash: then it is read here).
local function attemptRead(attemptKey, known)
  local value = known or redis.pcall('GET', attemptKey)
  if type(value) == 'table' then
    local fields = redis.call('HMGET', attemptKey, 'o', 'm', 'g')
    return fields[1], fields[2], fields[3]
  end
  if not value then return nil, nil, nil end
  local owner, member, gone = string.match(value, '^([^\\n]*)\\n([^\\n]*)\\n?(.*)$')
  return owner, member, gone ~= '' and gone or nil
end
local function attemptMark(attemptKey, owner, member, gone)
  redis.call('SET', attemptKey, owner .. '\\n' .. member .. (gone and ('\\n' .. gone) or ''), 'KEEPTTL')
end
local function ownerCheck(attemptKey, ownerStem, self, graceMs)
  local owner, member, gone = attemptRead(attemptKey)
  if not owner or owner == self then return nil, false end
  if redis.call('EXISTS', ownerStem .. owner) == 1 then
    if gone then attemptMark(attemptKey, owner, member, nil) end
    return {'owned', 1000}, false
  end
  local now = nowMs()
  gone = tonumber(gone or '')
  if not gone then
    attemptMark(attemptKey, owner, member, now)
    return {'owned', graceMs}, false
  end
  if now - gone < graceMs then return {'owned', graceMs - (now - gone)}, false end
  return nil, true
end
local function ownerTake(attemptKey, self, member, ttlMs)
  redis.call('SET', attemptKey, self .. '\\n' .. member, 'PX', ttlMs)
end
-- Read only (a leave checks it first, before any write): true when the attempt record is this
-- attempt's, or gone (a failover may have lost it); false when another run took the job over after
-- judging this owner dead. The leave removes the record last, after its other writes: a Redis that
-- refuses writes (OOM) fails the leave at its first write, never after the record is gone.
-- known: as for attemptRead (the leave reads the record with the lock in one MGET: a GET fewer an
-- item, issue 46).
local function ownerIsMine(attemptKey, member, known)
  local _, current = attemptRead(attemptKey, known)
  return not current or current == member
end
`;

/** The parts of an attempt record's value (see the file header; the grace mark when set); null for none. */
export function parseAttemptRecord(value: string | null): { owner: string; member: string; goneAtMs?: number } | null {
  if (value === null) return null;
  const [owner, member, gone] = value.split('\n');
  if (owner === undefined || member === undefined) return null;
  return gone === undefined || gone === '' ? { owner, member } : { owner, member, goneAtMs: Number(gone) };
}

/** How long an attempt record is kept at most: far longer than any outage an answer is kept through. */
export const ATTEMPT_RECORD_TTL_MS = 7 * 86_400_000;

export interface OwnerLiveness {
  close(): Promise<void>;
}

/**
 * Keeps this process's liveness key: every `heartbeatMs`, and at once whenever the connection is
 * ready (after a reconnect). Failures are quiet: redis-health.ts speaks for Redis being away.
 */
export function keepOwnerAlive(redis: RedisConnection, keys: Keys, timing: OwnerTiming, logger: Logger): OwnerLiveness {
  const key = keys.owner(SELF_OWNER);
  const beat = async (): Promise<void> => {
    try {
      await redis.set(key, String(Date.now()), 'PX', timing.ttlMs);
    } catch (error) {
      logger.debug({ err: error }, 'owner liveness not written (Redis away or refusing writes)');
    }
  };
  const onReady = (): void => void beat();
  redis.on('ready', onReady);
  const timer = setInterval(onReady, timing.heartbeatMs);
  timer.unref();
  void beat();
  return {
    async close() {
      clearInterval(timer);
      redis.off('ready', onReady);
      // Not while Redis is away: the DEL would wait for it; the key expires by its TTL anyway.
      if (redis.status === 'ready') await redis.del(key).catch(() => undefined);
    },
  };
}
