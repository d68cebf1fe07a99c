/**
 * The job processor shared by the three item queues: payload → API call → done, or a SyncError
 * whose disposition decides what happens next:
 *   retry        → BullMQ's exponential backoff with jitter, until maxAttempts (then dead-letter);
 *                  DELIVERY_NOT_FOUND only until notFoundAttempts (the delivery may arrive late)
 *   rate-limited → every process pauses for Retry-After; the job goes back to delayed without
 *                  spending an attempt, until it has been held back maxRateLimitedMs in all
 *   pause        → 401: the auth gate pauses the queues; the job waits without spending an attempt
 *   dead-letter  → UnrecoverableError: the job stays in the failed set (the DLQ)
 */
import { DelayedError, UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { RedisConnection } from '../queue/redis.js';
import type { ApiClient } from '../api/index.js';
import type { Clock } from '../clock.js';
import type { DeliveryConfig } from '../config/schema.js';
import { isSyncError, SyncError } from '../errors.js';
import type { Logger } from '../log.js';
import type { AttemptLog } from '../queue/attempts.js';
import type { AuthGate } from '../queue/auth-gate.js';
import type { Keys } from '../queue/keys.js';
import type { ItemJob } from '../queue/payloads.js';
import type { QueueSet } from '../queue/queues.js';
import type { RateLimiter } from '../queue/limiter.js';
import type { Stats } from '../queue/stats.js';
import { countActivity } from '../queue/activity.js';
import { finishItem } from './finish.js';
import { isLatestDocument, isNextEvent, lockDocument } from './gates.js';
import { sendItem } from './send.js';

export interface PushDeps {
  client: ApiClient;
  redis: RedisConnection;
  keys: Keys;
  limiter: RateLimiter;
  authGate: AuthGate;
  attempts: AttemptLog;
  stats: Stats;
  queues: QueueSet;
  itemQueue: Queue;
  delivery: DeliveryConfig;
  clock: Clock;
  logger: Logger;
}

/** Longest a job holds its worker slot waiting for the shared limiter before stepping aside. */
const MAX_SLOT_WAIT_MS = 15_000;
const GATE_RETRY_MS = 200;
const AUTH_RETRY_MS = 1_000;

export function createProcessor(deps: PushDeps): (job: Job<ItemJob>, token?: string) => Promise<string> {
  return async (job, token) => {
    const item = job.data;
    const jobId = String(job.id);
    const started = deps.clock.now();

    if (item.kind !== 'collecting' && item.finished !== undefined) {
      // An earlier run finished it and emptied the payload, then died before the job completed:
      // finish again (the outcome may not have been sent), never send the emptied document.
      await finishItem(deps, job, item.finished);
      return item.finished;
    }
    if (item.kind === 'collecting' && !(await isNextEvent(deps.redis, deps.keys, deps.itemQueue, item.deliveryId, jobId))) {
      return stepAside(job, token, GATE_RETRY_MS);
    }
    const lock = item.kind === 'collecting' ? null : await lockDocument(deps.redis, deps.keys, item.kind, item.deliveryId, jobId, deps.delivery.maxRateLimitedMs);
    if (item.kind !== 'collecting' && lock === null) return stepAside(job, token, GATE_RETRY_MS);
    try {
      if (item.kind !== 'collecting' && !(await isLatestDocument(deps.redis, deps.keys, item.kind, item.deliveryId, jobId))) {
        await finishItem(deps, job, 'superseded');
        return 'superseded';
      }
      if (!(await deps.limiter.acquire(MAX_SLOT_WAIT_MS))) {
        return await stepAside(job, token, Math.max(GATE_RETRY_MS, await deps.limiter.pausedForMs()));
      }
      await countActivity(deps.redis, deps.keys, 'requests', deps.clock.now()); // activity per minute (overview chart): a slot of the API's limit taken
      const result = await sendItem(deps.client, item);
      await finishItem(deps, job, result);
      deps.logger.info({ kind: item.kind, deliveryId: item.deliveryId, jobId, attempt: job.attemptsMade + 1, status: 200, durationMs: deps.clock.now() - started, result }, 'item sent');
      return result;
    } catch (error) {
      if (error instanceof DelayedError || error instanceof UnrecoverableError) throw error;
      return await onFailure(deps, job, token, toSyncError(error));
    } finally {
      await lock?.release();
    }
  };
}

async function onFailure(deps: PushDeps, job: Job<ItemJob>, token: string | undefined, error: SyncError): Promise<never> {
  const item = job.data;
  const jobId = String(job.id);
  const attempt = job.attemptsMade + 1;
  const context = { kind: item.kind, deliveryId: item.deliveryId, jobId, attempt, status: error.status, code: error.code, apiCode: error.apiCode };

  if (error.disposition === 'rate-limited') {
    const holdMs = error.retryAfterMs ?? deps.delivery.backoffMs * 2 ** Math.min(job.attemptsMade, 10);
    await deps.limiter.pause(holdMs);
    await deps.stats.add('rate_limited', item.kind);
    await countActivity(deps.redis, deps.keys, 'rate_limited', deps.clock.now()); // activity per minute (overview chart): a 429
    const heldMs = Number(await deps.redis.hincrby(deps.keys.attempts(`${jobId}:held`), 'ms', holdMs));
    if (heldMs <= deps.delivery.maxRateLimitedMs) {
      deps.logger.warn({ ...context, holdMs }, 'API rate limit hit (429); all sending paused');
      return stepAside(job, token, holdMs);
    }
    deps.logger.warn({ ...context, heldMs }, '429s held this item back too long; spending an attempt');
  }

  if (error.disposition === 'pause') {
    const isFirst = await deps.authGate.trip({ at: new Date(deps.clock.now()).toISOString(), endpoint: item.kind, message: error.message });
    if (isFirst) deps.logger.error(context, 'API refused the key (401): queues paused until `carrier-sync resume` or the auth probe succeeds');
    return stepAside(job, token, AUTH_RETRY_MS);
  }

  await deps.attempts.record(jobId, {
    attempt,
    at: new Date(deps.clock.now()).toISOString(),
    code: error.code,
    message: error.message,
    ...(error.status === undefined ? {} : { status: error.status }),
    ...(error.apiCode === undefined ? {} : { apiCode: error.apiCode }),
    ...(error.apiMessage === undefined ? {} : { apiMessage: error.apiMessage }),
    ...(error.params === undefined ? {} : { params: error.params }),
  });

  const maxAttempts = job.opts.attempts ?? deps.delivery.maxAttempts;
  const isNotFoundSpent = error.code === 'API_NOT_FOUND' && attempt >= deps.delivery.notFoundAttempts;
  const isFinal = error.disposition === 'dead-letter' || error.disposition === 'reject-local' || isNotFoundSpent || attempt >= maxAttempts;
  if (isFinal) {
    await finishItem(deps, job, 'dead-lettered', error);
    deps.logger.error({ ...context, message: error.apiMessage ?? error.message }, 'item dead-lettered');
    throw new UnrecoverableError(`${error.code}: ${error.message}`);
  }
  deps.logger.warn({ ...context, message: error.message }, 'item failed; will retry');
  throw error;
}

/** Moves the job back to delayed without spending an attempt. */
async function stepAside(job: Job, token: string | undefined, delayMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token);
  throw new DelayedError();
}

function toSyncError(error: unknown): SyncError {
  if (isSyncError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new SyncError('NETWORK', `unexpected failure: ${message}`, { disposition: 'retry', cause: error });
}
