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
 *    a sealed batch whose jobs all finished → finished;
 *  - a sealed batch that cannot complete (no job of it marked done for STUCK_MS; in the pass after
 *    a Redis episode, at once) → finished job by job: a dead-lettered job is marked done with its
 *    dead letter; a job gone from Redis with no outcome waiting (finished, or lost to a failover)
 *    goes through the event_at claims again, read from the file: an event its claim records as
 *    sent is marked done, never sent again; one not sent is queued again. (A failover lost a job's
 *    done mark after its event was accepted: the batch never completed, its file stayed in flight.)
 */
import type { Logger } from '../log.js';
import { createAttemptLog, type AttemptLog } from '../queue/attempts.js';
import { readDeadLetterFacts } from '../queue/dead-letter.js';
import { collectingJobId, documentJobId, enqueueEvents } from '../queue/enqueue.js';
import { pendingOutcomeJobIds } from '../queue/outcome-list.js';
import { retryIfFailedByRedis } from '../queue/redis-failures.js';
import { deadLetterReport, type DeadLetterFacts } from '../queue/failure-report.js';
import type { SpoolKind } from '../store/keys.js';
import { inflightEventJobs, resumeInflight, type ClaimDeps } from './claim.js';
import type { InflightIndex } from './inflight-index.js';
import { parseInflightName } from './paths.js';
import { join } from 'node:path';
import { parseSpoolName } from '../validate/spool-name.js';

/**
 * How long a sealed batch may go without a job of it marked done before it is finished job by job:
 * longer than the chain's wait for a registered event's job (push-gate.ts, 30 s) and a park.
 */
export const STUCK_MS = 40_000;

/** Per in-flight index (one per spool session): each incomplete sealed batch's done count, and since when it has not moved. */
const progressOf = new WeakMap<InflightIndex, Map<string, { done: number; since: number }>>();

/**
 * `settledBefore`: only files claimed before this time (a periodic pass leaves fresh claims alone).
 * `stuckMs`: how long a sealed batch goes without progress before it is finished job by job.
 */
export async function reconcileInflight(
  deps: ClaimDeps,
  index: InflightIndex,
  logger: Logger,
  settledBefore = Number.POSITIVE_INFINITY,
  stuckMs = STUCK_MS,
): Promise<{ resumed: number; settled: number }> {
  const attempts = createAttemptLog(deps.enqueue.redis, deps.enqueue.keys);
  // Read once, and only when a job reads as unknown (rare: a crash, a lost write, or a job that just finished).
  let pending: Promise<Set<string>> | undefined;
  const isOutcomePending = async (jobId: string): Promise<boolean> => (await (pending ??= pendingOutcomeJobIds(deps.enqueue.redis, deps.enqueue.keys, deps.paths.spoolId))).has(jobId);
  const documents = await reconcileDocuments(deps, index, logger, settledBefore, isOutcomePending, attempts);
  const events = await reconcileEvents(deps, index, logger, settledBefore, { stuckMs, isOutcomePending, attempts });
  const resumed = documents.resumed + events.resumed;
  const settled = documents.settled + events.settled;
  if (resumed + settled > 0) logger.info({ resumed, settled }, 'in-flight files reconciled');
  return { resumed, settled };
}

async function reconcileDocuments(
  deps: ClaimDeps,
  index: InflightIndex,
  logger: Logger,
  settledBefore: number,
  isOutcomePending: (jobId: string) => Promise<boolean>,
  attempts: AttemptLog,
): Promise<{ resumed: number; settled: number }> {
  let resumed = 0;
  let settled = 0;
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
          deps.logger.info({ kind, file: parsed.fileName, jobId, reason: job.failedReason }, 'job failed by a Redis error put back to work (no dead letter)');
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
  return { resumed, settled };
}

interface EventsReconcile {
  stuckMs: number;
  isOutcomePending(jobId: string): Promise<boolean>;
  attempts: AttemptLog;
}

async function reconcileEvents(
  deps: ClaimDeps,
  index: InflightIndex,
  logger: Logger,
  settledBefore: number,
  how: EventsReconcile,
): Promise<{ resumed: number; settled: number }> {
  let resumed = 0;
  let settled = 0;
  let progress = progressOf.get(index);
  if (progress === undefined) progressOf.set(index, (progress = new Map()));
  const seen = new Set<string>();
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
    } else if (batch.isSealed) {
      seen.add(parsed.claimId);
      const done = await deps.batches.doneCount(parsed.claimId);
      const now = deps.clock.now();
      const last = progress.get(parsed.claimId);
      if (last === undefined || last.done !== done) progress.set(parsed.claimId, { done, since: now });
      if (now - (last?.done === done ? last.since : now) < how.stuckMs) continue;
      progress.set(parsed.claimId, { done, since: now });
      const outcome = await finishJobByJob(deps, name, parsed, how, logger);
      if (outcome === 'resumed') resumed += 1;
      if (outcome === 'finished') settled += 1;
    }
  }
  // Batches no longer incomplete in flight (finished, or their files gone) are forgotten.
  for (const batchId of progress.keys()) if (!seen.has(batchId)) progress.delete(batchId);
  return { resumed, settled };
}

