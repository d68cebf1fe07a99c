/**
 * The lasting conditions, read from the state every process shares (the digests are in
 * `digests.ts`, Redis itself in `redis-watch.ts`). Each check says whether the condition is bad now,
 * how long it must stay bad before it fires, and the words of its firing and resolved messages.
 *
 * - api-key-refused: the 401 gate is closed (`gate/auth-gate.ts`). At once.
 * - backlog-stuck: items waiting (waiting, prioritized, active; delayed only when requests were made
 *   in the period — retries of an unavailable API wait there —, since events dated in the future wait
 *   there on purpose) and none finished (sent, dead-lettered, superseded, duplicate)
 *   for `backlogStuckMinutes`. A 429 pause, a full rate-limit window or a 401 are normal holds: while
 *   one lasts, the clock starts again.
 * - spool-unwatched: a spool that was ever watched has no lease holder for `spoolUnwatchedSec`.
 * - spool-disk-low: the spool's filesystem has less free than `minFreeBytes` or `minFreePercent`.
 * - spool-moves-failing: files of a spool sent (or refused) whose moves to archive/ or failed/ wait
 *   for a retry, or were given up, for `movesFailingMinutes` (the outcome lists in Redis: what the
 *   shipped alert CarrierSyncFileMovesFailing reads). A folder carrier-sync may not write in, a
 *   read-only file system, a share gone: before, only the holder's log, the overview and Prometheus said it.
 */
import { statfs } from 'node:fs/promises';
import type { NotifyConfig } from '../config/schema.js';
import type { Translate } from '../i18n/translate.js';
import { describeAuthFailure } from '../i18n/auth-failure.js';
import type { AuthGate } from '../gate/auth-gate.js';
import { ITEM_KINDS, type ItemKind, type Keys } from '../store/keys.js';
import { createLease } from '../store/lease.js';
import type { RateLimiter } from '../gate/limiter.js';
import type { QueueSet } from '../queue/queues.js';
import type { RedisConnection } from '../store/redis.js';
import type { Stats } from '../store/stats.js';
import { readActivity } from '../store/activity.js';
import { readOutcomeBacklog } from '../queue/outcome-list.js';
import type { Condition } from './message.js';

export interface Words {
  summary: string;
  details: Record<string, unknown>;
}

export interface Observation {
  condition: Condition;
  /** What the condition is about when there can be several (a spool id). */
  subject?: string;
  isBad: boolean;
  forMs: number;
  firing: Words;
  resolved: Words;
}

export interface ConditionSources {
  redis: RedisConnection;
  keys: Keys;
  queues: QueueSet;
  stats: Stats;
  authGate: AuthGate;
  /** The shared limiter of the key in use (429 pause and window), or null when unknown. */
  limiter: RateLimiter | null;
  ratePerMinute: number;
  /** The spool folder as this process sees it, or null (the disk check is then skipped). */
  spoolDir: string | null;
  notify: NotifyConfig;
  /** Words in CARRIER_SYNC_LANG. */
  t: Translate;
}

export async function checkApiKey(sources: ConditionSources): Promise<Observation> {
  const failure = await sources.authGate.failure();
  const details: Record<string, unknown> =
    failure === null
      ? {}
      : { endpoint: failure.endpoint, reason: describeAuthFailure(sources.t, failure), since: failure.at, probesRefused: failure.probes ?? 0 };
  return {
    condition: 'api-key-refused',
    isBad: failure !== null,
    forMs: 0,
    firing: {
      summary: sources.t('notify.apiKey.firing'),
      details: { ...details, action: sources.t('notify.apiKey.action') },
    },
    resolved: { summary: sources.t('notify.apiKey.resolved'), details: {} },
  };
}

const FINISHED = ['sent', 'dead_lettered', 'superseded', 'duplicates'] as const;

