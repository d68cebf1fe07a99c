/**
 * Start-up (and periodic) reconcile of `.inflight/`: every file there either has a job that will
 * send an outcome, or is taken up again. This is what makes `kill -9` of the spool owner harmless:
 *  - no job (crash between the rename and the add) → validated and queued again; but not while an
 *    outcome of its job waits to be applied: a finished job is removed, so it reads as no job, and
 *    its outcome will move the file (taken up again then, the item was sent twice: the traces
 *    failover test, under load, once);
 *  - job completed or dead-lettered but the file still here (its outcome was lost or raced) →
 *    moved as its job ended; a job failed by a Redis error, not dead-lettered, is put back to work
 *    (queue/redis-failures.ts) and its file waits;
 *  - an events file whose batch was never sealed → ingested again (its claims come back as OWN);
 *    a sealed batch whose jobs all finished → finished.
 */
import type { Logger } from '../log.js';
import { createAttemptLog } from '../queue/attempts.js';
import { readDeadLetterFacts } from '../queue/dead-letter.js';
import { documentJobId } from '../queue/enqueue.js';
import { pendingOutcomeJobIds } from '../queue/outcome-list.js';
import { retryIfFailedByRedis } from '../queue/redis-failures.js';
import { deadLetterReport, type DeadLetterFacts } from '../queue/failure-report.js';
import type { SpoolKind } from '../store/keys.js';
import { resumeInflight, type ClaimDeps } from './claim.js';
import type { InflightIndex } from './inflight-index.js';
import { parseInflightName } from './paths.js';
import { join } from 'node:path';
import { parseSpoolName } from '../validate/spool-name.js';

/** `settledBefore`: only files claimed before this time (a periodic pass leaves fresh claims alone). */
export async function reconcileInflight(deps: ClaimDeps, index: InflightIndex, logger: Logger, settledBefore = Number.POSITIVE_INFINITY): Promise<{ resumed: number; settled: number }> {
  let resumed = 0;
  let settled = 0;
  const attempts = createAttemptLog(deps.enqueue.redis, deps.enqueue.keys);
  // Read once, and only when a job reads as unknown (rare: a crash, a lost write, or a job that just finished).
  let pending: Promise<Set<string>> | undefined;
  const isOutcomePending = async (jobId: string): Promise<boolean> => (await (pending ??= pendingOutcomeJobIds(deps.enqueue.redis, deps.enqueue.keys, deps.paths.spoolId))).has(jobId);
  for (const kind of ['labels', 'cte'] as const) {
    const queue = deps.enqueue.queues.items[kind === 'labels' ? 'label' : 'cte'];
    for (const name of index.olderThan(kind, settledBefore)) {
      const parsed = parseInflightName(name);
      const spoolName = parsed === null ? null : parseSpoolName(kind, parsed.fileName);
      if (parsed === null || spoolName === null || !spoolName.ok) continue;
      const jobId = documentJobId({ kind: kind === 'labels' ? 'label' : 'cte', deliveryId: spoolName.value.deliveryId, origin: { contentId: parsed.contentId } } as Parameters<typeof documentJobId>[0]);
      const state = await queue.getJobState(jobId);
      if (state === 'unknown') {
        if (await isOutcomePending(jobId)) continue;
        await resumeInflight(deps, kind, name, parsed.claimId, parsed.fileName);
        resumed += 1;
      } else if (state === 'completed') {
        await deps.sink.archive(kind, join(deps.paths.inflight(kind), name), parsed.fileName);
        index.forget(kind, name);
        settled += 1;
      } else if (state === 'failed') {
        const job = await queue.getJob(jobId);
        // Failed by a Redis error (BullMQ's own finish met MOVED, a closed connection…), not by a
        // dead letter: no refusal of the API, so the job is put back to work and the file waits.
        if (job !== undefined && (await retryIfFailedByRedis(job))) {
          logger.info({ kind, file: parsed.fileName, jobId, reason: job.failedReason }, 'job failed by a Redis error put back to work (no dead letter)');
          continue;
        }
        // The outcome that carried this dead letter's report was lost: the same report is built
        // from the failed job and its attempt log. A job purged meanwhile left no facts: nothing
        // says the API refused it.
        const facts: DeadLetterFacts =
          job === undefined
            ? { error: { code: 'UNKNOWN', message: 'dead-lettered (its job was purged before the file was moved)' }, attempts: null, firstFailureAt: null, lastFailureAt: null, jobId, deliveryId: spoolName.value.deliveryId }
            : await readDeadLetterFacts(attempts, job);
        await deps.sink.reject(kind, join(deps.paths.inflight(kind), name), parsed.fileName, deadLetterReport(facts));
        index.forget(kind, name);
        settled += 1;
      }
    }
  }
  for (const name of index.olderThan('events' satisfies SpoolKind, settledBefore)) {
    const parsed = parseInflightName(name);
    if (parsed === null) continue;
    const batch = await deps.batches.read(parsed.claimId);
    if (batch === null) {
      await resumeInflight(deps, 'events', name, parsed.claimId, parsed.fileName);
      resumed += 1;
    } else if (await deps.batches.isComplete(parsed.claimId)) {
      await deps.sink.finishBatch(parsed.claimId);
      settled += 1;
    }
  }
  if (resumed + settled > 0) logger.info({ resumed, settled }, 'in-flight files reconciled');
  return { resumed, settled };
}
