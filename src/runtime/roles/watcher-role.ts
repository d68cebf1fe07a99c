/**
 * The watcher role: every process with it on one spool competes for the spool's lease
 * (spool/lease/lease-holder.ts). The holder runs the spool's session (spool/session.ts): it claims inbox
 * files, reconciles `.inflight/` when it takes the lease, and consumes this spool's outcome messages
 * to move files to archive/ or failed/. The others stand by and do nothing on the spool; one of them
 * takes over when the holder stops or dies, through the same start-up path a fresh start takes.
 * This file only wires them together, the outcome side into the session included. */
import { ITEM_KIND_OF } from '../../store/keys.js';
import { createLease } from '../../store/lease.js';
import { resolveDeploymentId } from '../../store/deployment.js';
import { backlogOf } from '../../queue/queues.js';
import type { Logger } from '../../log.js';
import { createOutcomes } from '../../outcome/apply.js';
import { addRefusal } from '../../store/activity.js';
import { recordFileRefusal } from '../../journey/events-file-lines.js';
import { historyTtlSec } from '../../journey/journey.js';
import { sweepInterruptedMoves } from '../../outcome/files.js';
import { spoolPaths, type SpoolPaths } from '../../spool/paths.js';
import { attachSpoolDisk } from '../../spool/disk-state.js';
import { diskOf } from '../../spool/file-calls.js';
import { resolveSpoolId, SPOOL_ID_FILE } from '../../spool/lease/spool-id.js';
import { createHolderFile } from '../../spool/lease/holder-file.js';
import { holdSpoolLease } from '../../spool/lease/lease-holder.js';
import type { SpoolLeaseState } from '../../spool/lease/spool-lease.js';
import { startSpoolSession, type SpoolSession, type SpoolSessionDeps } from '../../spool/session.js';
import type { Context } from '../context.js';
import type { BatchWatch } from '../watchdog/stall-checks.js';
import { startOutcomeConsumer } from '../../outcome/consumer.js';
import { runSpoolUpgrades } from '../upgrades.js';
import { fileEndJournal, journeyWriterOf } from './journey-files.js';
import { join } from 'node:path';
import { createCheckPool, type CheckPool } from '../../validate/pool/check-pool.js';
import { createProgressTrack, type ProgressTrack } from '../../progress.js';

export interface WatcherRole {
  spoolId: string;
  /** Lists the inboxes again (holder only; a standby has nothing to rescan). */
  rescan(): Promise<void>;
  /** Stops taking files and stops competing for the lease: the first step of the shutdown. */
  close(): Promise<void>;
  /** Who holds the spool, and this process's part (for `/readyz`). */
  lease(): Promise<SpoolLeaseState & { spoolId: string }>;
  /** The watchdog's view of the events files' batches (holder only; a standby has none). */
  batches: BatchWatch;
}

export async function startWatcherRole(ctx: Context): Promise<WatcherRole> {
  const { config, logger } = ctx;
  const log = logger.child({ mod: 'spool' });
  const identity = await resolveSpoolId(config.spool.dir, config.spool.id, log);
  const paths = spoolPaths(config.spool.dir, identity.spoolId);
  attachSpoolDisk({ spoolId: paths.spoolId, root: paths.root }, log);
  if (identity.source === 'created') log.info({ spoolId: paths.spoolId, file: join(paths.root, SPOOL_ID_FILE) }, 'wrote the spool id into the spool');
  const deployment = { deploymentId: await resolveDeploymentId(ctx.redis, ctx.keys), prefix: config.prefix, redis: ctx.redisTarget.address };
  // Closed after the spool's lease (the stack runs in reverse): no claim is checking a file by then.
  const checks = createCheckPool(config.checks, logger.child({ mod: 'checks' }));
  ctx.closers.push('file checks', () => checks.close());
  const claimProgress = createProgressTrack();
  const outcomeProgress = createProgressTrack();
  const sessionDeps = { ...sessionDepsOf(ctx, paths, checks, log, outcomeProgress), claimProgress };
  const held = await holdSpoolLease<SpoolSession>({
    lease: createLease(ctx.redis, ctx.keys.spoolLease(paths.spoolId)),
    leaseMs: config.spool.leaseMs,
    logger: log,
    start: (fence) => startSpoolSession(sessionDeps, fence),
    spoolFile: createHolderFile({ root: paths.root, self: deployment, holderFileMs: config.spool.holderFileMs, now: () => ctx.clock.now() }),
    isRedisTold: () => ctx.health.isTroubled(5000),
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
    batches: {
      claims: claimProgress,
      outcomes: outcomeProgress,
      restartChecks: () => checks.restartThreads(),
      unsealedBatches: async (before) => (await held.session()?.unsealedBatches(before)) ?? [],
      reconcile: async (before) => held.session()?.reconcileNow(before),
    },
  };
}

/** The holder's session (spool/session.ts) with the outcome side wired in: outcome/ imports spool/, not the other way. */
function sessionDepsOf(ctx: Context, paths: SpoolPaths, checks: CheckPool, log: Logger, outcomeProgress: ProgressTrack): SpoolSessionDeps {
  const { config, logger } = ctx;
  const outcomeLog = logger.child({ mod: 'outcome' });
  const journey = journeyWriterOf(ctx);
  return {
    paths,
    spool: config.spool,
    maxQueued: config.delivery.maxQueued,
    redis: ctx.redis,
    keys: ctx.keys,
    enqueue: ctx.enqueueDeps,
    batches: ctx.batches,
    checks,
    backlog: (kind) => backlogOf(ctx.queues.items[ITEM_KIND_OF[kind]]),
    upgrade: () => runSpoolUpgrades(ctx.redis, ctx.keys, paths.spoolId, log),
    onRedisRecovered: (listener) => ctx.health.onWritable(listener),
    outcomes: {
      open: (index, isHeld) =>
        createOutcomes({
          isHeld,
          journey: fileEndJournal(journey, config.spool.dir),
          paths,
          disk: diskOf(config.spool),
          batches: ctx.batches,
          inflight: index,
          clock: ctx.clock,
          logger: outcomeLog,
          lang: config.lang,
          // A refusal after sending (EVENT_FILE_CHANGED): counted, and kept by the file's name for `history --file` and the history page.
          refused: async (refusal) => {
            const atMs = ctx.clock.now();
            const chain = addRefusal(ctx.redis.multi(), ctx.keys, refusal, atMs);
            const { at, droppedAs, file, code, reason, reasonSource } = refusal;
            const record = { at, file: droppedAs ?? file, failedAs: file, code, message: reason, reason: reasonSource };
            recordFileRefusal(chain, ctx.keys, record, atMs, historyTtlSec(config.history.retentionDays));
            await chain.exec();
          },
        }),
      sweepInterruptedMoves,
      startConsumer: (apply, isHeld) =>
        startOutcomeConsumer({
          redis: ctx.redis,
          keys: ctx.keys,
          spoolId: paths.spoolId,
          apply,
          isHeld,
          takeJourneySteps: () => journey.takeCall(),
          progress: outcomeProgress,
          clock: ctx.clock,
          logger: outcomeLog,
        }),
    },
    journey,
    clock: ctx.clock,
    logger: log,
  };
}
