/**
 * `carrier-sync start`: opens the shared context, starts the requested roles, and on the first
 * signal shuts down in order: stop taking files and ingest (/readyz 503) → scheduler → workers
 * finish what is in flight within the grace period → API client, embedded sandbox → outcome consumer
 * (moves the files of what just finished), then the spool's lease is given up → ops server → queues → Redis → the managed redis-server,
 * when this process used one and no other client still does. After the intake steps, the
 * order is the shutdown stack's, reversed from the order things were opened.
 *
 * Start-up is named steps over one state object, in order: the waiting ops server (http role:
 * /healthz 200, /readyz 503 saying why, from the first second) → open the shared context (waits for
 * Redis as long as it takes, one warn line naming the address and its setting; checked, upgraded)
 * → readiness and metrics, then the full ops server, which takes the waiting one's port → the
 * watcher, worker and scheduler roles. A stop during the start abandons it: what was opened is
 * closed (the shutdown stack is the daemon's from the first step) and the process exits 0.
 * Each role's modules are imported when the role starts: a worker-only process never loads the
 * spool watcher, the validators, the ops server or notifications (issue 29: idle RSS). Metrics
 * exist only in a process with the http role, the one place they are read (`/metrics`): without
 * it, prom-client (and its event-loop and GC observers) is not loaded and the API client's timing
 * samples go nowhere.
 *
 * Once the roles are up, the watchdog (runtime/watchdog/watchdog.ts) checks that the work moves; a stall it
 * cannot recover within the bound ends the daemon as a crashed delivery thread does (exit 1), after
 * `/healthz` answered 503 for a moment.
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
import { claimsRefused } from '../spool/claims-refused.js';
import { resolveApiTarget, type ApiTarget } from './api-target.js';
import { isDeliveryThreaded, type DeliveryThread } from './delivery-thread/delivery-thread.js';
import { checkRedisDurability, openContext, type Context } from './context.js';
import { createClosers, type Closers } from './closers.js';
import { stopManagedRedisNow } from './managed-redis/managed-redis.js';
import { ContactAbandoned } from './redis-contact.js';
import { createToldBoard } from '../store/redis-health.js';
import type { WaitingServer } from '../ops/waiting-server.js';
import { startTracing, type SpansDropped, type Tracing } from './tracing.js';
import { armFailpoints } from '../failpoints.js';
import type { RedisConnection } from '../store/redis.js';
import { MAX_SLOT_WAIT_MS, oldestRun } from '../push/processor.js';
import { createWatchdog, type StallCheck, type Watchdog } from './watchdog/watchdog.js';
import {
  readyJobsCheck,
  redisConnectionsCheck,
  unsealedBatchCheck,
  workInProgressCheck,
  mainThreadRunCheck,
  watchDeliveryThread,
  type BatchWatch,
} from './watchdog/stall-checks.js';

/** What the API client reports after each request: the http role's request metrics, or nothing. */
type ObserveRequest = Metrics['observeRequest'];

export const ROLES = ['watcher', 'worker', 'scheduler', 'http'] as const;
export type Role = (typeof ROLES)[number];

/** After a stall the watchdog could not recover: how long `/healthz` answers 503 before the process stops (exit 1). */
const FATAL_HOLD_MS = 5000;

export interface DaemonHandle {
  /** Resolves once every role is up. */
  ready: Promise<void>;
  /** Begins the shutdown (idempotent); resolves when everything is closed. */
  stop(): Promise<void>;
  /** The ops server's URL once ready (http role only). */
  opsUrl(): string | null;
  /** True once stop() was called: a start that then fails was abandoned, not broken. */
  isStopRequested(): boolean;
  /** After stop(): 'clean', or 'grace-expired' when the grace period ran out before every step closed. */
  stopOutcome(): StopOutcome | null;
  /** Resolves when a part of the running daemon failed for good (the delivery thread crashed): the daemon must stop, exit 1. */
  failed: Promise<Error>;
  /** For an exit that cannot wait (a second signal): stops the managed redis-server now (bounded, never throws). */
  exitNow(): Promise<void>;
}

export type StopOutcome = 'clean' | 'grace-expired';

