/**
 * `carrier-sync start`: opens the shared context, starts the requested roles, and on the first
 * signal shuts down in order: stop taking files and ingest (/readyz 503) → scheduler → workers
 * finish what is in flight within the grace period → API client, embedded sandbox → outcome consumer
 * (moves the files of what just finished), then the spool's lease is given up → ops server → queues → Redis → the managed redis-server,
 * when this process used one and no other client still does. After the intake steps, the
 * order is the shutdown stack's, reversed from the order things were opened.
 *
 * Start-up is named steps over one state object, in order: open the shared context (checked,
 * upgraded) → readiness and metrics, then the ops server (http role) → the watcher, worker and scheduler roles.
 * Each role's modules are imported when the role starts: a worker-only process never loads the
 * spool watcher, the validators, the ops server or notifications (issue 29: idle RSS). Metrics
 * exist only in a process with the http role, the one place they are read (`/metrics`): without
 * it, prom-client (and its event-loop and GC observers) is not loaded and the API client's timing
 * samples go nowhere.
 */
import { runDeploymentUpgrades } from './upgrades.js';
import { readOutcomeBacklog } from '../queue/outcome-list.js';
import { readSendCounts } from '../store/notify-record.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import { readRefusals } from '../store/activity.js';
import { ITEM_KINDS } from '../store/keys.js';
import type { Metrics } from '../ops/metrics.js';
import { createReadiness, type ReadinessState, type SpoolReadiness } from '../ops/readiness.js';
import type { OpsServer } from '../ops/server.js';
import { spoolDisk } from '../spool/disk-state.js';
import { resolveApiTarget } from './api-target.js';
import { checkRedisDurability, openContext, type Context } from './context.js';
import { startTracing, type Tracing } from './tracing.js';

/** What the API client reports after each request: the http role's request metrics, or nothing. */
type ObserveRequest = Metrics['observeRequest'];

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

/** What the start-up steps build and the shutdown reads, filled in step by step. */
interface DaemonState {
  config: Readonly<Config>;
  roles: readonly Role[];
  logger: Logger;
  isStopRequested: boolean;
  ops: OpsServer | null;
  closeAll: (() => Promise<void>) | null;
  /** Run first on shutdown, before the stack: what takes in new work (ingest, /readyz, the spool watcher). */
  stopIntake: Array<() => void | Promise<void>>;
  isDraining: boolean;
  /** Who holds the spool (watcher role only), for /readyz. */
  spoolLease: (() => Promise<SpoolReadiness>) | null;
  /** Tracing (OTEL_* settings), when an endpoint is set: started first, its last spans sent last. */
  tracing: Tracing | null;
}

export function startDaemon(config: Readonly<Config>, roles: readonly Role[], logger: Logger): DaemonHandle {
  const state: DaemonState = {
    config,
    roles,
    logger,
    isStopRequested: false,
    ops: null,
    closeAll: null,
    stopIntake: [],
    isDraining: false,
    spoolLease: null,
    tracing: null,
  };
  const ready = start(state);
  let stopping: Promise<void> | undefined;
  return {
    ready,
    opsUrl: () => state.ops?.url ?? null,
    stop() {
      state.isStopRequested = true;
      stopping ??= shutDown(state, ready);
      return stopping;
    },
  };
}

async function start(state: DaemonState): Promise<void> {
  const { config, roles, logger } = state;
  state.tracing = await startTracing(process.env, logger);
  const ctx = await openShared(state);
  let observeRequest: ObserveRequest = () => {};
  if (roles.includes('http')) {
    const { metrics, readiness } = await watchHealth(state, ctx);
    observeRequest = (sample) => metrics.observeRequest(sample);
    await startHttp(state, ctx, metrics, readiness);
  }
  await startRoles(state, ctx, observeRequest);
  logger.info({ roles, prefix: config.prefix, queues: ITEM_KINDS, opsUrl: state.ops?.url }, 'carrier-sync started');
  if (state.isStopRequested) await ctx.closers.closeAll();
}