export async function checkBacklog(sources: ConditionSources, nowMs: number): Promise<Observation | null> {
  const minutes = sources.notify.backlogStuckMinutes;
  if (minutes === null) return null;
  const { redis, keys } = sources;
  const [stats, countsByKind, failure, pausedForMs, inWindow, activity] = await Promise.all([
    sources.stats.read(),
    Promise.all(
      ITEM_KINDS.map(
        async (kind) => [kind, await sources.queues.items[kind].getJobCounts('waiting', 'prioritized', 'waiting-children', 'active', 'delayed')] as const,
      ),
    ),
    sources.authGate.failure(),
    sources.limiter?.pausedForMs() ?? 0,
    sources.limiter?.inWindow() ?? 0,
    readActivity(redis, keys, nowMs, minutes),
  ]);
  // Delayed items count when requests were made in the period: items retried through an API that is
  // unavailable wait there between tries (an outage then fires this, where nothing finishes). Without
  // requests, what is delayed is events dated in the future, which wait there on purpose.
  const isRequesting = activity.some((minute) => (minute.fields['requests'] ?? 0) > 0);
  const waitingByKind = countsByKind.map(
    ([kind, { delayed = 0, ...counts }]) => [kind, Object.values(counts).reduce((sum, n) => sum + n, 0) + (isRequesting ? delayed : 0)] as const,
  );
  const finished = FINISHED.reduce((sum, counter) => sum + ITEM_KINDS.reduce((s, kind) => s + stats[counter][kind], 0), 0);
  const waiting = Object.fromEntries(waitingByKind) as Record<ItemKind, number>;
  const total = Object.values(waiting).reduce((sum, n) => sum + n, 0);
  const isHeld = failure !== null || pausedForMs > 0 || inWindow >= sources.ratePerMinute;
  const last = await redis.hgetall(keys.notifyProgress);
  let progressAtMs = Number(last['at'] ?? nowMs);
  // The clock restarts on progress, when nothing waits, and during a normal hold.
  if (last['finished'] !== String(finished) || total === 0 || isHeld || last['at'] === undefined) {
    progressAtMs = nowMs;
    await redis.hset(keys.notifyProgress, 'finished', String(finished), 'at', String(nowMs));
  }
  const stuckMs = nowMs - progressAtMs;
  return {
    condition: 'backlog-stuck',
    isBad: total > 0 && stuckMs >= minutes * 60_000,
    forMs: 0,
    firing: {
      summary: sources.t('notify.backlog.firing', { total, minutes: Math.round(stuckMs / 60_000) }),
      details: {
        waiting,
        lastProgressAt: new Date(progressAtMs).toISOString(),
        action: sources.t('notify.backlog.action'),
      },
    },
    resolved: { summary: sources.t(total === 0 ? 'notify.backlog.cleared' : 'notify.backlog.moving'), details: { waiting } },
  };
}

export async function checkSpools(sources: ConditionSources): Promise<Observation[]> {
  const seconds = sources.notify.spoolUnwatchedSec;
  if (seconds === null) return [];
  const { redis, keys } = sources;
  const ids = (await redis.smembers(keys.spools)).sort();
  return Promise.all(
    ids.map(async (spoolId): Promise<Observation> => {
      const holder = await createLease(redis, keys.spoolLease(spoolId)).read();
      return {
        condition: 'spool-unwatched',
        subject: spoolId,
        isBad: holder === null,
        forMs: seconds * 1000,
        firing: {
          summary: sources.t('notify.spool.firing', { spool: spoolId }),
          details: { spoolId, action: sources.t('notify.spool.action') },
        },
        resolved: {
          summary: sources.t('notify.spool.resolved', { spool: spoolId }),
          details: holder === null ? { spoolId } : { spoolId, host: holder.host, pid: holder.pid },
        },
      };
    }),
  );
}

export async function checkMoves(sources: ConditionSources): Promise<Observation[]> {
  const minutes = sources.notify.movesFailingMinutes;
  if (minutes === null) return [];
  const backlog = await readOutcomeBacklog(sources.redis, sources.keys);
  return backlog.map(({ spoolId, retrying, failed }): Observation => {
    const details = { spoolId, retrying, failed };
    return {
      condition: 'spool-moves-failing',
      subject: spoolId,
      isBad: retrying + failed > 0,
      forMs: minutes * 60_000,
      firing: {
        summary: sources.t('notify.moves.firing', { spool: spoolId, files: retrying + failed, minutes }),
        details: { ...details, action: sources.t('notify.moves.action') },
      },
      resolved: { summary: sources.t('notify.moves.resolved', { spool: spoolId }), details },
    };
  });
}

export async function checkDisk(sources: ConditionSources): Promise<Observation | null> {
  const bounds = sources.notify.diskLow;
  if (bounds === null || sources.spoolDir === null) return null;
  let stats;
  try {
    stats = await statfs(sources.spoolDir);
  } catch {
    return null; // not mounted on this host (a scheduler away from the spool): nothing to say
  }
  const freeBytes = stats.bavail * stats.bsize;
  const sizeBytes = stats.blocks * stats.bsize;
  const freePercent = sizeBytes === 0 ? 100 : (freeBytes / sizeBytes) * 100;
  const details = {
    dir: sources.spoolDir,
    freeBytes,
    freePercent: Math.round(freePercent * 10) / 10,
    minFreeBytes: bounds.minFreeBytes,
    minFreePercent: bounds.minFreePercent,
  };
  return {
    condition: 'spool-disk-low',
    isBad: freeBytes < bounds.minFreeBytes || freePercent < bounds.minFreePercent,
    forMs: 0,
    firing: {
      summary: sources.t('notify.disk.firing', { free: formatBytes(freeBytes), percent: details.freePercent }),
      details: { ...details, action: sources.t('notify.disk.action') },
    },
    resolved: { summary: sources.t('notify.disk.resolved', { free: formatBytes(freeBytes), percent: details.freePercent }), details },
  };
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 && unit > 0 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}