/** What the start-up steps build and the shutdown reads, filled in step by step. */
interface DaemonState {
  config: Readonly<Config>;
  roles: readonly Role[];
  logger: Logger;
  isStopRequested: boolean;
  /** Aborted by the first stop: ends the wait for Redis at start. */
  stopSignal: AbortController;
  /** The shutdown stack, the daemon's from the first step (a stop during the start closes what is open). */
  closers: Closers;
  phase: 'starting' | 'started' | 'failed';
  stopOutcome: StopOutcome | null;
  /** The ops port until Redis answers (http role). */
  waiting: WaitingServer | null;
  ops: OpsServer | null;
  /** Run first on shutdown, before the stack: what takes in new work (ingest, /readyz, the spool watcher). */
  stopIntake: Array<() => void | Promise<void>>;
  isDraining: boolean;
  /** Who holds the spool (watcher role only), for /readyz. */
  spoolLease: (() => Promise<SpoolReadiness>) | null;
  /** Tracing (OTEL_* settings), when an endpoint is set: started first, its last spans sent last. */
  tracing: Tracing | null;
  /** The worker role's thread (runtime/delivery-thread/delivery-thread.ts), when it runs on one. */
  deliveryThread: DeliveryThread | null;
  /** With the delivery thread: the Redis-outage board its health tracker and the main thread's share. */
  toldBoard: Int32Array | null;
  /** The progress watchdog (runtime/watchdog/watchdog.ts): its checks start once the roles are up. */
  watchdog: Watchdog;
  /** The spool's events batches as the watcher role sees them (watcher role only), for the watchdog. */
  batchWatch: BatchWatch | null;
  /** Called once a running part failed for good (logged fatal here, with `message`). */
  fail(error: Error, message?: string): void;
}

export function startDaemon(config: Readonly<Config>, roles: readonly Role[], logger: Logger): DaemonHandle {
  const state: DaemonState = {
    config,
    roles,
    logger,
    isStopRequested: false,
    stopSignal: new AbortController(),
    closers: createClosers(logger),
    phase: 'starting',
    stopOutcome: null,
    waiting: null,
    ops: null,
    stopIntake: [],
    isDraining: false,
    spoolLease: null,
    tracing: null,
    deliveryThread: null,
    toldBoard: isDeliveryThreaded(config, roles) ? createToldBoard() : null,
    watchdog: createWatchdog({
      stallMs: config.watchdog.stallMs,
      logger,
      // Not recovered within the bound: the liveness probe sees it first, then the process exits 1.
      onFatal: (reason) => {
        state.ops?.setUnhealthy(reason);
        // A moment for a liveness probe to see the 503 before the process goes.
        const hold = setTimeout(
          () => state.fail(new Error(reason), 'not recovered from a stall: stopping, exit 1 (for systemd or Kubernetes to restart the process)'),
          Math.min(FATAL_HOLD_MS, config.watchdog.stallMs / 2),
        );
        hold.unref();
      },
    }),
    batchWatch: null,
    fail: () => {},
  };
  armFailpoints(config.watchdog.failpoints);
  for (const failpoint of config.watchdog.failpoints) logger.warn({ failpoint }, `failpoint ${failpoint} is armed (CARRIER_SYNC_FAILPOINTS, tests only)`);
  const failed = new Promise<Error>((resolve) => {
    let hasFailed = false;
    state.fail = (error, message) => {
      if (hasFailed) return;
      hasFailed = true;
      logger.fatal({ err: error }, message ?? 'the delivery thread failed: stopping (its jobs stay in Redis and are taken up again at the next start)');
      resolve(error);
    };
  });
  const ready = start(state);
  ready.then(
    () => (state.phase = 'started'),
    () => (state.phase = 'failed'),
  );
  let stopping: Promise<void> | undefined;
  return {
    ready,
    failed,
    opsUrl: () => state.ops?.url ?? null,
    isStopRequested: () => state.isStopRequested,
    stopOutcome: () => state.stopOutcome,
    exitNow: () => stopManagedRedisNow(),
    stop() {
      state.isStopRequested = true;
      state.stopSignal.abort();
      stopping ??= shutDown(state, ready);
      return stopping;
    },
  };
}

async function start(state: DaemonState): Promise<void> {
  const { config, roles, logger } = state;
  if (roles.includes('http')) await openWaitingServer(state);
  state.tracing = await startTracing(process.env, logger);
  const ctx = await openShared(state);
  if (state.isStopRequested) throw new ContactAbandoned();
  let observeRequest: ObserveRequest | null = null;
  if (roles.includes('http')) {
    const { metrics, readiness } = await watchHealth(state, ctx);
    observeRequest = (sample) => metrics.observeRequest(sample);
    await startHttp(state, ctx, metrics, readiness);
  }
  await startRoles(state, ctx, observeRequest);
  watchProgress(state, ctx);
  logger.info({ roles, prefix: config.prefix, queues: ITEM_KINDS, opsUrl: state.ops?.url }, 'carrier-sync started');
  if (state.isStopRequested) await ctx.closers.closeAll();
}

