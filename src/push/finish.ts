/**
 * The end of an item: the push gate's `leave` (counters, slot stamp, document and event-order
 * bookkeeping, the attempt record released) and — for items that came from a file — the outcome
 * message to the process that holds the spool, appended by the same script, as is a dead letter's
 * last failed attempt: the answer is one write, all or nothing, one round trip. A parked event behind this one is woken in the same
 * script (it goes to the front of the wait list: gate/event-wake.ts).
 */
import type { Job } from 'bullmq';
import type { SyncError } from '../errors.js';
import type { AttemptRecord } from '../queue/attempts.js';
import type { ItemJob, ItemResult, OutcomeMessage } from '../store/payloads.js';
import { outcomeEntryJson, outcomeKeys } from '../queue/outcome-list.js';
import { batchDeadLetterJson } from '../queue/batches.js';
import { deadLetterFactsOfOutcome } from '../queue/failure-report.js';
import type { AttemptAnswer, OutcomeWrite, SlotUse } from '../gate/push-gate.js';
import type { PushDeps } from './deps.js';
import { spanBoundTo } from '../trace.js';

export async function finishItem(
  deps: PushDeps,
  job: Job<ItemJob>,
  result: ItemResult,
  slot: SlotUse | null,
  error?: SyncError,
  answer?: AttemptAnswer,
  failure?: AttemptRecord,
): Promise<void> {
  const item = job.data;
  const jobId = String(job.id);
  // A dead letter's history: the attempts recorded before, and this one (`failure`, written by the same leave).
  const history = result === 'dead-lettered' ? [...(await deps.attempts.read(jobId)), ...(failure === undefined ? [] : [failure])] : [];
  // A finish run twice (a stalled job taken up again) writes its message twice: applying an
  // outcome is idempotent.
  const outcome = item.origin.source === 'spool' ? outcomeWrite(deps, item.origin.spoolId, outcomeOf(deps, job, result, history, error)) : undefined;
  await deps.gate.leave(item, jobId, slot, result, answer, {
    ...(outcome === undefined ? {} : { outcome }),
    ...(failure === undefined ? {} : { failure: deps.attempts.append(jobId, failure) }),
  });
  // The item's end, in its trace: an event on the run's span (a span of its own cost as much as the
  // request's; BENCHMARKS.md, issue 38): accepted, duplicate (the API's repeat), superseded or dead-lettered.
  spanBoundTo(job)?.addEvent(`settled ${result === 'repeat' ? 'duplicate' : result}`);
  if (result === 'repeat') deps.logger.warn({ kind: item.kind, deliveryId: item.deliveryId, jobId }, 'API reported the event_at as a repeat');
}

/**
 * The outcome message's write. An events file's line is marked done in its batch by the same
 * leave (issue 46): the message says so, and which of the two messages is appended says whether
 * the line completed the batch (the consumer then moves the file without a call of its own).
 */
function outcomeWrite(deps: PushDeps, spoolId: string, message: OutcomeMessage): OutcomeWrite {
  const list = outcomeKeys(deps.keys, spoolId).list;
  const { origin } = message;
  if (!('batchId' in origin)) return { list, entry: outcomeEntryJson(message) };
  const { batchId } = origin;
  const deadLetter = message.result === 'dead-lettered' ? batchDeadLetterJson(message.jobId, { line: origin.line, ...deadLetterFactsOfOutcome(message) }) : '';
  return {
    list,
    entry: outcomeEntryJson({ ...message, batch: 'marked' }),
    batch: {
      keys: [deps.keys.batchJobs(batchId), deps.keys.batchDone(batchId), deps.keys.batch(batchId)],
      deadLetter,
      entryIfComplete: outcomeEntryJson({ ...message, batch: 'complete' }),
    },
  };
}

function outcomeOf(
  deps: PushDeps,
  job: Job<ItemJob>,
  result: ItemResult,
  history: ReadonlyArray<{ at: string }>,
  error: SyncError | undefined,
): OutcomeMessage {
  const item = job.data;
  return {
    kind: item.kind,
    jobId: String(job.id),
    deliveryId: item.deliveryId,
    result,
    origin: item.origin,
    attempts: job.attemptsMade + 1,
    at: new Date(deps.clock.now()).toISOString(),
    ...(error === undefined ? {} : { error: error.toJSON() }),
    ...(history[0] === undefined ? {} : { firstFailureAt: history[0].at }),
    ...(history.length === 0 ? {} : { lastFailureAt: history[history.length - 1]?.at }),
    ...(item.trace === undefined ? {} : { trace: item.trace }),
  };
}