/**
 * A sealed batch that made no progress for `stuckMs` (or any, in the pass after a Redis episode):
 * each of its jobs not marked done is looked at (one pipeline: its hash, and whether it finished).
 * One that runs or waits (a delayed event, a slow API) is left to finish. A finished one
 * (dead-lettered, its outcome lost) is marked done with its dead letter. One gone from Redis whose
 * outcome waits is left to that outcome. Any other gone job (finished without its mark, or lost to
 * a failover) is queued again through the event_at claims, from the file: an event its claim
 * records as sent is marked done, never sent again; one not sent is queued again. Only the gone
 * ones: queued again beside a job of the file that runs, the claim could read unsent just before
 * that job's answer, and its job be made again after it ended (sent twice).
 * 'finished': the batch completed now.
 */
async function finishJobByJob(
  deps: ClaimDeps,
  name: string,
  parsed: { claimId: string; fileName: string },
  how: EventsReconcile,
  logger: Logger,
): Promise<'finished' | 'resumed' | 'waiting'> {
  const queue = deps.enqueue.queues.items.collecting;
  const unfinished = await deps.batches.unfinished(parsed.claimId);
  const looks = deps.enqueue.redis.pipeline();
  for (const jobId of unfinished) looks.exists(queue.toKey(jobId)).hexists(queue.toKey(jobId), 'finishedOn');
  const replies = ((await looks.exec()) ?? []).map(([error, value]) => (error === null ? Number(value) : -1));
  let isComplete = false;
  let deadLettered = 0;
  const gone = new Set<string>();
  for (const [i, jobId] of unfinished.entries()) {
    const [exists, isFinished] = [replies[2 * i], replies[2 * i + 1]];
    if (exists === 0 && !(await how.isOutcomePending(jobId))) gone.add(jobId);
    if (exists !== 1 || isFinished !== 1) continue;
    const state = await queue.getJobState(jobId);
    if (state !== 'failed' && state !== 'completed') continue;
    const job = await queue.getJob(jobId);
    // Failed by a Redis error, not dead-lettered: put back to work (queue/redis-failures.ts); its mark comes with its outcome.
    if (state === 'failed' && job !== undefined && (await retryIfFailedByRedis(job))) continue;
    const line = job !== undefined && 'line' in job.data.origin ? job.data.origin.line : 0;
    const dead = state === 'failed' && job !== undefined ? { line, ...(await readDeadLetterFacts(how.attempts, job)) } : undefined;
    if (dead !== undefined) deadLettered += 1;
    isComplete = (await deps.batches.markDone(parsed.claimId, jobId, dead)) || isComplete;
  }
  let queued = 0;
  if (gone.size > 0) {
    const jobs = (await inflightEventJobs(deps, name, parsed.claimId, parsed.fileName)) ?? [];
    const enqueued = await enqueueEvents(
      deps.enqueue,
      jobs.filter((job) => gone.has(collectingJobId(job.deliveryId, job.instantKey))),
    );
    queued = enqueued.jobIds.length;
    // Sent (their claims say so), or another source's instant: either way none of this file's to send.
    const settledIds = [...enqueued.alreadySent.map(({ jobId }) => jobId), ...[...gone].filter((id) => !enqueued.jobIds.includes(id))];
    for (const jobId of new Set(settledIds)) isComplete = (await deps.batches.markDone(parsed.claimId, jobId)) || isComplete;
  }
  if (gone.size === 0 && deadLettered === 0 && !isComplete) return 'waiting';
  logger.warn(
    { kind: 'events', file: parsed.fileName, unfinished: unfinished.length, deadLettered, gone: gone.size, queuedAgain: queued, jobIds: [...gone].slice(0, 10) },
    'events file made no progress: its batch finished job by job',
  );
  if (isComplete) {
    await deps.sink.finishBatch(parsed.claimId);
    return 'finished';
  }
  return queued > 0 ? 'resumed' : 'waiting';
}
