/**
 * A job in an item queue's failed set is a dead letter only when the job processor made it one
 * (`<CODE>: <message>`, with its outcome written). A job can also end there because Redis failed
 * around it: BullMQ spends an attempt on an error thrown by a run or by its own finishing (a
 * moveToFinished met by MOVED after a Cluster promotion, a closed connection), and after the last
 * one the job is failed with that error's message as its reason. Such a job was never refused by
 * the API and has no outcome: it is put back to work with its attempts reset, never reported,
 * moved to failed/ nor counted as a dead letter.
 *
 * The worker role sweeps the failed sets for them (the failures since its last pass; all of them
 * at its start); the in-flight reconcile asks about the job of a file it finds failed.
 */
import type { Job } from 'bullmq';
import { isRedisErrorText } from '../store/redis-errors.js';
import { ITEM_KINDS } from '../store/keys.js';
import type { ItemJob } from '../store/payloads.js';
import type { QueueSet } from './queues.js';
import type { RedisConnection } from '../store/redis.js';

const READ_BATCH = 1000;

/** The failed job ended so because of Redis, not by the job processor's dead letter. */
export function isFailedByRedis(job: Pick<Job, 'failedReason'>): boolean {
  return isRedisErrorText(job.failedReason);
}

/** Puts a job failed by Redis back to work (attempts reset); false when it is not one, or not failed now. */
export async function retryIfFailedByRedis(job: Job<ItemJob>): Promise<boolean> {
  if (!isFailedByRedis(job)) return false;
  if ((await job.getState()) !== 'failed') return false;
  await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
  return true;
}

/**
 * Every job of the item queues failed by Redis since `sinceMs` (its finish time, the failed set's
 * score) is put back to work; returns their ids. Reads only ids and reasons, not the jobs' data.
 */
export async function retryFailedByRedis(redis: RedisConnection, queues: QueueSet, sinceMs = 0): Promise<string[]> {
  const retried: string[] = [];
  for (const kind of ITEM_KINDS) {
    const queue = queues.items[kind];
    const ids = await redis.zrangebyscore(queue.keys['failed'] ?? queue.toKey('failed'), sinceMs, '+inf');
    // Their reasons a thousand at a time: a first pass reads every dead letter kept.
    for (let start = 0; start < ids.length; start += READ_BATCH) {
      const batch = ids.slice(start, start + READ_BATCH);
      const pipeline = redis.pipeline();
      for (const id of batch) pipeline.hget(queue.toKey(id), 'failedReason');
      const reasons = (await pipeline.exec()) ?? [];
      for (const [index, id] of batch.entries()) {
        const [error, reason] = reasons[index] ?? [null, null];
        if (error !== null || typeof reason !== 'string' || !isRedisErrorText(reason)) continue;
        const job = (await queue.getJob(id)) as Job<ItemJob> | undefined;
        if (job !== undefined && (await retryIfFailedByRedis(job))) retried.push(id);
      }
    }
  }
  return retried;
}
