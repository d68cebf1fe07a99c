/**
 * The watchdog's checks (runtime/watchdog/watchdog.ts), each cheap: what the daemon keeps anyway is read
 * once per tick, never once per item.
 *
 * - the delivery thread: its heartbeat (one message a second, runtime/delivery-thread/delivery-thread-entry.ts)
 *   stopped for the bound, or a Redis connection it needs ended without being closed (ioredis
 *   `end`: no reconnect comes). Recovery: a new thread, with new connections and workers.
 * - a run of a job in the delivery thread lasting the bound beyond its own bounds (the gate's waits,
 *   the request's timeouts), Redis answering all along, its answer not being written. Recovery: a
 *   new delivery thread (the job comes back when its lock lapses).
 * - this thread's Redis connections: ended without being closed. Recovery: connect again.
 * - ready jobs (waiting, none active) while nothing finished (the stats counters) for the bound.
 *   Not while Redis is in an episode or the 401 gate is closed: a pause moves jobs out of `wait`,
 *   the rate limiter holds them as delayed, a slow API keeps them active; none is a stall.
 * - an events file in `.inflight/` whose batch was not sealed for the bound (not during a Redis
 *   episode, nor the bound after it). Recovery: the spool's reconcile reads the file again and
 *   seals its batch (spool/reconcile.ts).
 * - a file's claim going for the bound with none ending (a check thread that stopped answering).
 *   Recovery: the check threads are ended and the file claimed again.
 * - an outcome pass going for the bound (a move stuck on a share that does not answer). No
 *   recovery can take a file call back: the process exits at the bound, for its supervisor.
 */
import { ITEM_KINDS } from '../../store/keys.js';
import type { RedisConnection } from '../../store/redis.js';
import type { Context } from '../context.js';
import type { DeliveryThread } from '../delivery-thread/delivery-thread.js';
import type { ProgressTrack } from '../../progress.js';
import type { StallCheck } from './watchdog.js';

/** What a stall is, without its recovery. */
type StallFacts = { what: string; since: number };

export interface ThreadWatch {
  /** The thread's own check: its heartbeat and its connections; a stall lasts while the thread is replaced. */
  check: StallCheck;
  /** A recovery that replaces the thread, `stall` lasting until the new one runs (the ready-jobs check uses it too). */
  replaceFor(stall: StallFacts): () => Promise<void>;
}

/**
 * `runAllowanceMs`: the longest a run lasts by its own bounds (the gate's waits before it steps
 * aside, the request's connect, headers and body timeouts): a run is stuck once it lasts the bound
 * beyond that, so an API answering slowly is never one.
 */
export function watchDeliveryThread(thread: DeliveryThread, stallMs: number, isTroubled: (withinMs: number) => boolean, runAllowanceMs: number): ThreadWatch {
  let endedSeenAt: number | null = null;
  let replacing: StallFacts | null = null;
  const replaceFor = (stall: StallFacts) => async (): Promise<void> => {
    replacing = stall;
    try {
      await thread.restart();
    } finally {
      replacing = null;
    }
  };
  const check: StallCheck = async (nowMs) => {
    if (replacing !== null) return { ...replacing, recover: async () => {} };
    const beat = thread.beat();
    if (beat === null) return null; // starting or stopping
    if (beat.endedConnections.length > 0) {
      endedSeenAt ??= nowMs;
      const stall = { what: `the delivery thread's Redis connection ended (${beat.endedConnections.join(', ')})`, since: endedSeenAt };
      return { ...stall, recover: replaceFor(stall) };
    }
    endedSeenAt = null;
    if (nowMs - beat.lastAt >= stallMs) {
      const stall = { what: 'the delivery thread does not answer', since: beat.lastAt };
      return { ...stall, recover: replaceFor(stall) };
    }
    // A run bounded by its own waits (the gate's, the request's timeout) that lasts the bound, with
    // Redis answering all along: it waits for something that will not come.
    const stall = runStall(beat.oldestRun, nowMs, stallMs + runAllowanceMs, stallMs, isTroubled);
    return stall === null ? null : { ...stall, recover: replaceFor(stall) };
  };
  return { check, replaceFor };
}

export function redisConnectionsCheck(connections: ReadonlyArray<readonly [string, RedisConnection]>): StallCheck {
  const endedSince = new Map<string, number>();
  return async (nowMs) => {
    const ended = connections.filter(([, connection]) => connection.status === 'end');
    if (ended.length === 0) {
      endedSince.clear();
      return null;
    }
    const since = Math.min(...ended.map(([name]) => endedSince.get(name) ?? (endedSince.set(name, nowMs), nowMs)));
    return {
      what: `a Redis connection ended (${ended.map(([name]) => name).join(', ')})`,
      since,
      recover: async () => {
        for (const [, connection] of ended) if (connection.status === 'end') await connection.connect().catch(() => {});
      },
    };
  };
}

const FINISHED = ['sent', 'dead_lettered', 'superseded', 'duplicates'] as const;

