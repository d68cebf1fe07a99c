/**
 * The scheduler role: BullMQ job schedulers for housekeeping (one job per tick however many
 * scheduler processes run: the scheduler id is the dedup key), their worker, and the 401 probe.
 */
import { Worker, type Job } from 'bullmq';
import { apiClientFor } from './api-client.js';
import { rateLimiterFor } from '../queue/limiter.js';
import { isSyncError } from '../errors.js';
import { HOUSEKEEPING_QUEUE } from '../queue/keys.js';
import type { ApiTarget } from './api-target.js';
import type { Context } from './context.js';
import { runHousekeeping, HOUSEKEEPING_JOBS } from './housekeeping.js';

const PROBE_MAX_MS = 300_000;
/** Longest the probe waits for a slot of the shared rate limit before trying again later. */
const PROBE_SLOT_WAIT_MS = 5_000;

export async function startSchedulerRole(ctx: Context, target: ApiTarget, rescan: () => Promise<void>): Promise<void> {
  const { config, logger } = ctx;
  const log = logger.child({ mod: 'scheduler' });
  for (const name of HOUSEKEEPING_JOBS) {
    const schedule = config.schedules[name];
    if (schedule.pattern === null) {
      await ctx.queues.housekeeping.removeJobScheduler(name);
      continue;
    }
    await ctx.queues.housekeeping.upsertJobScheduler(name, { pattern: schedule.pattern, tz: schedule.tz }, { name, data: {} });
  }
  // The API client binds `mod: api` itself: it gets the root logger, not `log`.
  const client = apiClientFor(config, target, { connections: 2, logger });
  ctx.closers.push('scheduler api client', () => client.close());
  const limiter = rateLimiterFor(ctx, target.carrierKey);
  const worker = new Worker(HOUSEKEEPING_QUEUE, async (job: Job) => runHousekeeping(job.name, { ctx, client, limiter, rescan, logger: log }), {
    connection: ctx.redis,
    prefix: config.prefix,
    concurrency: 1,
  });
  worker.on('error', (error) => log.error({ err: error.message }, 'housekeeping worker error'));
  ctx.closers.push('housekeeping worker', () => worker.close());

  // The 401 probe: while the gate is closed, ask the API whether the key works again, backing off.
  const PROBE_FIRST_MS = config.delivery.authProbeMs;
  let delayMs = PROBE_FIRST_MS;
  let timer: NodeJS.Timeout | undefined;
  const probe = async (): Promise<void> => {
    const failure = await ctx.authGate.failure().catch(() => null);
    if (failure === null) {
      delayMs = PROBE_FIRST_MS;
      return;
    }
    // The probe is a request with the key like any other: it takes a slot, and waits out a 429 pause.
    if (!(await limiter.acquire(PROBE_SLOT_WAIT_MS))) return;
    try {
      // An empty label: a valid key gets a 400/404 validation answer, a refused key a 401.
      await client.sendLabel({ deliveryId: 'carrier-sync-auth-probe', pdfBase64: '' });
    } catch (error) {
      if (isSyncError(error) && error.code === 'API_RATE_LIMITED') {
        // A 429 says nothing about the key: hold every process back as the items do, ask again later.
        await limiter.pause(error.retryAfterMs ?? delayMs);
        return;
      }
      if (isSyncError(error) && (error.code === 'API_UNAUTHORIZED' || error.code === 'NETWORK' || error.code === 'TIMEOUT' || error.code === 'API_UNAVAILABLE')) {
        delayMs = Math.min(delayMs * 2, PROBE_MAX_MS);
        log.debug({ code: error.code, nextInMs: delayMs }, 'auth probe: key still refused or API unreachable');
        return;
      }
    }
    await ctx.authGate.clear();
    delayMs = PROBE_FIRST_MS;
    log.info('auth probe: the API accepts the key again; queues resumed');
  };
  const schedule = (): void => {
    timer = setTimeout(() => void probe().finally(schedule), delayMs);
    timer.unref();
  };
  schedule();
  ctx.closers.push('auth probe', () => clearTimeout(timer));
}
