/**
 * What the spool's holder runs while it holds the lease (lease-holder.ts starts it with the term's
 * fence). It takes the same path as a fresh start, so a takeover settles what a crash left:
 *   register the spool → in-flight index → sweep failed/ → reconcile `.inflight/` → upgrades →
 *   outcome consumer → inbox watcher → the same reconcile, periodically.
 * Every move of a file checks the fence first: once the lease is lost, nothing moves.
 *
 * The outcome side comes in as functions (`OutcomeSide`), wired by runtime/roles/watcher-role.ts:
 * outcome/ imports spool/, so spool/ does not import outcome/.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Clock } from '../clock.js';
import type { SpoolConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { addRefusal } from '../store/activity.js';
import type { Batches } from '../queue/batches.js';
import type { EnqueueDeps } from '../queue/enqueue.js';
import type { ReportContent } from '../queue/failure-report.js';
import { ITEM_KIND_OF, SPOOL_KINDS, type Keys, type SpoolKind } from '../store/keys.js';
import type { OutcomeMessage } from '../store/payloads.js';
import type { RedisConnection } from '../store/redis.js';
import { addStat } from '../store/stats.js';
import type { JourneyWriter } from '../journey/journey.js';
import type { CheckPool } from '../validate/pool/check-pool.js';
import type { ClaimDeps, SpoolSink } from './claim.js';
import { loadInflightIndex, type InflightIndex } from './inflight-index.js';
import { parseInflightName, type SpoolPaths } from './paths.js';
import { reconcileInflight, STUCK_MS } from './reconcile.js';
import type { Fence, HeldSession } from './lease/spool-lease.js';
import { startSpoolWatcher, type SpoolWatcher } from './watcher.js';
import type { ProgressTrack } from '../progress.js';

/** Longest the shutdown waits for the outcomes of the last finished items before closing anyway. */
const OUTCOME_DRAIN_MS = 5000;

/** Moves of this spool's files to archive/ or failed/ (outcome/apply.ts). */
export interface SpoolOutcomes extends SpoolSink {
  apply(message: OutcomeMessage): Promise<void>;
}

export interface OutcomeSide {
  /** This spool's outcomes, finding in-flight files through `index`; what they do later on their own (archived files looked at again) waits on `isHeld`. */
  open(index: InflightIndex, isHeld: () => boolean): SpoolOutcomes;
  /** Clears what interrupted moves left in one failed/ folder; returns the names removed (outcome/files.ts). */
  sweepInterruptedMoves(failedDir: string, pending: { claims: ReadonlySet<string>; inbox: ReadonlySet<string> }): Promise<string[]>;
  /** Starts applying this spool's outcome messages with `apply`; nothing is applied or removed once `isHeld` says no. */
  startConsumer(apply: (message: OutcomeMessage) => Promise<void>, isHeld: () => boolean): { drain(maxMs: number): Promise<void>; stop(): Promise<void> };
}

export interface SpoolSessionDeps {
  paths: SpoolPaths;
  spool: SpoolConfig;
  /** Unfinished items a kind's queue may hold before its inbox waits (back-pressure). */
  maxQueued: number;
  redis: RedisConnection;
  keys: Keys;
  enqueue: EnqueueDeps;
  batches: Batches;
  /** The file checks, on their threads; opened and closed by the role that owns the session. */
  checks: CheckPool;
  backlog(kind: SpoolKind): Promise<number>;
  /** Upgrades this spool's stored data (runtime/upgrades.ts), before its outcomes are applied. */
  upgrade(): Promise<void>;
  outcomes: OutcomeSide;
  /** Where refused files' journey steps go (journey/journey.ts). */
  journey?: JourneyWriter;
  /** Called when a Redis episode of this process ends, with when it began (ms since the epoch); returns the unsubscribe. */
  onRedisRecovered?(listener: (ended: { since: number }) => void): () => void;
  /** The claims in progress, for the watchdog (src/progress.ts). */
  claimProgress?: ProgressTrack;
  clock: Clock;
  logger: Logger;
}

export interface SpoolSession extends HeldSession {
  watcher: SpoolWatcher;
  /** Events files claimed before `before` whose batch is not sealed (the watchdog's check; a sealed batch is asked once). */
  unsealedBatches(before: number): Promise<Array<{ fileName: string; since: number }>>;
  /** The in-flight reconcile, now, for claims made before `before` (the watchdog's recovery; one reconcile at a time, as ever). */
  reconcileNow(before: number): Promise<void>;
}

/** What the session's steps share. */
interface SessionState {
  deps: SpoolSessionDeps;
  fence: Fence;
  index: InflightIndex;
  outcomes: SpoolOutcomes;
  claimDeps: ClaimDeps;
  /**
   * While an in-flight reconcile runs: the widest one asked for meanwhile (its settledBefore, and the
   * shortest stuck bound of its events batches), or null. Null when none runs.
   */
  reconciling: { next: { settledBefore: number; stuckMs: number } | null } | null;
}