/** The ops port from the first second, answering while Redis does not (ops/waiting-server.ts). */
async function openWaitingServer(state: DaemonState): Promise<void> {
  const { config, logger } = state;
  const { startWaitingServer } = await import('../ops/waiting-server.js');
  const waiting = await startWaitingServer(config.http.host, config.http.port, 'starting: connecting to Redis');
  state.waiting = waiting;
  state.closers.push('waiting ops server', () => waiting.close());
  // Said only if Redis keeps it waiting (the warn line carries its URL): a start refused at once
  // (an evicting Redis) stays the one line the operator needs.
  logger.debug({ url: waiting.url }, 'ops server listening (starting: /readyz answers 503 until Redis answers)');
}

/** The shared context (Redis, queues), checked and upgraded; Redis waited for (one warn line). */
async function openShared(state: DaemonState): Promise<Context> {
  const { config, roles, logger } = state;
  const ctx = await openContext(config, logger, roles.join('+'), {
    closers: state.closers,
    ...(state.toldBoard === null ? {} : { toldBoard: state.toldBoard }),
    contact: {
      signal: state.stopSignal.signal,
      onWaiting: (reason) => {
        logger.warn(state.waiting === null ? {} : { opsUrl: state.waiting.url }, reason);
        state.waiting?.setReason(reason);
      },
    },
  });
  state.waiting?.setReason('starting: Redis answered; starting the roles');
  await checkRedisDurability(ctx.redis, config.redis.allowEviction, logger, ctx.redisTarget);
  // Before any item reaches the push gate or is queued: what an earlier version left in Redis.
  await runDeploymentUpgrades(ctx, logger);
  return ctx;
}

/** Readiness and metrics (http role), with what they read; roles started later fill in the spool's lease. */
async function watchHealth(state: DaemonState, ctx: Context): Promise<{ metrics: Metrics; readiness: () => Promise<ReadinessState> }> {
  const { config, roles, tracing } = state;
  const { createMetrics } = await import('../ops/metrics.js');
  const metrics = createMetrics();
  const readiness = createReadiness({
    redis: ctx.redis,
    authGate: ctx.authGate,
    isDraining: () => state.isDraining,
    spool: () => state.spoolLease?.() ?? Promise.resolve(null),
    ...(roles.includes('watcher') ? { spoolDisk } : {}),
    redisWritesRefused: () => ctx.health.writesRefused(),
    stalled: () => state.watchdog.current(),
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
    ...(roles.includes('watcher') ? { spoolDisk, claimsRefused } : {}),
    redisOutages: () => ctx.health.outages(),
    ...(tracing === null ? {} : { spansDropped: () => addDropped(tracing.dropped(), state.deliveryThread?.spansDropped()) }),
    redisWritesRefused: () => ctx.health.writesRefused() !== null,
    notificationCounts: () => readSendCounts(ctx.redis, ctx.keys),
    isStalled: () => state.watchdog.current() !== null,
  });
  return { metrics, readiness };
}

