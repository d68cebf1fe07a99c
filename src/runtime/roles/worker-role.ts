/**
 * The worker role: one BullMQ worker per item kind, sharing one API client, one rate limiter, the
 * answers this process keeps while Redis cannot take them (push/kept-answers.ts), its liveness as
 * their owner (gate/attempt-owner.ts), and the replica watch (gate/replica-wait.ts).
 */
import { Worker } from '../../queue/bullmq.js';
import { apiClientFor } from '../api-client.js';
import { rateLimiterFor } from '../../gate/limiter.js';
import { createPushGate, pushGateOptions } from '../../gate/push-gate.js';
import { ITEM_KINDS } from '../../store/keys.js';
import type { ItemJob } from '../../store/payloads.js';
import { createProcessor } from '../../push/processor.js';
import { isAnswerUnavailable } from '../../push/answer-write.js';
import { createKeptAnswers } from '../../push/kept-answers.js';
import { keepOwnerAlive, ownerTiming, SELF_OWNER } from '../../gate/attempt-owner.js';
import { REPLICA_WAIT_MS, watchReplicas } from '../../gate/replica-wait.js';
import { isRedisUnavailable } from '../../store/redis-health.js';
import type { ApiTarget } from '../api-target.js';
import type { Context } from '../context.js';
import { inFlightGraceMs } from '../closers.js';
import { closeWorkers } from '../close-workers.js';
import type { Metrics } from '../../ops/metrics.js';
import { retryFailedByRedis } from '../../queue/redis-failures.js';

/** How often the failed sets are looked through for jobs Redis failed (queue/redis-failures.ts). */
const REDIS_FAILURES_SWEEP_MS = 5_000;
/** Each sweep reads the failures of this long before the last one too (another process' clock). */
const REDIS_FAILURES_OVERLAP_MS = 60_000;

/** BullMQ's words for a job whose lock lapsed: a renewal that failed, a finish without the lock (or after another run took the job). */
/** How long after a Redis episode a lost job lock is still its echo (a kept answer written late). */
const LOCK_ECHO_MS = 60_000;
const LOCK_LOST = /^(could not renew lock for job|Missing lock for job|Missing key for job|Lock mismatch for job)/;

/** `onCompleted`: called after each job a worker here completed (the delivery thread's failpoints wait for the first). */
export async function startWorkerRole(ctx: Context, target: ApiTarget, observeRequest: Metrics['observeRequest'], onCompleted?: () => void): Promise<void> {
  const { config, logger } = ctx;
  const log = logger.child({ mod: 'push' });
  // The API client binds `mod: api` to the logger it gets: give it the root one, not `log`.
  const client = apiClientFor(config, target, { logger, onResponse: observeRequest });
  ctx.closers.push('api client', () => client.close());
  const limiter = rateLimiterFor(ctx, target.carrierKey);
  const kept = createKeptAnswers(isAnswerUnavailable(isRedisUnavailable), log, () => {
    ctx.redis.hincrby(ctx.keys.answerCounts, 'late', 1).catch((error: unknown) => log.debug({ err: error }, 'counting a late answer failed'));
  });
  ctx.health.onWritable(() => kept.wake());
  const timing = ownerTiming(config.delivery.lockMs);
  const liveness = keepOwnerAlive(ctx.redis, ctx.keys, timing, log);
  const replicas = watchReplicas(ctx.redis, ctx.keys.deploymentId, log, REPLICA_WAIT_MS, () => ctx.health.isTroubled(5000));
  // Closed after the workers (the stack runs last-in first-out): a kept answer is written or given up first.
  ctx.closers.push('owner liveness', async () => {
    kept.close();
    await replicas.close();
    await liveness.close();
  });
  const gate = createPushGate(ctx.redis, ctx.keys, target.carrierKey, {
    ...pushGateOptions(config),
    owner: { self: SELF_OWNER, graceMs: timing.graceMs },
    replicas,
  });
  const workers: Worker[] = [];
  for (const kind of ITEM_KINDS) {
    const processor = createProcessor({
      client,
      redis: ctx.redis,
      keys: ctx.keys,
      gate,
      limiter,
      authGate: ctx.authGate,
      attempts: ctx.attempts,
      kept,
      stats: ctx.stats,
      queues: ctx.queues,
      delivery: config.delivery,
      clock: ctx.clock,
      logger: log,
    });
    const worker = new Worker<ItemJob>(kind, processor, {
      connection: ctx.bullRedis,
      prefix: config.prefix,
      concurrency: config.delivery.concurrency,
      lockDuration: config.delivery.lockMs,
      stalledInterval: Math.max(1000, Math.floor(config.delivery.lockMs / 2)),
      maxStalledCount: 1000,
      // After a failed fetch (Redis away, full, failing over) the worker tries again this soon, not
      // BullMQ's 15 s: work flows again within seconds of Redis taking writes.
      runRetryDelay: 2000,
      autorun: true,
    });
    worker.on('error', (error) => {
      if (ctx.health.report(error, `worker:${kind}`)) return;
      // A job lock lost while Redis could not take writes (or just after): another run takes the job
      // up, and the gate makes it wait for this process's answer (kept-answers.ts). Its echo, not news.
      // A job whose key a failover lost (a lagging replica was promoted) ends the same way, once
      // its kept answer is written after the episode: the spool still has its file in flight.
      if (LOCK_LOST.test(error.message) && ctx.health.isTroubled(Math.max(2 * config.delivery.lockMs, LOCK_ECHO_MS)))
        log.debug({ kind, err: error }, 'job lock lost during a Redis episode');
      else log.error({ kind, err: error }, 'worker error');
    });
    if (onCompleted !== undefined) worker.on('completed', onCompleted);
    workers.push(worker);
  }
  ctx.closers.push('workers', () => closeWorkers(workers, inFlightGraceMs(config.shutdown.graceMs), ctx.health, log));
  sweepRedisFailures(ctx, log);
  log.info({ kinds: ITEM_KINDS, concurrency: config.delivery.concurrency, api: target.url, ratePerMinute: config.delivery.ratePerMinute }, 'workers started');
}

/**
 * A job that Redis failed (its last attempt met MOVED, a closed connection…: BullMQ failed it with
 * that message) is put back to work: all of them at the start, then those failed since the last pass.
 */
function sweepRedisFailures(ctx: Context, log: Context['logger']): void {
  let sinceMs = 0;
  let isRunning = false;
  const pass = async (): Promise<void> => {
    if (isRunning) return;
    isRunning = true;
    const startedAt = Date.now();
    try {
      const retried = await retryFailedByRedis(ctx.redis, ctx.queues, sinceMs);
      sinceMs = Math.max(0, startedAt - REDIS_FAILURES_OVERLAP_MS);
      if (retried.length > 0)
        log.info({ jobIds: retried.slice(0, 20), count: retried.length }, 'jobs failed by a Redis error put back to work (no dead letter)');
    } catch (error) {
      if (!ctx.health.report(error, 'redis-failures')) log.warn({ err: error }, 'looking for jobs failed by Redis failed; trying again');
    } finally {
      isRunning = false;
    }
  };
  void pass();
  const timer = setInterval(() => void pass(), REDIS_FAILURES_SWEEP_MS);
  timer.unref();
  ctx.closers.push('redis failures sweep', () => clearInterval(timer));
}
