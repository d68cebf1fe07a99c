/**
 * The watcher role owns the spool: it claims inbox files, reconciles `.inflight/` at start, and
 * consumes this spool's outcome queue to move files to archive/ or failed/.
 */
import { Worker, type Queue } from 'bullmq';
import { outcomeQueueName, SPOOL_KINDS, ITEM_KIND_OF } from '../queue/keys.js';
import type { OutcomeMessage } from '../queue/payloads.js';
import { backlogOf } from '../queue/queues.js';
import { recordRefusal } from '../queue/activity.js';
import { createOutcomes } from '../outcome/apply.js';
import { sweepInterruptedMoves } from '../outcome/files.js';
import type { ClaimDeps } from '../spool/claim.js';
import { loadInflightIndex } from '../spool/inflight-index.js';
import { parseInflightName, spoolPaths } from '../spool/paths.js';
import { reconcileInflight } from '../spool/reconcile.js';
import { startSpoolWatcher, type SpoolWatcher } from '../spool/watcher.js';
import type { Context } from './context.js';
import { mkdir, readdir } from 'node:fs/promises';

/** Longest the shutdown waits for the outcomes of the last finished items before closing anyway. */
const OUTCOME_DRAIN_MS = 5000;

/**
 * On shutdown this closes after the item workers: the outcomes they sent while finishing their
 * in-flight jobs are applied (files moved) before the worker stops, as long as that takes less than
 * `maxMs`. What is left is applied by the next start.
 */
async function drainOutcomes(queue: Queue, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (Date.now() < deadline) {
    const counts = await queue.getJobCounts('waiting', 'prioritized', 'active');
    if (Object.values(counts).every((n) => n === 0)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startWatcherRole(ctx: Context): Promise<SpoolWatcher> {
  const { config, logger } = ctx;
  const log = logger.child({ mod: 'spool' });
  const paths = spoolPaths(config.spool.dir, config.spool.id);
  for (const kind of SPOOL_KINDS) await mkdir(paths.inflight(kind), { recursive: true });
  const index = await loadInflightIndex(paths);
  const outcomes = createOutcomes({ paths, batches: ctx.batches, inflight: index, clock: ctx.clock, logger: logger.child({ mod: 'outcome' }) });

  const claimDeps: ClaimDeps = {
    paths,
    spool: config.spool,
    enqueue: ctx.enqueueDeps,
    batches: ctx.batches,
    sink: {
      async reject(kind, path, fileName, report) {
        await outcomes.reject(kind, path, fileName, report);
        // A refused events file counts once; its invalid lines are counted when it is parsed.
        await ctx.stats.add('received', ITEM_KIND_OF[kind]);
        await ctx.stats.add('failed', ITEM_KIND_OF[kind]);
        await recordRefusal(ctx.redis, ctx.keys, { at: new Date(ctx.clock.now()).toISOString(), kind, file: fileName, code: report.code, reason: report.message }, ctx.clock.now()); // overview: refusals by code, latest 20, per minute
      },
      archive: outcomes.archive,
      finishBatch: outcomes.finishBatch,
    },
    track: (kind, name) => index.track(kind, name),
    untrack: (kind, name) => index.forget(kind, name),
    clock: ctx.clock,
    logger: log,
  };
  for (const kind of SPOOL_KINDS) {
    const inbox = new Set(await readdir(paths.inbox(kind)).catch(() => [] as string[]));
    const claims = new Set(index.all(kind).flatMap((name) => parseInflightName(name)?.claimId ?? []));
    const swept = await sweepInterruptedMoves(paths.failed(kind), { claims, inbox });
    if (swept.length > 0) log.warn({ kind, swept }, 'cleared what interrupted moves left in failed/ (their files are decided again)');
  }
  await reconcileInflight(claimDeps, index, log);

  const outcomeWorker = new Worker<OutcomeMessage>(outcomeQueueName(paths.spoolId), async (job) => outcomes.apply(job.data), {
    connection: ctx.redis,
    prefix: config.prefix,
    concurrency: 4,
    // Like the item workers: after a kill -9, a move that was under way is taken up again within
    // about lockMs of the restart, not after BullMQ's default 30 s lock plus a 30 s stall check.
    lockDuration: config.delivery.lockMs,
    stalledInterval: Math.max(1000, Math.floor(config.delivery.lockMs / 2)),
  });
  outcomeWorker.on('failed', (job, error) => log.error({ jobId: job?.id, err: error.message }, 'moving a file failed; will retry'));
  outcomeWorker.on('error', (error) => log.error({ err: error.message }, 'outcome worker error'));
  ctx.closers.push('outcome worker', async () => {
    await drainOutcomes(ctx.queues.outcome(paths.spoolId), OUTCOME_DRAIN_MS);
    await outcomeWorker.close();
  });

  const watcher = await startSpoolWatcher({
    ...claimDeps,
    maxQueued: config.delivery.maxQueued,
    backlog: (kind) => backlogOf(ctx.queues.items[ITEM_KIND_OF[kind]]),
  });
  ctx.closers.push('spool watcher', () => watcher.close());
  // The same reconcile, periodically, for claims that lost their job or outcome while the process
  // kept running (Redis away at the wrong moment). Claims younger than a minute are left alone.
  const reconcileTimer = setInterval(() => {
    reconcileInflight(claimDeps, index, log, ctx.clock.now() - 60_000).catch((error: unknown) => log.warn({ err: (error as Error).message }, 'in-flight reconcile failed'));
  }, config.spool.rescanIntervalMs);
  reconcileTimer.unref();
  ctx.closers.push('in-flight reconcile', () => clearInterval(reconcileTimer));
  log.info(
    { archive: `${paths.root}/archive/<kind>/<YYYY-MM-DD>/`, failed: `${paths.root}/failed/<kind>/`, spoolId: paths.spoolId },
    'files accepted by the API go to archive/, refused or dead-lettered ones to failed/ with a .error.json',
  );
  return watcher;
}
