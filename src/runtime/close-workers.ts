/**
 * Closing BullMQ workers within a bound. A worker's close() waits for its jobs, and a later
 * close(true) only joins that wait (BullMQ keeps the first close's promise): a request that never
 * answers held the process past its grace period. So the jobs are waited for by pausing the worker
 * (this process only; pause(false) resolves once its jobs are done), up to `graceMs`, and the
 * close comes after, forced when the wait ran out. While Redis is unreachable, refuses writes or
 * fails over, a job cannot finish (its result is a write) and a polite close waits on commands
 * queued for a Redis that is not there: the close is forced at once. A job left unfinished is
 * taken up again when its lock expires, here after a restart or by another process.
 */
import type { Worker } from '../queue/bullmq.js';
import type { RedisHealth } from '../store/redis-health.js';

export async function closeWorkers(
  workers: readonly Worker[],
  graceMs: number,
  health: RedisHealth,
  log: { warn: (o: object, m: string) => void },
): Promise<void> {
  let isForced = !health.isWritable();
  if (!isForced) {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), graceMs);
      timer.unref();
    });
    const finished = Promise.all(workers.map((worker) => worker.pause(false)));
    isForced = (await Promise.race([finished, expired])) === 'expired';
    clearTimeout(timer);
    if (isForced) log.warn({ graceMs }, 'grace period over: closing workers with jobs still active (they will be taken up again)');
  }
  await Promise.all(workers.map((worker) => worker.close(isForced)));
}
