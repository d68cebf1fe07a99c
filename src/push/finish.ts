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
import type { AttemptAnswer, SlotUse } from '../gate/push-gate.js';
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
  const outcome =
    item.origin.source === 'spool'
      ? { list: outcomeKeys(deps.keys, item.origin.spoolId).list, entry: outcomeEntryJson(outcomeOf(deps, job, result, history, error)) }
      : undefined;
  await deps.gate.leave(item, jobId, slot, result, answer, {
    ...(outcome === undefined ? {} : { outcome }),
    ...(failure === undefined ? {} : { failure: deps.attempts.append(jobId, failure) }),
  });
  // The item's end, in its trace: an event on the run's span (a span of its own cost as much as the
  // request's; BENCHMARKS.md, issue 38): accepted, duplicate (the API's repeat), superseded or dead-lettered.
  spanBoundTo(job)?.addEvent(`settled ${result === 'repeat' ? 'duplicate' : result}`);
  if (result === 'repeat') deps.logger.warn({ kind: item.kind, deliveryId: item.deliveryId, jobId }, 'API reported the event_at as a repeat');
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
