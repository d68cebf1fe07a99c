/**
 * The dead-letter queue is each item queue's failed set: BullMQ keeps a failed job with its data,
 * so a dead letter can be read (`dlq list`, the dashboard) and replayed (`dlq retry`, the
 * dashboard's retry) with nothing copied. Its attempt history comes from the attempt log.
 */
import type { Job } from 'bullmq';
import type { AttemptLog, AttemptRecord } from './attempts.js';
import type { DedupMemory } from '../gate/event-claims.js';
import type { DeadLetterFacts } from './failure-report.js';
import { appendSteps, prepareJourney, type JourneyEntry } from '../journey/journey.js';
import { documentSteps, eventSteps } from './job-steps.js';
import { isFailedByRedis } from './redis-failures.js';
import { ITEM_KINDS, type ItemKind, type Keys } from '../store/keys.js';
import type { ItemJob } from '../store/payloads.js';
import type { QueueSet } from './queues.js';
import type { RedisConnection } from '../store/redis.js';

export interface DeadLetter {
  id: string;
  kind: ItemKind;
  deliveryId: string;
  fileName: string | null;
  errorCode: string;
  apiCode: string | null;
  /** The API's message when it gave one, else ours (English). */
  message: string;
  /** The API's own message, when it gave one (null: `message` is ours). */
  apiMessage: string | null;
  status: number | null;
  attempts: number;
  firstFailureAt: string | null;
  lastFailureAt: string | null;
  history: AttemptRecord[];
}

export interface DeadLetterDeps {
  queues: QueueSet;
  attempts: AttemptLog;
  dedup: DedupMemory;
}

/**
 * Dead letters, oldest failure first: every one, or with `latestPerKind` only the most recent that
 * many of each kind (the overview page, refreshed every few seconds, must not read thousands of
 * jobs with their payloads each time). Their attempt logs are read all at once, not one by one.
 */
export async function listDeadLetters(deps: DeadLetterDeps, options: { latestPerKind?: number } = {}): Promise<DeadLetter[]> {
  const end = options.latestPerKind === undefined ? -1 : options.latestPerKind - 1;
  const perKind = await Promise.all(
    ITEM_KINDS.map(async (kind) => {
      const jobs = (await deps.queues.items[kind].getFailed(0, end)) as Array<Job<ItemJob>>;
      // A job failed by a Redis error is no dead letter: it is put back to work (redis-failures.ts).
      return Promise.all(jobs.filter((job) => !isFailedByRedis(job)).map((job) => describe(deps, kind, job)));
    }),
  );
  return perKind.flat().sort((a, b) => (a.lastFailureAt ?? '').localeCompare(b.lastFailureAt ?? ''));
}

async function describe(deps: DeadLetterDeps, kind: ItemKind, job: Job<ItemJob>): Promise<DeadLetter> {
  const history = await deps.attempts.read(String(job.id));
  const last = history[history.length - 1];
  return {
    id: String(job.id),
    kind,
    deliveryId: job.data.deliveryId,
    fileName: 'fileName' in job.data.origin ? job.data.origin.fileName : null,
    errorCode: last?.code ?? 'UNKNOWN',
    apiCode: last?.apiCode ?? null,
    message: last?.apiMessage ?? last?.message ?? job.failedReason,
    apiMessage: last?.apiMessage ?? null,
    status: last?.status ?? null,
    attempts: job.attemptsMade,
    firstFailureAt: history[0]?.at ?? null,
    lastFailureAt: last?.at ?? (job.finishedOn === undefined ? null : new Date(job.finishedOn).toISOString()),
    history,
  };
}

/**
 * A failed job's facts for its `.error.json`, read when its outcome never reached the spool owner
 * (the in-flight reconcile): the last attempt's error from the attempt log, or, once that has
 * expired, the code and message BullMQ kept as the failed reason.
 */