async function startHttp(state: DaemonState, ctx: Context, metrics: Metrics, readiness: () => Promise<ReadinessState>): Promise<void> {
  const { startHttpRole } = await import('./roles/http-role.js');
  const waiting = state.waiting;
  const handover = waiting === null ? {} : { handover: { port: waiting.port, close: () => waiting.close() } };
  const server = await startHttpRole(ctx, { metrics, readiness, hasWatcher: state.roles.includes('watcher'), ...handover });
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
async function startRoles(state: DaemonState, ctx: Context, observeRequest: ObserveRequest | null): Promise<void> {
  const { config, roles, logger } = state;
  let rescan = async (): Promise<void> => {};
  if (roles.includes('watcher')) {
    const { startWatcherRole } = await import('./roles/watcher-role.js');
    const watcher = await startWatcherRole(ctx);
    rescan = () => watcher.rescan();
    state.spoolLease = () => watcher.lease();
    state.batchWatch = watcher.batches;
    state.stopIntake.push(() => watcher.close());
  }
  const needsApi = roles.includes('worker') || roles.includes('scheduler');
  const target = needsApi ? await resolveApiTarget(config, logger, ctx.closers) : null;
  if (target !== null && roles.includes('worker')) await startDelivery(state, ctx, target, observeRequest);
  if (target !== null && roles.includes('scheduler')) await (await import('./roles/scheduler-role.js')).startSchedulerRole(ctx, target, rescan, state.watchdog);
}

/**
 * The watchdog's checks, for what this process runs (runtime/watchdog/stall-checks.ts); stopped first on
 * shutdown, before anything it watches is closed.
 */
function watchProgress(state: DaemonState, ctx: Context): void {
  const { config, roles, watchdog } = state;
  const stallMs = config.watchdog.stallMs;
  const thread = state.deliveryThread;
  const connections: Array<[string, RedisConnection]> = [['redis', ctx.redis]];
  if (ctx.bullRedis !== ctx.redis) connections.push(['redis (bullmq)', ctx.bullRedis]);
  const checks: StallCheck[] = [redisConnectionsCheck(connections)];
  // A run's own bounds: the gate's waits before it steps aside, then the request's timeouts.
  const runAllowanceMs = MAX_SLOT_WAIT_MS + config.api.connectTimeoutMs + config.api.headersTimeoutMs + config.api.bodyTimeoutMs;
  const threadWatch = thread === null ? null : watchDeliveryThread(thread, stallMs, (withinMs) => ctx.health.isTroubled(withinMs), runAllowanceMs);
  if (threadWatch !== null) checks.push(threadWatch.check);
  if (roles.includes('worker')) {
    // Without a thread to replace, nothing here brings the workers back: the bound ends the process.
    const recoverFor = threadWatch?.replaceFor ?? (() => async () => {});
    checks.push(readyJobsCheck(ctx, stallMs, recoverFor, () => thread !== null && thread.beat() === null));
    if (thread === null) checks.push(mainThreadRunCheck(oldestRun, stallMs + runAllowanceMs, stallMs, (withinMs) => ctx.health.isTroubled(withinMs)));
  }
  const spool = state.batchWatch;
  if (spool !== null) {
    const isTroubled = (withinMs: number): boolean => ctx.health.isTroubled(withinMs);
    checks.push(
      unsealedBatchCheck(spool, stallMs, isTroubled),
      workInProgressCheck('a file claim does not finish (a file check does not answer)', spool.claims, stallMs, isTroubled, () => spool.restartChecks()),
      workInProgressCheck('moving files to archive/ or failed/ does not finish', spool.outcomes, stallMs, isTroubled, async () => {}),
    );
  }
  state.stopIntake.unshift(() => watchdog.close());
  watchdog.start(checks);
}

/** The worker role: on a thread of its own when this process runs the watcher role too (runtime/delivery-thread/delivery-thread.ts), else here. */
async function startDelivery(state: DaemonState, ctx: Context, target: ApiTarget, observeRequest: ObserveRequest | null): Promise<void> {
  if (state.toldBoard !== null) {
    const { startDeliveryThread } = await import('./delivery-thread/delivery-thread.js');
    state.deliveryThread = await startDeliveryThread(ctx, target, { observeRequest, toldBoard: state.toldBoard, onCrash: (error) => state.fail(error) });
    return;
  }
  await (await import('./roles/worker-role.js')).startWorkerRole(ctx, target, observeRequest ?? (() => {}));
}

function addDropped(own: SpansDropped, thread: SpansDropped | undefined): SpansDropped {
  return thread === undefined ? own : { queueFull: own.queueFull + thread.queueFull, exportFailed: own.exportFailed + thread.exportFailed };
}

async function shutDown(state: DaemonState, ready: Promise<void>): Promise<void> {
  const { logger, config } = state;
  const phase = state.phase;
  // A start that failed has no work in flight: close what it opened, and say nothing more (the
  // failure is the one line the operator needs).
  if (phase === 'failed') {
    await state.closers.closeAll();
    await state.tracing?.shutdown();
    return;
  }
  // Whatever hangs (a Redis that is gone, full or failing over, an API that does not answer, a
  // full disk), the process is out within the grace period: nothing is lost by leaving (what was
  // in flight is taken up again at the next start), and an operator's stop is obeyed.
  const orderly = phase === 'started' ? stopStarted(state) : stopStarting(state, ready);
  if (await settledWithin(orderly, config.shutdown.graceMs)) {
    state.stopOutcome = 'clean';
    logger.info(phase === 'started' ? 'shut down cleanly' : 'shut down cleanly (stopped while starting)');
    return;
  }
  state.stopOutcome = 'grace-expired';
  logger.warn(
    { graceMs: config.shutdown.graceMs, closing: state.closers.current() },
    'grace period over: exiting before every step closed (what was in flight is taken up again at the next start)',
  );
  // The managed redis-server's own step may not have come yet: it is stopped all the same.
  await stopManagedRedisNow();
}

/** A start under way (waiting for Redis) is abandoned: stop() aborted its wait; what it opened is closed. */
async function stopStarting(state: DaemonState, ready: Promise<void>): Promise<void> {
  await state.closers.closeAll();
  await ready.catch(() => {});
  await state.tracing?.shutdown();
}

async function stopStarted(state: DaemonState): Promise<void> {
  const { logger } = state;
  logger.info('shutting down: no new files, finishing in-flight work');
  for (const step of state.stopIntake) {
    try {
      await step();
    } catch (error) {
      logger.error({ err: error }, 'stopping intake failed');
    }
  }
  await state.closers.closeAll();
  // The spans of the last moves go out (a flush bounded to 3 s); the exporter never holds the stop longer.
  await state.tracing?.shutdown();
}

/** True when `promise` settles within `ms`; false when the time ran out first. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const isSettled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return isSettled;
}
