/**
 * `carrier-sync start`: opens the shared context, starts the requested roles, and on the first
 * signal shuts down in order: stop taking files and ingest (/readyz 503) → scheduler → workers
 * finish what is in flight within the grace period → API client, embedded sandbox → outcome consumer
 * (moves the files of what just finished), then the spool's lease is given up → ops server → queues → Redis → the managed redis-server,
 * when this process used one and no other client still does. After the intake steps, the
 * order is the shutdown stack's, reversed from the order things were opened.
 */
import { migrateDocumentRecords } from '../queue/push-gate.js';
import { readOutcomeBacklog } from '../queue/outcome-list.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import { readRefusals } from '../queue/activity.js';
import { readSendCounts } from '../queue/notify-record.js';
import { ITEM_KINDS } from '../queue/keys.js';
import { createMetrics } from '../ops/metrics.js';
import { createReadiness, type SpoolReadiness } from '../ops/readiness.js';
import type { OpsServer } from '../ops/server.js';
import { resolveApiTarget } from './api-target.js';
import { openContext, warnAboutRedisDurability } from './context.js';
import { inboxCounter, spoolIdOf } from './inbox-counts.js';
import { startSchedulerRole } from './scheduler-role.js';
import { startWatcherRole } from './watcher-role.js';
import { startWorkerRole } from './worker-role.js';

export const ROLES = ['watcher', 'worker', 'scheduler', 'http'] as const;
export type Role = (typeof ROLES)[number];

export interface DaemonHandle {
  /** Resolves once every role is up. */
  ready: Promise<void>;
  /** Begins the shutdown (idempotent); resolves when everything is closed. */
  stop(): Promise<void>;
  /** The ops server's URL once ready (http role only). */
  opsUrl(): string | null;
}

export function startDaemon(config: Readonly<Config>, roles: readonly Role[], logger: Logger): DaemonHandle {
  let stopRequested = false;
  let ops: OpsServer | null = null;
  let closeAll: (() => Promise<void>) | null = null;
  /** Run first on shutdown, before the stack: what takes in new work (ingest, /readyz, the spool watcher). */
  const stopIntake: Array<() => void | Promise<void>> = [];
  const ready = (async () => {
    const ctx = await openContext(config, logger, roles.join('+'));
    closeAll = () => ctx.closers.closeAll();
    await warnAboutRedisDurability(ctx.redis, logger);
    // Before any document reaches the push gate or is queued: the records of an earlier layout.
    const migrated = await migrateDocumentRecords(ctx.redis, ctx.keys, config.delivery.completedRetentionSec);
    if (migrated > 0) logger.info({ migrated }, 'carried the document records of the earlier layout over');
    const metrics = createMetrics();
    let isDraining = false;
    /** Who holds the spool (watcher role only), for /readyz. */
    let spoolLease: (() => Promise<SpoolReadiness>) | null = null;
    const readiness = createReadiness({
      redis: ctx.redis,
      authGate: ctx.authGate,
      isDraining: () => isDraining,
      spool: () => spoolLease?.() ?? Promise.resolve(null),
    });
    metrics.attach({
      stats: ctx.stats,
      queues: ctx.queues.items,
      isAuthPaused: async () => (await ctx.authGate.failure()) !== null,
      refusalCounts: async () => (await readRefusals(ctx.redis, ctx.keys)).counts,
      outcomeBacklog: () => readOutcomeBacklog(ctx.redis, ctx.keys),
      isReady: roles.includes('http') ? async () => (await readiness()).isReady : null,
      ratePerMinute: config.delivery.ratePerMinute,
      maxQueued: config.delivery.maxQueued,
      notificationCounts: () => readSendCounts(ctx.redis, ctx.keys),
    });
    if (roles.includes('http')) {
      // Imported here: a process without the http role never loads fastify and bull-board.
      const { startOpsServer } = await import('../ops/server.js');
      ops = await startOpsServer({
        host: config.http.host,
        port: config.http.port,
        uiPassword: config.http.uiPassword,
        ingestToken: config.http.ingestToken,
        maxIngestBytes: config.http.maxIngestBytes,
        metrics,
        queues: ctx.queues.items,
        enqueueDeps: ctx.enqueueDeps,
        readiness,
        overview: {
          authGate: ctx.authGate,
          ratePerMinute: config.delivery.ratePerMinute,
          maxQueued: config.delivery.maxQueued,
          spoolId: await spoolIdOf(config.spool),
          inboxCounts: inboxCounter(config.spool),
        },
        logger: logger.child({ mod: 'ops' }),
      });
      const server = ops;
      ctx.closers.push('ops server', () => server.close());
      stopIntake.push(() => {
        isDraining = true;
        server.setDraining(true);
      });
    }
    // The watcher role opens before the workers so that its outcome consumer stops after them: the
    // files of the items the workers finish during the grace period still reach archive/ or failed/.
    let rescan = async (): Promise<void> => {};
    if (roles.includes('watcher')) {
      const watcher = await startWatcherRole(ctx);
      rescan = () => watcher.rescan();
      spoolLease = () => watcher.lease();
      stopIntake.push(() => watcher.close());
    }
    const needsApi = roles.includes('worker') || roles.includes('scheduler');
    const target = needsApi ? await resolveApiTarget(config, logger, ctx.closers) : null;
    if (target !== null && roles.includes('worker')) await startWorkerRole(ctx, target, metrics);
    if (target !== null && roles.includes('scheduler')) await startSchedulerRole(ctx, target, rescan);
    logger.info({ roles, prefix: config.prefix, queues: ITEM_KINDS, opsUrl: ops?.url }, 'carrier-sync started');
    if (stopRequested) await ctx.closers.closeAll();
  })();
  let stopping: Promise<void> | undefined;
  return {
    ready,
    opsUrl: () => (ops as OpsServer | null)?.url ?? null,
    stop() {
      stopRequested = true;
      stopping ??= (async () => {
        await ready.catch(() => undefined);
        logger.info('shutting down: no new files, finishing in-flight work');
        for (const step of stopIntake) {
          try {
            await step();
          } catch (error) {
            logger.error({ err: error }, 'stopping intake failed');
          }
        }
        await closeAll?.();
        logger.info('shut down cleanly');
      })();
      return stopping;
    },
  };
}