/** The shared context (Redis, queues, the shutdown stack), checked and upgraded. */
async function openShared(state: DaemonState): Promise<Context> {
  const { config, roles, logger } = state;
  const ctx = await openContext(config, logger, roles.join('+'));
  state.closeAll = () => ctx.closers.closeAll();
  await checkRedisDurability(ctx.redis, config.redis.allowEviction, logger);
  // Before any item reaches the push gate or is queued: what an earlier version left in Redis.
  await runDeploymentUpgrades(ctx, logger);
  return ctx;
}

/** Readiness and metrics (http role), with what they read; roles started later fill in the spool's lease. */
async function watchHealth(state: DaemonState, ctx: Context): Promise<{ metrics: Metrics; readiness: () => Promise<ReadinessState> }> {
  const { config, roles } = state;
  const { createMetrics } = await import('../ops/metrics.js');
  const metrics = createMetrics();
  const readiness = createReadiness({
    redis: ctx.redis,
    authGate: ctx.authGate,
    isDraining: () => state.isDraining,
    spool: () => state.spoolLease?.() ?? Promise.resolve(null),
    ...(roles.includes('watcher') ? { spoolDisk } : {}),
    redisWritesRefused: () => ctx.health.writesRefused(),
  });
  metrics.attach({
    stats: ctx.stats,
    queues: ctx.queues.items,
    isAuthPaused: async () => (await ctx.authGate.failure()) !== null,
    refusalCounts: async () => (await readRefusals(ctx.redis, ctx.keys)).counts,
    outcomeBacklog: () => readOutcomeBacklog(ctx.redis, ctx.keys),
    isReady: async () => (await readiness()).isReady,
    ratePerMinute: config.delivery.ratePerMinute,
    maxQueued: config.delivery.maxQueued,
    ...(roles.includes('watcher') ? { spoolDisk } : {}),
    redisOutages: () => ctx.health.outages(),
    ...(state.tracing === null ? {} : { spansDropped: state.tracing.dropped }),
    redisWritesRefused: () => ctx.health.writesRefused() !== null,
    notificationCounts: () => readSendCounts(ctx.redis, ctx.keys),
  });
  return { metrics, readiness };
}

async function startHttp(state: DaemonState, ctx: Context, metrics: Metrics, readiness: () => Promise<ReadinessState>): Promise<void> {
  const { startHttpRole } = await import('./http-role.js');
  const server = await startHttpRole(ctx, { metrics, readiness, hasWatcher: state.roles.includes('watcher') });
  state.ops = server;
  state.stopIntake.push(() => {
    state.isDraining = true;
    server.setDraining(true);
  });
}

/**
 * The watcher role opens before the workers so that its outcome consumer stops after them: the
 * files of the items the workers finish during the grace period still reach archive/ or failed/.
 */
async function startRoles(state: DaemonState, ctx: Context, observeRequest: ObserveRequest): Promise<void> {
  const { config, roles, logger } = state;
  let rescan = async (): Promise<void> => {};
  if (roles.includes('watcher')) {
    const { startWatcherRole } = await import('./watcher-role.js');
    const watcher = await startWatcherRole(ctx);
    rescan = () => watcher.rescan();
    state.spoolLease = () => watcher.lease();
    state.stopIntake.push(() => watcher.close());
  }
  const needsApi = roles.includes('worker') || roles.includes('scheduler');
  const target = needsApi ? await resolveApiTarget(config, logger, ctx.closers) : null;
  if (target !== null && roles.includes('worker')) await (await import('./worker-role.js')).startWorkerRole(ctx, target, observeRequest);
  if (target !== null && roles.includes('scheduler')) await (await import('./scheduler-role.js')).startSchedulerRole(ctx, target, rescan);
}

async function shutDown(state: DaemonState, ready: Promise<void>): Promise<void> {
  const { logger } = state;
  // A start that failed has no work in flight: close what it opened, and say nothing more
  // (the failure is the one line the operator needs).
  if (
    !(await ready.then(
      () => true,
      () => false,
    ))
  ) {
    await state.closeAll?.();
    await state.tracing?.shutdown();
    return;
  }
  logger.info('shutting down: no new files, finishing in-flight work');
  for (const step of state.stopIntake) {
    try {
      await step();
    } catch (error) {
      logger.error({ err: error }, 'stopping intake failed');
    }
  }
  await state.closeAll?.();
  await state.tracing?.shutdown();
  logger.info('shut down cleanly');
}
