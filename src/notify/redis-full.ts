/**
 * Redis full (`redis-full`) and a Redis failover (`redis-failover`), told by the scheduler
 * processes from what their own connection saw (store/redis-health.ts), each message once across
 * all processes.
 *
 * redis-full. While Redis refuses writes, a claim cannot be written (SET NX is refused too), so the
 * claim is a deletion, which a full Redis still takes: a token key waits; when writes are refused,
 * each scheduler DELs it, and the one whose DEL removed it (reply 1) owns the episode and sends
 * "firing". Only the owner writes the token again, after it sent "resolved" (another process
 * seeing writes taken a moment earlier must not hand out a second win in the same episode); a
 * process starting writes it only if it is missing and no episode is under way (SET NX). An owner
 * that dies in between leaves the episode without a resolved message, and the token missing until
 * a scheduler starts.
 *
 * A Redis at its limit flaps, and each process has its own episodes: one process's ends (a
 * deletion freed room) while another's begins. The deployment's episode is their union, so the
 * owner resolves only after a calm hold: when its own episode ends it writes a calm key; every
 * process that sees writes refused deletes it (a deletion is taken), at each check; the owner
 * sends "resolved" once the calm key has lasted the hold. A refusal in the hold, in any process,
 * keeps the episode open (no second "firing": the token is still missing) and starts the hold
 * again.
 *
 * redis-failover. After a failover ends (writes taken again by a new primary), the process that saw
 * it first claims it (SET NX, for a minute: the other processes' ends of the same failover fall in it) and, a settle time later (answers kept through the
 * failover are written by then, and jobs whose owner died are sent again), sends one message: how
 * many answers were recorded after the failover and how many requests were sent again: the
 * deployment's counters (`Keys.answerCounts`) then, less what they were at the last check before it.
 */
import { translator, type Translate } from '../i18n/translate.js';
import type { Logger } from '../log.js';
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import type { RedisEpisode, RedisHealth } from '../store/redis-health.js';
import { durationText } from './loop.js';
import { makeNotification, type Origin } from './message.js';
import type { Sender } from './sender.js';

/** How long after a failover the counts are read for its message, unless told (notify-role.ts: six checks, 30 s by default). */
const FAILOVER_SETTLE_MS = 30_000;
/** A failover's message is claimed for this long: the ends its processes see within it are one failover. */
const FAILOVER_CLAIM_MS = 60_000;
/** How long writes must be taken everywhere before "resolved", unless told (notify-role.ts: two checks, at least 5 s). */
const CALM_HOLD_MS = 10_000;

export interface RedisFullWatch {
  tick(): Promise<void>;
  close(): void;
}

/** What the watch's steps share: where to write, whom to tell, and the episode this process owns. */
interface WatchState {
  redis: RedisConnection;
  keys: Keys;
  health: RedisHealth;
  sender: Sender;
  origin: Origin;
  now: () => number;
  logger: Logger;
  t: Translate;
  token: string;
  calm: string;
  calmHoldMs: number;
  failoverSettleMs: number;
  /** The episode this process sent "firing" for, until it sends "resolved". */
  owned: RedisEpisode | null;
  /** While owning: when this process wrote the calm key (its own episode over), or null. */
  calmSince: number | null;
  /** The refusal episode the last check saw. */
  seen: RedisEpisode | null;
  hasToken: boolean;
  /** The answer counters as last read while Redis was well: the baseline of a failover's message. */
  lastCounts: { late: number; resent: number };
  timers: Set<NodeJS.Timeout>;
}

export function watchRedisFull(
  redis: RedisConnection,
  keys: Keys,
  health: RedisHealth,
  sender: Sender,
  origin: Origin,
  now: () => number,
  logger: Logger,
  options: { failoverSettleMs?: number; calmHoldMs?: number; t?: Translate } = {},
): RedisFullWatch {
  const state: WatchState = {
    ...{ redis, keys, health, sender, origin, now, logger },
    t: options.t ?? translator('en'),
    token: keys.notifyState('redis-full', 'token'),
    calm: keys.notifyState('redis-full', 'calm'),
    calmHoldMs: options.calmHoldMs ?? CALM_HOLD_MS,
    failoverSettleMs: options.failoverSettleMs ?? FAILOVER_SETTLE_MS,
    owned: null,
    calmSince: null,
    seen: null,
    hasToken: false,
    lastCounts: { late: 0, resent: 0 },
    timers: new Set(),
  };
  // One check at a time: a timer's and a health change's never interleave their reads and writes.
  let checking: Promise<void> = Promise.resolve();
  health.onFailoverEnded((failover) => void claimFailover(state, failover));
  return {
    tick: () => (checking = checking.then(() => check(state))),
    close() {
      for (const timer of state.timers) clearTimeout(timer);
    },
  };
}

async function check(state: WatchState): Promise<void> {
  if (state.redis.status !== 'ready') return;
  const refused = state.health.writesRefused();
  try {
    if (refused !== null) await whileRefused(state, refused);
    else await whileTaken(state);
  } catch (error) {
    state.logger.debug({ err: error }, 'redis-full check failed');
  }
}

