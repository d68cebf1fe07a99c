/**
 * The scheduler role: BullMQ job schedulers for housekeeping (one job per tick however many
 * scheduler processes run: the scheduler id is the dedup key), their worker, the 401 probe, and
 * the notifications (`notify-role.ts`).
 */
import type { Job } from 'bullmq';
import { Worker } from '../../queue/bullmq.js';
import { apiClientFor } from '../api-client.js';
import { rateLimiterFor } from '../../gate/limiter.js';
import { HOUSEKEEPING_QUEUE } from '../../store/keys.js';
import type { ApiTarget } from '../api-target.js';
import type { Context } from '../context.js';
import { runHousekeeping, HOUSEKEEPING_JOBS } from './housekeeping.js';
import { startNotifications } from './notify-role.js';
import { inFlightGraceMs } from '../closers.js';
import { closeWorkers } from '../close-workers.js';
import type { Watchdog } from '../watchdog/watchdog.js';
import { liveSecret } from '../../config/secret-file.js';

/** `watchdog`: this process's progress watchdog, whose stalls the notifications tell (`stalled`). */
export async function startSchedulerRole(ctx: Context, target: ApiTarget, rescan: () => Promise<void>, watchdog?: Watchdog): Promise<void> {
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
    connection: ctx.bullRedis,
    prefix: config.prefix,
    concurrency: 1,
  });
  worker.on('error', (error) => {
    if (!ctx.health.report(error, 'worker:housekeeping')) log.error({ err: error }, 'housekeeping worker error');
  });
  ctx.closers.push('housekeeping worker', () => closeWorkers([worker], inFlightGraceMs(ctx.config.shutdown.graceMs), ctx.health, log));

  // The 401 probe: while the gate is closed, open it for one item once the backoff has passed (the
  // push gate lets exactly one item through; its answer clears or closes the gate again). A key
  // given as a file (CARRIER_SYNC_CARRIER_KEY_FILE) that changed is probed at once, backoff or not:
  // a fixed key resumes sending within a couple of seconds, without a restart or `resume`.
  const probeTickMs = Math.min(config.delivery.authProbeMs, 1000);
  const key = target.isSandbox ? null : liveSecret(process.env, 'CARRIER_SYNC_CARRIER_KEY', target.carrierKey);
  let seenKey = key?.current() ?? null;
  let timer: NodeJS.Timeout | undefined;
  const probe = async (): Promise<void> => {
    const failure = await ctx.authGate.failure();
    const keyNow = key?.current() ?? null;
    if (failure === null) seenKey = keyNow;
    if (failure === null || (await ctx.authGate.isProbing())) return;
    const isKeyChanged = keyNow !== seenKey;
    const dueAt = failure.nextProbeAt === undefined ? Date.parse(failure.at) + config.delivery.authProbeMs : Date.parse(failure.nextProbeAt);
    if (!isKeyChanged && Date.now() < dueAt) return;
    seenKey = keyNow;
    await ctx.authGate.openProbe();
    log.info(
      { probes: failure.probes ?? 0 },
      isKeyChanged ? 'auth probe: the key file changed; the next item tests the new key' : 'auth probe: the next item tests the key',
    );
  };
  const schedule = (): void => {
    timer = setTimeout(
      () =>
        void probe()
          .catch((error: unknown) => log.warn({ err: error }, 'auth probe check failed'))
          .finally(schedule),
      probeTickMs,
    );
    timer.unref();
  };
  schedule();
  ctx.closers.push('auth probe', () => clearTimeout(timer));

  await startNotifications(ctx, limiter, watchdog);
}
