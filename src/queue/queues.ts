/**
 * The BullMQ queues of one deployment: one per item kind and the housekeeping queue (outcome
 * messages travel in a plain list: `outcome-list.ts`). Job options live here so every producer adds jobs the same way.
 *
 * Job lifecycle: waiting|delayed → active → completed (removed at once: the re-drop memory is the
 * compact document record of push-gate.ts, and the event_at memory of gate/event-claims.ts) | failed
 * (= dead-lettered, kept until `dlq purge`). Retryable errors go back to delayed with exponential backoff and jitter;
 * 429 and 401 move the job to delayed without spending an attempt.
 */
import type { JobsOptions } from 'bullmq';
import { Queue } from './bullmq.js';
import type { RedisConnection } from '../store/redis.js';
import type { DeliveryConfig } from '../config/schema.js';
import { HOUSEKEEPING_QUEUE, ITEM_KINDS, type ItemKind } from '../store/keys.js';
import type { ItemJob } from '../store/payloads.js';

export interface QueueSet {
  items: Readonly<Record<ItemKind, Queue<ItemJob>>>;
  housekeeping: Queue;
  close(): Promise<void>;
}

export function itemJobOptions(delivery: DeliveryConfig): JobsOptions {
  return {
    attempts: delivery.maxAttempts,
    backoff: { type: 'exponential', delay: delivery.backoffMs, jitter: 0.5 },
    removeOnComplete: true,
    removeOnFail: false,
  };
}

/**
 * BullMQ's event stream per queue (`<queue>:events`) is read by no one here (no QueueEvents; the
 * outcome travels in its own list), so it keeps only the last ~1,000 events for a look with
 * XREVRANGE, not BullMQ's default 10,000 (~1.2 MB a queue). The Queue writes it to the queue's meta
 * hash, where every worker's scripts read it.
 */
export const QUEUE_STREAM_OPTIONS = { events: { maxLen: 1000 } } as const;

export function openQueues(redis: RedisConnection, prefix: string, delivery: DeliveryConfig): QueueSet {
  const options = { connection: redis, prefix, streams: QUEUE_STREAM_OPTIONS };
  const items = {} as Record<ItemKind, Queue<ItemJob>>;
  for (const kind of ITEM_KINDS) {
    items[kind] = new Queue<ItemJob>(kind, { ...options, defaultJobOptions: itemJobOptions(delivery) });
  }
  const housekeeping = new Queue(HOUSEKEEPING_QUEUE, {
    ...options,
    defaultJobOptions: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
  });
  let closing: Promise<void> | undefined;
  return {
    items,
    housekeeping,
    close() {
      closing ??= Promise.allSettled([...Object.values(items), housekeeping].map((queue) => queue.close())).then(() => undefined);
      return closing;
    },
  };
}

/** Items of one kind held in Redis and not yet finished: what back-pressure counts. */
export async function backlogOf(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized', 'waiting-children');
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}