/** Writes refused: the first check of an episode tries to own it (the token's DEL); every check breaks the calm hold. */
async function whileRefused(state: WatchState, refused: RedisEpisode): Promise<void> {
  const { redis } = state;
  state.calmSince = null;
  if (state.seen === refused) {
    await redis.del(state.calm);
    return;
  }
  state.seen = refused;
  const [tokenDeleted] = await Promise.all([redis.del(state.token), redis.del(state.calm)]);
  if (tokenDeleted !== 1) return;
  state.owned = refused;
  const details = { since: new Date(refused.since).toISOString(), reason: refused.message.split('. script:')[0], action: state.t('notify.redisFull.action') };
  const summary = state.t('notify.redisFull.firing', { code: refused.code });
  state.sender.send(makeNotification(state.origin, 'redis-full', 'firing', summary, details, state.now()));
}

/** Writes taken: the token written at start, the owner's calm hold, then the failover baseline. */
async function whileTaken(state: WatchState): Promise<void> {
  state.seen = null;
  if (!state.hasToken) {
    // At start: a token for the first episode, unless one is under way (another owner holds it).
    // (An owner in its calm hold holds it too: the calm key stands for it.)
    if (state.health.current() === null && (await state.redis.exists(state.calm)) === 0) await state.redis.set(state.token, '1', 'NX');
    state.hasToken = true;
  }
  if (state.owned !== null && !(await isResolvedAfterHold(state, state.owned))) return;
  if (state.health.current() === null) state.lastCounts = await readCounts(state.redis, state.keys);
}

/** The owner's calm hold: false while it lasts (or starts again); true once "resolved" is sent. */
async function isResolvedAfterHold(state: WatchState, episode: RedisEpisode): Promise<boolean> {
  const calmFrom = state.calmSince;
  if (calmFrom === null) {
    await holdFromNow(state);
    return false;
  }
  if (state.now() - calmFrom < state.calmHoldMs) return false;
  // Gone: another process saw writes refused within the hold, so the episode goes on; hold again from now.
  if ((await state.redis.exists(state.calm)) === 0) {
    await holdFromNow(state);
    return false;
  }
  state.calmSince = null;
  state.owned = null;
  const lasted = Math.max(0, calmFrom - episode.since);
  const summary = state.t('notify.redisFull.resolved', { duration: durationText(lasted) });
  const details = { since: new Date(episode.since).toISOString(), lastedSec: Math.round(lasted / 1000) };
  state.sender.send(makeNotification(state.origin, 'redis-full', 'resolved', summary, details, state.now()));
  await state.redis.set(state.token, '1');
  return true;
}

/** The owner's calm hold starts (again). The key expires on its own: an owner that dies in the hold does not keep starting processes from writing the token. */
async function holdFromNow(state: WatchState): Promise<void> {
  await state.redis.set(state.calm, '1', 'PX', 3 * state.calmHoldMs);
  state.calmSince = state.now();
}

/** A failover ended here: the first process to claim it sends its message, a settle time later. */
async function claimFailover(state: WatchState, failover: { at: number; durationMs: number }): Promise<void> {
  try {
    // One claim for every process's end of the same failover: they end seconds apart (each after its own probes), on either side of a minute maybe.
    const claimed = await state.redis.set(state.keys.notifyState('redis-failover', 'claim'), String(process.pid), 'PX', FAILOVER_CLAIM_MS, 'NX');
    if (claimed !== 'OK') return;
    const before = state.lastCounts;
    const timer = setTimeout(() => {
      state.timers.delete(timer);
      void sendFailover(state, failover, before);
    }, state.failoverSettleMs);
    timer.unref();
    state.timers.add(timer);
  } catch (error) {
    state.logger.debug({ err: error }, 'claiming the failover message failed');
  }
}

async function sendFailover(state: WatchState, failover: { at: number; durationMs: number }, before: { late: number; resent: number }): Promise<void> {
  let after: { late: number; resent: number };
  try {
    after = await readCounts(state.redis, state.keys);
  } catch (error) {
    state.logger.debug({ err: error }, 'reading the failover counts failed');
    return;
  }
  const recorded = Math.max(0, after.late - before.late);
  const resent = Math.max(0, after.resent - before.resent);
  const summary = state.t('notify.redisFailover.firing', { duration: durationText(failover.durationMs), recorded, resent });
  const details = { at: new Date(failover.at).toISOString(), durationMs: failover.durationMs, answersRecordedAfter: recorded, sentAgain: resent };
  state.sender.send(makeNotification(state.origin, 'redis-failover', 'firing', summary, details, state.now()));
}

/** The deployment's answer counters: kept answers written late, requests sent again after their owner died. */
export async function readCounts(redis: RedisConnection, keys: Keys): Promise<{ late: number; resent: number }> {
  const [late, resent] = await redis.hmget(keys.answerCounts, 'late', 'resent');
  return { late: Number(late ?? 0), resent: Number(resent ?? 0) };
}