export async function startSpoolSession(deps: SpoolSessionDeps, fence: Fence): Promise<SpoolSession> {
  const { paths, logger: log } = deps;
  const state = await openSession(deps, fence);
  await sweepFailed(state);
  await reconcileInflight(state.claimDeps, state.index, log);

  await deps.upgrade();
  const outcomeConsumer = deps.outcomes.startConsumer(
    async (message) => {
      fence.assertHeld();
      await state.outcomes.apply(message);
    },
    () => fence.isHeld(),
  );
  const watcher = await startSpoolWatcher({ ...state.claimDeps, maxQueued: deps.maxQueued, backlog: deps.backlog }).catch(async (error: unknown) => {
    await outcomeConsumer.stop();
    throw error;
  });
  const reconcileTimer = reconcileEvery(state);
  const afterRecovery = reconcileAfterRecovery(state);
  log.info(
    { archive: `${paths.root}/archive/<kind>/<YYYY-MM-DD>/`, failed: `${paths.root}/failed/<kind>/`, spoolId: paths.spoolId },
    'files accepted by the API go to archive/, refused or dead-lettered ones to failed/ with a .error.json',
  );
  let stopping: Promise<void> | undefined;
  let sealed = new Set<string>();
  return {
    watcher,
    async unsealedBatches(before) {
      const names = state.index.olderThan('events', before);
      sealed = new Set(names.filter((name) => sealed.has(name)));
      const unsealed: Array<{ fileName: string; since: number }> = [];
      for (const name of names) {
        const parsed = parseInflightName(name);
        if (parsed === null || sealed.has(name)) continue;
        if (await deps.batches.isSealed(parsed.claimId)) sealed.add(name);
        else unsealed.push({ fileName: parsed.fileName, since: state.index.trackedAt('events', name) ?? before });
      }
      return unsealed;
    },
    async reconcileNow(before) {
      if (fence.isHeld()) reconcile(state, before);
    },
    stop({ isShutdown }) {
      stopping ??= (async () => {
        clearInterval(reconcileTimer);
        afterRecovery.stop();
        await watcher.close();
        // On shutdown this runs after the item workers closed: the outcomes they wrote while
        // finishing their in-flight jobs are applied (files moved) first, within OUTCOME_DRAIN_MS.
        // What is left is applied by the next holder of the spool.
        // Not while Redis is away: nothing can be read or applied, the drain would only wait out its bound.
        if (isShutdown && deps.redis.status === 'ready') await outcomeConsumer.drain(OUTCOME_DRAIN_MS);
        await outcomeConsumer.stop();
        await deps.journey?.flush();
      })();
      return stopping;
    },
  };
}

/** Registers the spool, loads what is in flight, and opens its outcomes behind the fence. */
async function openSession(deps: SpoolSessionDeps, fence: Fence): Promise<SessionState> {
  const { paths } = deps;
  await deps.redis.sadd(deps.keys.spools, paths.spoolId);
  for (const kind of SPOOL_KINDS) await mkdir(paths.inflight(kind), { recursive: true });
  const index = await loadInflightIndex(paths);
  const outcomes = deps.outcomes.open(index, () => fence.isHeld());
  const claimDeps: ClaimDeps = {
    paths,
    spool: deps.spool,
    enqueue: deps.enqueue,
    batches: deps.batches,
    sink: fencedSink(deps, fence, outcomes),
    isOwner: () => fence.isHeld(),
    track: (kind, name) => index.track(kind, name),
    untrack: (kind, name) => index.forget(kind, name),
    checks: deps.checks,
    clock: deps.clock,
    logger: deps.logger,
    ...(deps.journey === undefined ? {} : { journey: deps.journey }),
    ...(deps.claimProgress === undefined ? {} : { claimProgress: deps.claimProgress }),
  };
  return { deps, fence, index, outcomes, claimDeps, reconciling: null };
}

/** Where the claims send files that do not become jobs: each move checks the fence first. */
function fencedSink(deps: SpoolSessionDeps, fence: Fence, outcomes: SpoolOutcomes): SpoolSink {
  return {
    async reject(kind, path, fileName, report) {
      fence.assertHeld();
      const target = await outcomes.reject(kind, path, fileName, report);
      // Named as it is in failed/ (`…~2.pdf` after a name clash): the overview and the digest point there.
      await countRefusal(deps, kind, fileName, report, typeof target === 'string' ? basename(target) : fileName);
    },
    async archive(kind, path, fileName) {
      fence.assertHeld();
      await outcomes.archive(kind, path, fileName);
    },
    async finishBatch(batchId) {
      fence.assertHeld();
      await outcomes.finishBatch(batchId);
    },
  };
}

/**
 * A refused events file counts once; its invalid lines are counted when it is parsed. The counters
 * and the overview's refusals (by code, latest 20, per minute): one round trip.
 */
