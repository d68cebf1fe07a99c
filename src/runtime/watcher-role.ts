/**
 * The watcher role: every process with it on one spool competes for the spool's lease
 * (spool-lease.ts). The holder owns the spool: it claims inbox files, reconciles `.inflight/` when
 * it takes the lease, and consumes this spool's outcome messages to move files to archive/ or failed/.
 * The others stand by and do nothing on the spool; one of them takes over when the holder stops or
 * dies, through the same start-up path a fresh start takes.
 */
import { SPOOL_KINDS, ITEM_KIND_OF } from '../queue/keys.js';
import { createLease } from '../queue/lease.js';
import { redisAddressOf, resolveDeploymentId } from '../queue/deployment.js';
import { backlogOf } from '../queue/queues.js';
import { addRefusal } from '../queue/activity.js';
import { addStat } from '../queue/stats.js';
import { createOutcomes } from '../outcome/apply.js';
import { fileEndJournal, journeyWriterOf } from './journey-files.js';
import { sweepInterruptedMoves } from '../outcome/files.js';
import type { ClaimDeps } from '../spool/claim.js';
import { loadInflightIndex } from '../spool/inflight-index.js';
import { parseInflightName, spoolPaths, type SpoolPaths } from '../spool/paths.js';
import { reconcileInflight } from '../spool/reconcile.js';
import { attachSpoolDisk } from '../spool/disk-state.js';
import { diskOf } from '../spool/file-calls.js';
import { resolveSpoolId, SPOOL_ID_FILE } from '../spool/spool-id.js';
import { createHolderFile } from '../spool/holder-file.js';
import { startSpoolWatcher, type SpoolWatcher } from '../spool/watcher.js';
import type { Context } from './context.js';
import { startOutcomeConsumer } from './outcome-consumer.js';
import { runSpoolUpgrades } from './upgrades.js';
import { holdSpoolLease, type Fence, type HeldSession, type SpoolLeaseState } from './spool-lease.js';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Longest the shutdown waits for the outcomes of the last finished items before closing anyway. */
const OUTCOME_DRAIN_MS = 5000;

export interface WatcherRole {
  spoolId: string;
  /** Lists the inboxes again (holder only; a standby has nothing to rescan). */
  rescan(): Promise<void>;
  /** Stops taking files and stops competing for the lease: the first step of the shutdown. */
  close(): Promise<void>;
  /** Who holds the spool, and this process's part (for `/readyz`). */
  lease(): Promise<SpoolLeaseState & { spoolId: string }>;
}

interface SpoolSession extends HeldSession {
  watcher: SpoolWatcher;
}

export async function startWatcherRole(ctx: Context): Promise<WatcherRole> {
  const { config, logger } = ctx;
  const log = logger.child({ mod: 'spool' });
  const identity = await resolveSpoolId(config.spool.dir, config.spool.id, log);
  const paths = spoolPaths(config.spool.dir, identity.spoolId);
  attachSpoolDisk({ spoolId: paths.spoolId, root: paths.root }, log);
  if (identity.source === 'created') log.info({ spoolId: paths.spoolId, file: join(paths.root, SPOOL_ID_FILE) }, 'wrote the spool id into the spool');
  const deployment = { deploymentId: await resolveDeploymentId(ctx.redis, ctx.keys), prefix: config.prefix, redis: redisAddressOf(ctx.redisUrl) };
  const held = await holdSpoolLease<SpoolSession>({
    lease: createLease(ctx.redis, ctx.keys.spoolLease(paths.spoolId)),
    leaseMs: config.spool.leaseMs,
    logger: log,
    start: (fence) => startSpoolSession(ctx, paths, fence),
    spoolFile: createHolderFile({ root: paths.root, self: deployment, holderFileMs: config.spool.holderFileMs, now: () => ctx.clock.now() }),
  });
  // Here on the shutdown stack, the outcome consumer stops after the item workers (its drain, below),
  // and the lease is given up last.
  ctx.closers.push('spool lease', () => held.close());
  return {
    spoolId: paths.spoolId,
    rescan: async () => held.session()?.watcher.rescan(),
    async close() {
      held.stopAcquiring();
      await held.session()?.watcher.close();
    },
    lease: async () => ({ spoolId: paths.spoolId, ...(await held.state()) }),
  };
}

