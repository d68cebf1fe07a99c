/**
 * The event_at memory: per delivery, every normalised instant ever claimed, and by whom.
 *
 * A claim is taken when an event is ingested, before its job is added. The claim names its
 * source (file content + line, or request + index), not the job, so that:
 *  - the same source ingested again after a crash (claim taken, job not yet added) gets OWN and
 *    adds its job — nothing is lost in that window; once its event was sent, the claim is marked
 *    done and the same source is a duplicate too (completed jobs are not kept, so a job id cannot
 *    tell);
 *  - any other source with the same instant gets DUPLICATE and is never queued;
 *  - a job's own retries never consult the memory, so a crash between a send and its record
 *    cannot block the retry.
 * The memory outlives BullMQ's job records (BullMQ forgets a job id once the job is removed),
 * and expires `retentionDays` after a delivery's last claim.
 */
import type { RedisConnection } from './redis.js';
import type { Keys } from './keys.js';

// KEYS[1] dedup hash. ARGV[1] instant key, ARGV[2] source id, ARGV[3] ttl seconds.
// Returns 1 new claim, 2 own earlier claim, 0 duplicate of another source.
const CLAIM = `
local owner = redis.call('HGET', KEYS[1], ARGV[1])
if owner == false then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  return 1
end
if owner == ARGV[2] then return 2 end
return 0
`;
// An owner value `done:<source>` (set when the event was sent, see push-gate.ts) is no source:
// the same source claiming again is a duplicate.

export type ClaimResult = 'new' | 'own' | 'duplicate';

export interface DedupMemory {
  claim(deliveryId: string, instantKey: string, sourceId: string): Promise<ClaimResult>;
  /** Forgets one claim (a purged dead letter), so the instant may be sent again. */
  release(deliveryId: string, instantKey: string, sourceId: string): Promise<void>;
}

// KEYS[1] dedup hash. ARGV[1] instant key, ARGV[2] source id. Deletes only the owner's claim.
const RELEASE = `
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end
return 1
`;

export function createDedupMemory(redis: RedisConnection, keys: Keys, retentionDays: number): DedupMemory {
  const ttlSeconds = retentionDays * 86_400;
  return {
    async claim(deliveryId, instantKey, sourceId) {
      const result = Number(await redis.eval(CLAIM, 1, keys.dedup(deliveryId), instantKey, sourceId, ttlSeconds));
      return result === 1 ? 'new' : result === 2 ? 'own' : 'duplicate';
    },
    async release(deliveryId, instantKey, sourceId) {
      await redis.eval(RELEASE, 1, keys.dedup(deliveryId), instantKey, sourceId);
    },
  };
}