async function countRefusal(deps: SpoolSessionDeps, kind: SpoolKind, fileName: string, report: ReportContent, failedName: string): Promise<void> {
  const { redis, keys, clock } = deps;
  const chain = addStat(addStat(redis.multi(), keys.stats, 'received', ITEM_KIND_OF[kind]), keys.stats, 'failed', ITEM_KIND_OF[kind]);
  const refusal = {
    at: new Date(clock.now()).toISOString(),
    kind,
    file: failedName,
    ...(failedName === fileName ? {} : { droppedAs: fileName }),
    code: report.code,
    reason: report.message,
    reasonSource: report.reasonSource,
  };
  await addRefusal(chain, keys, refusal, clock.now()).exec();
}

/** Clears what interrupted moves left in failed/, before anything moves files again. */
async function sweepFailed(state: SessionState): Promise<void> {
  const { paths, logger: log } = state.deps;
  for (const kind of SPOOL_KINDS) {
    const inbox = new Set(await readdir(paths.inbox(kind)).catch(() => [] as string[]));
    const claims = new Set(state.index.all(kind).flatMap((name) => parseInflightName(name)?.claimId ?? []));
    state.fence.assertHeld();
    const swept = await state.deps.outcomes.sweepInterruptedMoves(paths.failed(kind), { claims, inbox });
    if (swept.length > 0) log.warn({ kind, swept }, 'cleared what interrupted moves left in failed/ (their files are decided again)');
  }
}

/**
 * The start's reconcile, periodically, for claims that lost their job or outcome while the process
 * kept running (Redis away at the wrong moment). Claims younger than a minute are left alone.
 */
function reconcileEvery(state: SessionState): NodeJS.Timeout {
  const { deps, fence } = state;
  const timer = setInterval(() => {
    if (!fence.isHeld()) return;
    const settledBefore = deps.clock.now() - SETTLED_MS;
    // What another process moved into `.inflight/` after this one read it is adopted now and
    // reconciled once it is as old as any claim the pass looks at.
    state.index.adoptUntracked().then(
      (adopted) => {
        if (adopted > 0) deps.logger.info({ adopted }, 'files found in .inflight/ that this process did not claim: taken up by the periodic reconcile');
      },
      (error: unknown) => deps.logger.warn({ err: error }, 'listing .inflight/ again failed'),
    );
    reconcile(state, settledBefore);
  }, deps.spool.rescanIntervalMs);
  timer.unref();
  return timer;
}

/** A claim this old is no longer under way: its job was added or never will be (the periodic reconcile's margin). */
const SETTLED_MS = 60_000;
/** After a Redis episode ends, how long a claim cut by it gets to finish its own enqueue (commands held through it are sent at once). */
const RECOVERY_SETTLE_MS = 5000;

/**
 * A failover loses what the old primary took and had not passed on (a lagging replica), a restart
 * without persistence loses everything: a claim made before the episode may have lost its job. Once
 * the episode is over (and its own commands had RECOVERY_SETTLE_MS to land), the claims made before
 * it began are reconciled at once, not a minute later.
 */
function reconcileAfterRecovery(state: SessionState): { stop(): void } {
  const { deps, fence } = state;
  const timers = new Set<NodeJS.Timeout>();
  const unsubscribe = deps.onRedisRecovered?.((ended) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      // An events batch of those claims that lost a job (or its done mark) is finished job by job now
      // (no stuck bound): its lost events are queued again before the chain gives up waiting on them.
      if (fence.isHeld()) reconcile(state, Math.max(ended.since, deps.clock.now() - SETTLED_MS), 0);
    }, RECOVERY_SETTLE_MS);
    timer.unref();
    timers.add(timer);
  });
  return {
    stop() {
      unsubscribe?.();
      for (const timer of timers) clearTimeout(timer);
    },
  };
}

/**
 * One in-flight reconcile at a time (two would both take up a file whose job is missing): one asked
 * for while another runs follows it, once, with the widest settledBefore asked for meanwhile.
 */
function reconcile(state: SessionState, settledBefore: number, stuckMs = STUCK_MS): void {
  if (state.reconciling !== null) {
    const asked = state.reconciling.next;
    state.reconciling.next = {
      settledBefore: Math.max(asked?.settledBefore ?? -Infinity, settledBefore),
      stuckMs: Math.min(asked?.stuckMs ?? Infinity, stuckMs),
    };
    return;
  }
  state.reconciling = { next: null };
  reconcileInflight(state.claimDeps, state.index, state.deps.logger, settledBefore, stuckMs)
    .catch((error: unknown) => state.deps.logger.warn({ err: error }, 'in-flight reconcile failed'))
    .finally(() => {
      const next = state.reconciling?.next ?? null;
      state.reconciling = null;
      if (next !== null && state.fence.isHeld()) reconcile(state, next.settledBefore, next.stuckMs);
    });
}