/** `recoverFor`: what brings the workers back (a new delivery thread); `isHeld`: they are not there yet (the thread starting). */
export function readyJobsCheck(ctx: Context, stallMs: number, recoverFor: (stall: StallFacts) => () => Promise<void>, isHeld: () => boolean): StallCheck {
  let mark: { finished: number; at: number } | null = null;
  return async (nowMs) => {
    if (isHeld() || ctx.health.current() !== null || (await ctx.authGate.failure()) !== null) {
      mark = null;
      return null;
    }
    const [stats, counts] = await Promise.all([
      ctx.stats.read(),
      Promise.all(ITEM_KINDS.map((kind) => ctx.queues.items[kind].getJobCounts('waiting', 'prioritized', 'active'))),
    ]);
    const finished = FINISHED.reduce((sum, counter) => sum + ITEM_KINDS.reduce((s, kind) => s + stats[counter][kind], 0), 0);
    const waiting = counts.reduce((sum, c) => sum + (c['waiting'] ?? 0) + (c['prioritized'] ?? 0), 0);
    const active = counts.reduce((sum, c) => sum + (c['active'] ?? 0), 0);
    if (mark === null || waiting === 0 || active > 0 || finished !== mark.finished) {
      mark = { finished, at: nowMs };
      return null;
    }
    if (nowMs - mark.at < stallMs) return null;
    const stall = { what: `${waiting} jobs ready and none taken`, since: mark.at };
    return { ...stall, recover: recoverFor(stall) };
  };
}

/** What the watcher role offers the watchdog (runtime/roles/watcher-role.ts). */
export interface BatchWatch {
  /** The files' claims in progress (read, checked on a thread, queued). */
  claims: ProgressTrack;
  /** The outcome consumer's passes in progress (files moved, their batch settled). */
  outcomes: ProgressTrack;
  /** Ends the check threads, checks under way included (validate/pool/check-pool.ts). */
  restartChecks(): Promise<void>;
  /** Events files in flight since before `before` whose batch is not sealed: their names and claim times. */
  unsealedBatches(before: number): Promise<Array<{ fileName: string; since: number }>>;
  /** Reconciles `.inflight/` for claims made before `before` (an unsealed batch's file is read again and sealed). */
  reconcile(before: number): Promise<void>;
}

/** `isTroubled`: Redis is in an episode, or left one less than the bound ago (a claim it cut gets the bound to finish). */
export function unsealedBatchCheck(watch: BatchWatch, stallMs: number, isTroubled: (withinMs: number) => boolean): StallCheck {
  return async (nowMs) => {
    if (isTroubled(stallMs)) return null;
    const unsealed = await watch.unsealedBatches(nowMs - stallMs);
    if (unsealed.length === 0) return null;
    const since = Math.min(...unsealed.map((batch) => batch.since));
    const names = unsealed.map((batch) => batch.fileName);
    return {
      what: `the batch of events file ${names.slice(0, 3).join(', ')}${names.length > 3 ? ` (+${names.length - 3})` : ''} is not sealed`,
      since,
      recover: () => watch.reconcile(nowMs - stallMs),
    };
  };
}

/**
 * A run of `track` (a claim, an outcome pass) going for the bound while none ended for the bound:
 * the work behind it waits for something that does not answer (a check thread, a share). Claims
 * waiting for a check slot while other checks end are progress, not a stall; so is anything while
 * Redis is in an episode or left one less than the bound ago (its commands wait for the reconnect).
 */
export function workInProgressCheck(
  what: string,
  track: ProgressTrack,
  stallMs: number,
  isTroubled: (withinMs: number) => boolean,
  recover: () => Promise<void>,
): StallCheck {
  return async (nowMs) => {
    const oldest = track.oldestRunningSince();
    if (oldest === null || nowMs - oldest < stallMs || nowMs - track.lastEndedAt() < stallMs || isTroubled(stallMs)) return null;
    return { what, since: Math.max(oldest, track.lastEndedAt()), recover };
  };
}

/**
 * The workers on the main thread (no delivery thread): a job run lasting past `boundMs` (the bound
 * beyond the run's own bounds), Redis answering all along. Nothing here can end the run: the
 * process exits at the bound, for its supervisor.
 */
export function mainThreadRunCheck(
  oldest: () => { jobId: string; since: number } | null,
  boundMs: number,
  stallMs: number,
  isTroubled: (withinMs: number) => boolean,
): StallCheck {
  return async (nowMs) => {
    const stall = runStall(oldest(), nowMs, boundMs, stallMs, isTroubled);
    return stall === null ? null : { ...stall, recover: async () => {} };
  };
}

/** The oldest run under way, when it has lasted past `boundMs` with Redis answering all along: a stall's what and since. */
function runStall(
  run: { jobId: string; since: number } | null,
  nowMs: number,
  boundMs: number,
  stallMs: number,
  isTroubled: (withinMs: number) => boolean,
): { what: string; since: number } | null {
  if (run === null || nowMs - run.since < boundMs || isTroubled(stallMs)) return null;
  return { what: `a run of job ${run.jobId} does not end`, since: run.since };
}
