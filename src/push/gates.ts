/**
 * Checks a job passes before its request is sent.
 *
 * Documents (label, CT-e): sending again replaces the delivery's earlier document (4.3 rule 3), so
 * only the newest document claimed for a delivery may be sent; an older one still pending is
 * superseded. The check and the send happen under a per-delivery lock, so an older job can never
 * overwrite a newer document already sent.
 *
 * Collecting events: events of one delivery are sent in event_at order. A job waits while an
 * earlier unfinished event of its delivery exists; a member whose job no longer exists or already
 * finished is dropped from the order set so it can never block the others.
 */
import type { Queue } from 'bullmq';
import type { RedisConnection } from '../queue/redis.js';
import type { ItemKind, Keys } from '../queue/keys.js';

// KEYS[1] lock. ARGV[1] owner job id, ARGV[2] ttl ms. Takes the lock when it is free or already
// this job's. Returns 1 when taken, 0 when another job holds it.
const LOCK = `local owner = redis.call('GET', KEYS[1]) if owner == false or owner == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end return 0`;
// KEYS[1] lock. ARGV[1] owner job id. Deletes the lock only when we still hold it.
const UNLOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
// KEYS[1] latest hash. ARGV[1] delivery id, ARGV[2] job id. Forgets the pointer only if it is ours.
const FORGET_LATEST = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0`;

export interface DocumentLock {
  release(): Promise<void>;
}

/**
 * The lock is owned by the job, not by one run of it: a worker killed while holding it (kill -9)
 * leaves it behind for `ttlMs`, and the same job, taken up again after the restart, must be able to
 * go on rather than wait for the lock to expire.
 */
export async function lockDocument(redis: RedisConnection, keys: Keys, kind: ItemKind, deliveryId: string, jobId: string, ttlMs: number): Promise<DocumentLock | null> {
  const key = keys.documentLock(kind, deliveryId);
  if (Number(await redis.eval(LOCK, 1, key, jobId, ttlMs)) !== 1) return null;
  return {
    async release() {
      await redis.eval(UNLOCK, 1, key, jobId);
    },
  };
}

export async function isLatestDocument(redis: RedisConnection, keys: Keys, kind: ItemKind, deliveryId: string, jobId: string): Promise<boolean> {
  const latest = await redis.hget(keys.latestDocument(kind), deliveryId);
  return latest === null || latest === jobId;
}

export async function forgetLatestDocument(redis: RedisConnection, keys: Keys, kind: ItemKind, deliveryId: string, jobId: string): Promise<void> {
  await redis.eval(FORGET_LATEST, 1, keys.latestDocument(kind), deliveryId, jobId);
}

/** True when no earlier unfinished event of the same delivery is waiting to be sent. */
export async function isNextEvent(redis: RedisConnection, keys: Keys, queue: Queue, deliveryId: string, jobId: string): Promise<boolean> {
  const key = keys.eventOrder(deliveryId);
  for (;;) {
    const head = await redis.zrange(key, 0, 0);
    const first = head[0];
    if (first === undefined || first === jobId) return true;
    const state = await queue.getJobState(first);
    if (state === 'unknown' || state === 'completed' || state === 'failed') {
      await redis.zrem(key, first);
      continue;
    }
    return false;
  }
}

export async function finishEvent(redis: RedisConnection, keys: Keys, deliveryId: string, jobId: string): Promise<void> {
  await redis.zrem(keys.eventOrder(deliveryId), jobId);
}
