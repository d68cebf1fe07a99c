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
  const t = options.t ?? translator('en');
  const token = keys.notifyState('redis-full', 'token');
  const calm = keys.notifyState('redis-full', 'calm');
  const calmHoldMs = options.calmHoldMs ?? CALM_HOLD_MS;
  let owned: RedisEpisode | null = null;
  /** While owning: when this process wrote the calm key (its own episode over), or null. */
  let calmSince: number | null = null;
  let seen: RedisEpisode | null = null;
  let hasToken = false;
  /** The answer counters as last read while Redis was well: the baseline of a failover's message. */
  let lastCounts = { late: 0, resent: 0 };
  const timers = new Set<NodeJS.Timeout>();

  /** The owner's calm hold starts (again). The key expires on its own: an owner that dies in the hold does not keep starting processes from writing the token. */
  const holdFromNow = async (): Promise<void> => {
    await redis.set(calm, '1', 'PX', 3 * calmHoldMs);
    calmSince = now();
  };

  // One check at a time: a timer's and a health change's never interleave their reads and writes.
  let checking: Promise<void> = Promise.resolve();
  const tick = (): Promise<void> => (checking = checking.then(check));

  const check = async (): Promise<void> => {
    if (redis.status !== 'ready') return;
    const refused = health.writesRefused();
    try {
      if (refused !== null) {
        calmSince = null;
        if (seen === refused) {
          await redis.del(calm);
          return;
        }
        seen = refused;
        const [tokenDeleted] = await Promise.all([redis.del(token), redis.del(calm)]);
        if (tokenDeleted === 1) {
          owned = refused;
          sender.send(
            makeNotification(
              origin,
              'redis-full',
              'firing',
              t('notify.redisFull.firing', { code: refused.code }),
              {
                since: new Date(refused.since).toISOString(),
                reason: refused.message.split('. script:')[0],
                action: t('notify.redisFull.action'),
              },
              now(),
            ),
          );
        }
        return;
      }
      seen = null;
      if (!hasToken) {
        // At start: a token for the first episode, unless one is under way (another owner holds it).
        // (An owner in its calm hold holds it too: the calm key stands for it.)
        if (health.current() === null && (await redis.exists(calm)) === 0) await redis.set(token, '1', 'NX');
        hasToken = true;
      }
      if (owned !== null) {
        if (calmSince === null) {
          await holdFromNow();
          return;
        }
        if (now() - calmSince < calmHoldMs) return;
        const calmFrom = calmSince;
        // Gone: another process saw writes refused within the hold, so the episode goes on; hold again from now.
        if ((await redis.exists(calm)) === 0) {
          await holdFromNow();
          return;
        }
        calmSince = null;
        const episode = owned;
        const lasted = Math.max(0, calmFrom - episode.since);
        owned = null;
        sender.send(
          makeNotification(
            origin,
            'redis-full',
            'resolved',
            t('notify.redisFull.resolved', { duration: durationText(lasted) }),
            { since: new Date(episode.since).toISOString(), lastedSec: Math.round(lasted / 1000) },
            now(),
          ),
        );
        await redis.set(token, '1');
      }
      if (health.current() === null) lastCounts = await readCounts(redis, keys);
    } catch (error) {
      logger.debug({ err: error }, 'redis-full check failed');
    }
  };

  health.onFailoverEnded((failover) => {
    void (async () => {
      try {
        // One claim for every process's end of the same failover: they end seconds apart (each after its own probes), on either side of a minute maybe.
        const claimed = await redis.set(keys.notifyState('redis-failover', 'claim'), String(process.pid), 'PX', FAILOVER_CLAIM_MS, 'NX');
        if (claimed !== 'OK') return;
        const before = lastCounts;
        const timer = setTimeout(() => {
          timers.delete(timer);
          void readCounts(redis, keys).then(
            (after) => {
              const recorded = Math.max(0, after.late - before.late);
              const resent = Math.max(0, after.resent - before.resent);
              sender.send(
                makeNotification(
                  origin,
                  'redis-failover',
                  'firing',
                  t('notify.redisFailover.firing', { duration: durationText(failover.durationMs), recorded, resent }),
                  { at: new Date(failover.at).toISOString(), durationMs: failover.durationMs, answersRecordedAfter: recorded, sentAgain: resent },
                  now(),
                ),
              );
            },
            (error: unknown) => logger.debug({ err: error }, 'reading the failover counts failed'),
          );
        }, options.failoverSettleMs ?? FAILOVER_SETTLE_MS);
        timer.unref();
        timers.add(timer);
      } catch (error) {
        logger.debug({ err: error }, 'claiming the failover message failed');
      }
    })();
  });

  return {
    tick,
    close() {
      for (const timer of timers) clearTimeout(timer);
    },
  };
}

/** The deployment's answer counters: kept answers written late, requests sent again after their owner died. */
export async function readCounts(redis: RedisConnection, keys: Keys): Promise<{ late: number; resent: number }> {
  const [late, resent] = await redis.hmget(keys.answerCounts, 'late', 'resent');
  return { late: Number(late ?? 0), resent: Number(resent ?? 0) };
}
