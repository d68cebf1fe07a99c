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
import { defineScript } from './script.js';

// KEYS: 1 the delivery's event_at memory (hash). ARGV: 1 instant key, 2 source id, 3 ttl s.
// Returns 1 new claim, 2 own earlier claim, 0 duplicate of another source.
// An owner value `done:<source>` (set when the event was sent, see push-gate.ts) is no source:
// the same source claiming again is a duplicate.
const CLAIM = defineScript(
  'dedupClaim',
  `
local dedupKey = KEYS[1]
local instant, source, ttlSec = ARGV[1], ARGV[2], ARGV[3]
local owner = redis.call('HGET', dedupKey, instant)
if owner == false then
  redis.call('HSET', dedupKey, instant, source)
  redis.call('EXPIRE', dedupKey, ttlSec)
  return 1
end
if owner == source then return 2 end
return 0
`,
);

export type ClaimResult = 'new' | 'own' | 'duplicate';

export interface DedupMemory {
  claim(deliveryId: string, instantKey: string, sourceId: string): Promise<ClaimResult>;
  /** Forgets one claim (a purged dead letter), so the instant may be sent again. */
  release(deliveryId: string, instantKey: string, sourceId: string): Promise<void>;
}

// KEYS: 1 the delivery's event_at memory. ARGV: 1 instant key, 2 source id.
// Deletes the claim only when that source holds it. Returns 1.
const RELEASE = defineScript(
  'dedupRelease',
  `
local dedupKey = KEYS[1]
local instant, source = ARGV[1], ARGV[2]
if redis.call('HGET', dedupKey, instant) == source then redis.call('HDEL', dedupKey, instant) end
return 1
`,
);

export function createDedupMemory(redis: RedisConnection, keys: Keys, retentionDays: number): DedupMemory {
  const ttlSeconds = retentionDays * 86_400;
  return {
    async claim(deliveryId, instantKey, sourceId) {
      const result = Number(await CLAIM(redis, [keys.dedup(deliveryId)], [instantKey, sourceId, ttlSeconds]));
      return result === 1 ? 'new' : result === 2 ? 'own' : 'duplicate';
    },
    async release(deliveryId, instantKey, sourceId) {
      await RELEASE(redis, [keys.dedup(deliveryId)], [instantKey, sourceId]);
    },
  };
}