export async function readDeadLetterFacts(attempts: AttemptLog, job: Job<ItemJob>): Promise<DeadLetterFacts> {
  const history = await attempts.read(String(job.id));
  const last = history[history.length - 1];
  return {
    error: last === undefined ? errorOfFailedReason(job.failedReason) : { ...last },
    attempts: job.attemptsMade,
    firstFailureAt: history[0]?.at ?? null,
    lastFailureAt: last?.at ?? (job.finishedOn === undefined ? null : new Date(job.finishedOn).toISOString()),
    jobId: String(job.id),
    deliveryId: job.data.deliveryId,
  };
}

/** The processor fails a dead letter with `<CODE>: <message>`. */
function errorOfFailedReason(reason: string | undefined): Record<string, unknown> {
  const match = /^([A-Z][A-Z_]*): ([\s\S]*)$/.exec(reason ?? '');
  return match === null ? { message: reason ?? 'dead-lettered' } : { code: match[1], message: match[2] };
}

/** Where a replay is recorded: each replayed item's journey gets a 'replayed' step (one write for all). */
export interface ReplayJournal {
  redis: RedisConnection;
  keys: Keys;
  historyTtlSec: number;
  by: 'cli' | 'ui';
  nowMs: number;
}

/** Puts dead letters back to work; returns the ids found and retried. */
export async function retryDeadLetters(
  deps: DeadLetterDeps,
  ids: readonly string[] | 'all',
  journal?: ReplayJournal,
): Promise<{ retried: string[]; missing: string[] }> {
  const replayed: JourneyEntry[] = [];
  const retried: string[] = [];
  const missing: string[] = [];
  const wanted = ids === 'all' ? null : new Set(ids);
  for (const kind of ITEM_KINDS) {
    const queue = deps.queues.items[kind];
    const jobs =
      wanted === null ? await queue.getFailed(0, -1) : await Promise.all([...wanted].filter((id) => id.startsWith(`${kind}.`)).map((id) => queue.getJob(id)));
    for (const job of jobs) {
      if (job === undefined || job === null) continue;
      if ((await job.getState()) !== 'failed') continue;
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      retried.push(String(job.id));
      if (journal !== undefined) {
        const data = job.data as ItemJob;
        replayed.push(data.kind === 'collecting' ? eventSteps.replayed(data, journal.by) : documentSteps.replayed(data, journal.by));
      }
    }
  }
  if (journal !== undefined && replayed.length > 0) {
    prepareJourney(journal.redis);
    await appendSteps(journal.redis.pipeline(), journal.keys, journal.historyTtlSec, replayed, journal.nowMs).exec();
  }
  if (wanted !== null) for (const id of wanted) if (!retried.includes(id)) missing.push(id);
  return { retried, missing };
}

/**
 * Drops dead letters (their files stay under failed/). A purged collecting event's instant is
 * released from the event_at memory, so the same event may be sent again later.
 */
export async function purgeDeadLetters(deps: DeadLetterDeps, olderThanMs: number | null, now: number): Promise<string[]> {
  const purged: string[] = [];
  for (const kind of ITEM_KINDS) {
    const jobs = (await deps.queues.items[kind].getFailed(0, -1)) as Array<Job<ItemJob>>;
    for (const job of jobs) {
      if (olderThanMs !== null && (job.finishedOn ?? now) > now - olderThanMs) continue;
      const data = job.data;
      await job.remove();
      await deps.attempts.forget(String(job.id));
      if (data.kind === 'collecting') await deps.dedup.release(data.deliveryId, data.instantKey, data.sourceId);
      purged.push(String(job.id));
    }
  }
  return purged;
}

/** The deliveries with a dead letter waiting (a failed job that may be replayed): the journey's fold leaves them in detail. */
export async function deadLetterDeliveries(queues: QueueSet): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const kind of ITEM_KINDS) for (const job of (await queues.items[kind].getFailed(0, -1)) as Array<Job<ItemJob>>) ids.add(job.data.deliveryId);
  return ids;
}
