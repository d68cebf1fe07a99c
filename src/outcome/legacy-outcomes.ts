/**
 * An older version sent outcome messages as jobs of a BullMQ queue per spool; what such a version
 * left there (an upgrade while files were in flight) is carried over into the list, then the old
 * queue is removed. Costs one EXISTS when there is nothing to carry over. Run once per spool as an
 * upgrade step (runtime/upgrades.ts).
 */
import { Queue } from '../queue/bullmq.js';
import { Cluster } from 'ioredis';
import type { Logger } from '../log.js';
import type { Keys } from '../store/keys.js';
import { legacyOutcomeQueueName } from '../store/keys.js';
import { pushOutcome } from '../queue/outcome-list.js';
import type { OutcomeMessage } from '../store/payloads.js';
import type { RedisConnection } from '../store/redis.js';

export async function carryOverLegacyOutcomes(redis: RedisConnection, keys: Keys, spoolId: string, logger: Logger): Promise<number> {
  const name = legacyOutcomeQueueName(spoolId);
  if ((await redis.exists(`${keys.bullPrefix}:${name}:id`, `${keys.bullPrefix}:${name}:meta`)) === 0) return 0;
  // BullMQ's pipelines break on an auto-pipelined connection (store/redis.ts): the old queue is read on one of its own.
  const connection = redis instanceof Cluster ? redis.duplicate(undefined, { enableAutoPipelining: false }) : redis.duplicate({ enableAutoPipelining: false });
  const queue = new Queue<OutcomeMessage>(name, { connection, prefix: keys.bullPrefix });
  try {
    const jobs = await queue.getJobs(['wait', 'prioritized', 'delayed', 'active', 'failed']);
    for (const job of jobs) await pushOutcome(redis, keys, spoolId, job.data);
    await queue.obliterate({ force: true });
    if (jobs.length > 0) logger.info({ carried: jobs.length }, 'carried the outcome messages of the older outcome queue over');
    return jobs.length;
  } finally {
    await queue.close();
    connection.disconnect();
  }
}
