/**
 * The end of an item: counters, the document and event-order bookkeeping, an emptied payload (a
 * completed job must not keep a label's bytes in Redis), and — for items that came from a file —
 * an outcome message to the process that owns the spool.
 */
import type { Job } from 'bullmq';
import type { SyncError } from '../errors.js';
import type { ItemJob, ItemResult, OutcomeMessage } from '../queue/payloads.js';
import type { Counter } from '../queue/stats.js';
import { countActivity } from '../queue/activity.js';
import { finishEvent, forgetLatestDocument } from './gates.js';
import type { PushDeps } from './processor.js';

const COUNTER_OF: Readonly<Record<ItemResult, Counter>> = {
  accepted: 'sent',
  repeat: 'duplicates',
  superseded: 'superseded',
  'dead-lettered': 'dead_lettered',
};

export async function finishItem(deps: PushDeps, job: Job<ItemJob>, result: ItemResult, error?: SyncError): Promise<void> {
  const item = job.data;
  const jobId = String(job.id);
  if (item.kind === 'collecting') await finishEvent(deps.redis, deps.keys, item.deliveryId, jobId);
  else {
    await forgetLatestDocument(deps.redis, deps.keys, item.kind, item.deliveryId, jobId);
    if (result === 'accepted' || result === 'superseded') {
      await job.updateData(item.kind === 'label' ? { ...item, pdfBase64: '', finished: result } : { ...item, xml: '', finished: result });
    }
  }
  await deps.redis.unlink(deps.keys.attempts(`${jobId}:held`));
  await deps.stats.add(COUNTER_OF[result], item.kind);
  await countActivity(deps.redis, deps.keys, COUNTER_OF[result], deps.clock.now()); // activity per minute (overview chart): sent, dead-lettered, …
  if (result === 'repeat') deps.logger.warn({ kind: item.kind, deliveryId: item.deliveryId, jobId }, 'API reported the event_at as a repeat');

  if (item.origin.source !== 'spool') return;
  const history = result === 'dead-lettered' ? await deps.attempts.read(jobId) : [];
  const message: OutcomeMessage = {
    kind: item.kind,
    jobId,
    deliveryId: item.deliveryId,
    result,
    origin: item.origin,
    attempts: job.attemptsMade + 1,
    at: new Date(deps.clock.now()).toISOString(),
    ...(error === undefined ? {} : { error: error.toJSON() }),
    ...(history[0] === undefined ? {} : { firstFailureAt: history[0].at }),
    ...(history.length === 0 ? {} : { lastFailureAt: history[history.length - 1]?.at }),
  };
  await deps.queues.outcome(item.origin.spoolId).add('outcome', message, { jobId: `${jobId}.${result}.${job.attemptsStarted}` });
}