/** What the holder runs: the same path as a fresh start, so a takeover settles what a crash left. */
async function startSpoolSession(ctx: Context, paths: SpoolPaths, fence: Fence): Promise<SpoolSession> {
  const { config, logger } = ctx;
  const log = logger.child({ mod: 'spool' });
  await ctx.redis.sadd(ctx.keys.spools, paths.spoolId);
  for (const kind of SPOOL_KINDS) await mkdir(paths.inflight(kind), { recursive: true });
  const index = await loadInflightIndex(paths);
  const journey = journeyWriterOf(ctx);
  const outcomes = createOutcomes({
    journey: fileEndJournal(journey, config.spool.dir),
    paths,
    disk: diskOf(config.spool),
    batches: ctx.batches,
    inflight: index,
    clock: ctx.clock,
    logger: logger.child({ mod: 'outcome' }),
  });

  // Every move of a file checks the fence first: once the lease is lost, nothing moves.
  const claimDeps: ClaimDeps = {
    paths,
    spool: config.spool,
    enqueue: ctx.enqueueDeps,
    batches: ctx.batches,
    sink: {
      async reject(kind, path, fileName, report) {
        fence.assertHeld();
        await outcomes.reject(kind, path, fileName, report);
        // A refused events file counts once; its invalid lines are counted when it is parsed. The
        // counters and the overview's refusals (by code, latest 20, per minute): one round trip.
        const chain = addStat(addStat(ctx.redis.multi(), ctx.keys.stats, 'received', ITEM_KIND_OF[kind]), ctx.keys.stats, 'failed', ITEM_KIND_OF[kind]);
        const refusal = { at: new Date(ctx.clock.now()).toISOString(), kind, file: fileName, code: report.code, reason: report.message };
        await addRefusal(chain, ctx.keys, refusal, ctx.clock.now()).exec();
      },
      async archive(kind, path, fileName) {
        fence.assertHeld();
        await outcomes.archive(kind, path, fileName);
      },
      async finishBatch(batchId) {
        fence.assertHeld();
        await outcomes.finishBatch(batchId);
      },
    },
    isOwner: () => fence.isHeld(),
    track: (kind, name) => index.track(kind, name),
    untrack: (kind, name) => index.forget(kind, name),
    clock: ctx.clock,
    logger: log,
    journey,
  };
  for (const kind of SPOOL_KINDS) {
    const inbox = new Set(await readdir(paths.inbox(kind)).catch(() => [] as string[]));
    const claims = new Set(index.all(kind).flatMap((name) => parseInflightName(name)?.claimId ?? []));
    fence.assertHeld();
    const swept = await sweepInterruptedMoves(paths.failed(kind), { claims, inbox });
    if (swept.length > 0) log.warn({ kind, swept }, 'cleared what interrupted moves left in failed/ (their files are decided again)');
  }
  await reconcileInflight(claimDeps, index, log);

  await runSpoolUpgrades(ctx.redis, ctx.keys, paths.spoolId, log);
  const outcomeConsumer = startOutcomeConsumer({
    redis: ctx.redis,
    keys: ctx.keys,
    spoolId: paths.spoolId,
    apply: async (message) => {
      fence.assertHeld();
      await outcomes.apply(message);
    },
    isHeld: () => fence.isHeld(),
    clock: ctx.clock,
    logger: logger.child({ mod: 'outcome' }),
  });

  const watcher = await startSpoolWatcher({
    ...claimDeps,
    maxQueued: config.delivery.maxQueued,
    backlog: (kind) => backlogOf(ctx.queues.items[ITEM_KIND_OF[kind]]),
  }).catch(async (error: unknown) => {
    await outcomeConsumer.stop();
    throw error;
  });
  // The same reconcile, periodically, for claims that lost their job or outcome while the process
  // kept running (Redis away at the wrong moment). Claims younger than a minute are left alone.
  const reconcileTimer = setInterval(() => {
    if (!fence.isHeld()) return;
    reconcileInflight(claimDeps, index, log, ctx.clock.now() - 60_000).catch((error: unknown) => log.warn({ err: error }, 'in-flight reconcile failed'));
  }, config.spool.rescanIntervalMs);
  reconcileTimer.unref();
  log.info(
    { archive: `${paths.root}/archive/<kind>/<YYYY-MM-DD>/`, failed: `${paths.root}/failed/<kind>/`, spoolId: paths.spoolId },
    'files accepted by the API go to archive/, refused or dead-lettered ones to failed/ with a .error.json',
  );
  let stopping: Promise<void> | undefined;
  return {
    watcher,
    stop({ isShutdown }) {
      stopping ??= (async () => {
        clearInterval(reconcileTimer);
        await watcher.close();
        // On shutdown this runs after the item workers closed: the outcomes they wrote while
        // finishing their in-flight jobs are applied (files moved) first, within OUTCOME_DRAIN_MS.
        // What is left is applied by the next holder of the spool.
        if (isShutdown) await outcomeConsumer.drain(OUTCOME_DRAIN_MS);
        await outcomeConsumer.stop();
      })();
      return stopping;
    },
  };
}
