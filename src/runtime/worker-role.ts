/** The worker role: one BullMQ worker per item kind, sharing one API client and one rate limiter. */
import { Worker } from 'bullmq';
import { apiClientFor } from './api-client.js';
import { rateLimiterFor } from '../gate/limiter.js';
import { createPushGate, pushGateOptions } from '../gate/push-gate.js';
import { ITEM_KINDS } from '../store/keys.js';
import type { ItemJob } from '../queue/payloads.js';
import { createProcessor } from '../push/processor.js';
import type { ApiTarget } from './api-target.js';
import type { Context } from './context.js';
import type { Metrics } from '../ops/metrics.js';

export async function startWorkerRole(ctx: Context, target: ApiTarget, metrics: Metrics): Promise<void> {
  const { config, logger } = ctx;
  const log = logger.child({ mod: 'push' });
  // The API client binds `mod: api` to the logger it gets: give it the root one, not `log`.
  const client = apiClientFor(config, target, { logger, onResponse: (sample) => metrics.observeRequest(sample) });
  ctx.closers.push('api client', () => client.close());
  const limiter = rateLimiterFor(ctx, target.carrierKey);
  const gate = createPushGate(ctx.redis, ctx.keys, target.carrierKey, pushGateOptions(config));
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
      autorun: true,
    });
    worker.on('error', (error) => {
      if (!ctx.health.report(error, `worker:${kind}`)) log.error({ kind, err: error }, 'worker error');
    });
    workers.push(worker);
  }
  ctx.closers.push('workers', () => closeWorkers(workers, config.shutdown.graceMs, log));
  log.info({ kinds: ITEM_KINDS, concurrency: config.delivery.concurrency, api: target.url, ratePerMinute: config.delivery.ratePerMinute }, 'workers started');
}

/** Lets in-flight jobs finish within the grace period, then closes anyway (they stall and are taken up again). */
async function closeWorkers(workers: Worker[], graceMs: number, log: { warn: (o: object, m: string) => void }): Promise<void> {
  const graceful = Promise.all(workers.map((worker) => worker.close()));
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), graceMs);
    timer.unref();
  });
  if ((await Promise.race([graceful, expired])) === 'expired') {
    log.warn({ graceMs }, 'grace period over: closing workers with jobs still active (they will be taken up again)');
    await Promise.all(workers.map((worker) => worker.close(true)));
  }
  clearTimeout(timer);
}
