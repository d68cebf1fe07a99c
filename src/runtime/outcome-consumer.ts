/**
 * The spool holder's consumer of outcome messages (`queue/outcome-list.ts`): it takes the oldest
 * messages in batches, moves their files (outcome/apply.ts), then removes the batch. Waiting costs
 * one blocking command on a connection of its own, woken by the next message.
 */
import { Queue } from 'bullmq';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Keys } from '../queue/keys.js';
import { legacyOutcomeQueueName } from '../queue/keys.js';
import { openOutcomeInbox, pushOutcome, type OutcomeEntry } from '../queue/outcome-list.js';
import type { OutcomeMessage } from '../queue/payloads.js';
import type { RedisConnection } from '../queue/redis.js';

/** Messages taken at once; applied BATCH_CONCURRENCY at a time (moves of one name are serialized in files.ts). */
const BATCH = 64;
const BATCH_CONCURRENCY = 16;
/** Longest one blocking wait: retries that came due are looked at least this often. */
const WAIT_MS = 1000;
/** Longest `stop` waits for a pass under way. */
const STOP_WAIT_MS = 5000;
/** After Redis errors, the next try waits this long (then again). */
const ERROR_PAUSE_MS = 1000;

export interface OutcomeConsumerDeps {
  redis: RedisConnection;
  keys: Keys;
  spoolId: string;
  /** Moves one outcome's files; throws when the move failed (it is tried again later). */
  apply(message: OutcomeMessage): Promise<void>;
  /** Whether this process still holds the spool's lease: nothing is applied or removed once it does not. */
  isHeld(): boolean;
  clock: Clock;
  logger: Logger;
}

export interface OutcomeConsumer {
  /** Waits until no message waits in the list and none is being applied, at most `maxMs`. */
  drain(maxMs: number): Promise<void>;
  stop(): Promise<void>;
}

export function startOutcomeConsumer(deps: OutcomeConsumerDeps): OutcomeConsumer {
  const inbox = openOutcomeInbox(deps.redis, deps.keys, deps.spoolId);
  const log = deps.logger;
  let isStopped = false;
  let nextDueCheck = 0;
  let isFailing = false;
  let idleWaiters: Array<() => void> = [];
  let isIdle = false;

  async function applyBatch(batch: OutcomeEntry[]): Promise<Array<OutcomeEntry & { error: string }>> {
    const failed: Array<OutcomeEntry & { error: string }> = [];
    let next = 0;
    const run = async (): Promise<void> => {
      while (next < batch.length) {
        const entry = batch[next++]!;
        if (entry.isUnreadable === true) {
          failed.push({ ...entry, error: 'not an outcome message' });
          log.error({ entry: entry.message }, 'an unreadable outcome message was set aside (kept in the spool’s failed outcomes)');
          continue;
        }
        try {
          await deps.apply(entry.message);
        } catch (error) {
          const message = (error as Error).message;
          failed.push({ ...entry, error: message });
          log.error({ jobId: entry.message.jobId, kind: entry.message.kind, failures: entry.failures + 1, err: error }, 'moving a file failed; will retry');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(BATCH_CONCURRENCY, batch.length) }, run));
    return failed;
  }

  async function pass(): Promise<boolean> {
    const now = deps.clock.now();
    if (now >= nextDueCheck) {
      nextDueCheck = now + WAIT_MS;
      await inbox.moveDue(now);
    }
    const batch = await inbox.peek(BATCH);
    if (batch.length === 0) return false;
    // The lease checked before and after: a batch applied by a process that lost the lease meanwhile
    // stays in the list for the next holder (applying it again moves nothing twice).
    if (!deps.isHeld()) return false;
    const failed = await applyBatch(batch);
    if (!deps.isHeld()) return false;
    await inbox.settle(batch.length, failed, deps.clock.now());
    return true;
  }

  const loop = (async () => {
    while (!isStopped) {
      try {
        const didWork = await pass();
        if (isFailing) log.info('outcome messages are read again');
        isFailing = false;
        if (didWork) continue;
        isIdle = true;
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const wake of waiters) wake();
        if (!deps.isHeld()) await pause(ERROR_PAUSE_MS);
        else await inbox.waitForMessages(WAIT_MS);
        isIdle = false;
      } catch (error) {
        if (isStopped) break;
        if (!isFailing) log.error({ err: error }, 'reading outcome messages failed; trying again');
        isFailing = true;
        await pause(ERROR_PAUSE_MS);
      }
    }
  })();

  function pause(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms).unref());
  }

  return {
    async drain(maxMs) {
      const deadline = Date.now() + maxMs;
      const timeLeft = (): number => Math.max(0, deadline - Date.now());
      while (timeLeft() > 0 && !isStopped) {
        // Redis away (its commands wait for the reconnect) ends the drain at the deadline, not never.
        const waiting = await Promise.race([
          inbox.pending().then(
            ({ waiting: n }) => n,
            () => -1,
          ),
          pause(timeLeft()).then(() => -1),
        ]);
        if (waiting < 0 || (waiting === 0 && isIdle)) return;
        await Promise.race([new Promise<void>((resolve) => idleWaiters.push(resolve)), pause(Math.min(50, Math.max(1, timeLeft())))]);
      }
    },
    async stop() {
      isStopped = true;
      await inbox.close();
      // A pass waiting on Redis (away: its commands wait for the reconnect) is not waited for long;
      // what it did not settle stays in the list for the next holder.
      await Promise.race([loop, pause(STOP_WAIT_MS)]);
    },
  };
}

/**
 * An older version sent outcome messages as jobs of a BullMQ queue per spool; what such a version
 * left there (an upgrade while files were in flight) is carried over into the list, then the old
 * queue is removed. Costs one EXISTS when there is nothing to carry over.
 */
export async function carryOverLegacyOutcomes(redis: RedisConnection, keys: Keys, spoolId: string, logger: Logger): Promise<number> {
  const name = legacyOutcomeQueueName(spoolId);
  if ((await redis.exists(`${keys.bullPrefix}:${name}:id`, `${keys.bullPrefix}:${name}:meta`)) === 0) return 0;
  const queue = new Queue<OutcomeMessage>(name, { connection: redis, prefix: keys.bullPrefix });
  try {
    const jobs = await queue.getJobs(['wait', 'prioritized', 'delayed', 'active', 'failed']);
    for (const job of jobs) await pushOutcome(redis, keys, spoolId, job.data);
    await queue.obliterate({ force: true });
    if (jobs.length > 0) logger.info({ carried: jobs.length }, 'carried the outcome messages of the older outcome queue over');
    return jobs.length;
  } finally {
    await queue.close();
  }
}
