/**
 * What happened minute by minute, for the overview page's chart: one hash per epoch minute
 * (`keys.activity(minute)`) whose fields are `requests` (a slot of the API's limit taken), the
 * stats counters (`sent`, `rate_limited`, `dead_lettered`, …), `refused` and `refused:<code>`.
 * Every process adds to the same hashes, so every `/ui` shows the deployment's numbers. A bucket
 * expires ACTIVITY_TTL_SEC after its minute began: nothing is ever swept.
 *
 * Files refused locally never become jobs, so nothing else in Redis remembers them: the watcher
 * also keeps a running count by code and the latest REFUSALS_KEPT refusals (file, code, reason).
 *
 * Each writer appends its commands to a pipeline or MULTI the caller runs (`add…`: one round trip
 * with the caller's own commands); `countActivity` also runs on its own.
 */
import type { StoredReason } from '../errors.js';
import type { ChainableCommander } from 'ioredis';
import type { Keys } from './keys.js';
import type { RedisConnection } from './redis.js';
import type { Counter } from './stats.js';

export const ACTIVITY_TTL_SEC = 2 * 60 * 60;
export const REFUSALS_KEPT = 20;
/** A refusal's reason is cut to this many characters (it is for a table cell). */
const REASON_MAX_CHARS = 300;

export type ActivityField = 'requests' | 'refused' | Counter | `refused:${string}`;

/**
 * The same count in Lua, for scripts that write it in their own round trip (the push gate):
 * `countActivity(stem, atMs, field, by, ttlSec)` with `keys.activityStem`. The EXPIRE goes only
 * with a field's first count (issue 46: one command less an item): a bucket is only ever created
 * by a first count, which sets its expiry, and every later count finds it set.
 */
export const ACTIVITY_LUA = `
local function countActivity(stem, atMs, field, by, ttlSec)
  local bucket = stem .. math.floor(atMs / 60000)
  if redis.call('HINCRBY', bucket, field, by) == tonumber(by) then redis.call('EXPIRE', bucket, ttlSec) end
end
`;

export function epochMinuteOf(atMs: number): number {
  return Math.floor(atMs / 60_000);
}

/** Appends HINCRBY + EXPIRE of `field` in the bucket of `atMs` to `chain`, and returns it. */
export function addActivity(chain: ChainableCommander, keys: Keys, field: ActivityField, atMs: number, by = 1): ChainableCommander {
  const key = keys.activity(epochMinuteOf(atMs));
  return chain.hincrby(key, field, by).expire(key, ACTIVITY_TTL_SEC);
}

export async function countActivity(redis: RedisConnection, keys: Keys, field: ActivityField, atMs: number, by = 1): Promise<void> {
  await addActivity(redis.multi(), keys, field, atMs, by).exec();
}

export interface Refusal {
  /** ISO time of the refusal. */
  at: string;
  /** Spool kind: labels, cte, events. */
  kind: string;
  /** The file's name in failed/<kind>/ (`…~2.pdf` when a file of its name was there already). */
  file: string;
  /** The name it was dropped under, when it differs (the journey knows it by this one). */
  droppedAs?: string;
  code: string;
  /** The English reason (as in logs and `.error.json` `message`). */
  reason: string;
  /** Its key and values, so the overview shows it in the reader's language. */
  reasonSource?: StoredReason | undefined;
  /** Set on a file that was archived with this many lines refused (`addRefusalNote`), not refused itself. */
  lines?: number;
}

/** Appends the refusal's counters (per minute and in all) and its place in the latest list to `chain`. */
export function addRefusal(chain: ChainableCommander, keys: Keys, refusal: Refusal, atMs: number): ChainableCommander {
  const kept: Refusal = { ...refusal, reason: refusal.reason.length > REASON_MAX_CHARS ? `${refusal.reason.slice(0, REASON_MAX_CHARS - 1)}…` : refusal.reason };
  addActivity(chain, keys, 'refused', atMs);
  addActivity(chain, keys, `refused:${refusal.code}`, atMs);
  return chain
    .hincrby(keys.refusalCounts, refusal.code, 1)
    .lpush(keys.refusalLatest, JSON.stringify(kept))
    .ltrim(keys.refusalLatest, 0, REFUSALS_KEPT - 1);
}

/**
 * A file that was not refused but had lines refused (an events file with invalid lines): shown in
 * the overview's latest refusals, without counting as a refused file (its lines are counted as
 * failed items where they are read).
 */
export function addRefusalNote(chain: ChainableCommander, keys: Keys, refusal: Refusal & { lines: number }): ChainableCommander {
  const kept: Refusal = { ...refusal, reason: refusal.reason.length > REASON_MAX_CHARS ? `${refusal.reason.slice(0, REASON_MAX_CHARS - 1)}…` : refusal.reason };
  return chain
    .incr(keys.refusalLineFiles)
    .lpush(keys.refusalLatest, JSON.stringify(kept))
    .ltrim(keys.refusalLatest, 0, REFUSALS_KEPT - 1);
}

export interface ActivityMinute {
  /** Epoch seconds of the minute's start. */
  at: number;
  fields: Record<string, number>;
}

/** The last `minutes` buckets, oldest first, ending with the minute of `nowMs` (empty ones included). */
export async function readActivity(redis: RedisConnection, keys: Keys, nowMs: number, minutes: number): Promise<ActivityMinute[]> {
  const last = epochMinuteOf(nowMs);
  const wanted = Array.from({ length: minutes }, (_, i) => last - minutes + 1 + i);
  const pipeline = redis.pipeline();
  for (const minute of wanted) pipeline.hgetall(keys.activity(minute));
  const replies = (await pipeline.exec()) ?? [];
  return wanted.map((minute, i) => {
    const [error, raw] = replies[i] ?? [null, {}];
    if (error !== null) throw error;
    const fields: Record<string, number> = {};
    for (const [field, value] of Object.entries((raw ?? {}) as Record<string, string>)) fields[field] = Number(value);
    return { at: minute * 60, fields };
  });
}

export interface RefusalSummary {
  /** Every refusal the watcher recorded, by error code. */
  counts: Record<string, number>;
  /** Newest first. */
  latest: Refusal[];
  /** Events files archived with some lines refused (shown in `latest` with `lines`, not counted in `counts`). */
  lineFiles: number;
}

export async function readRefusals(redis: RedisConnection, keys: Keys): Promise<RefusalSummary> {
  const [rawCounts, rawLatest, rawLineFiles] = await Promise.all([
    redis.hgetall(keys.refusalCounts),
    redis.lrange(keys.refusalLatest, 0, REFUSALS_KEPT - 1),
    redis.get(keys.refusalLineFiles),
  ]);
  const counts: Record<string, number> = {};
  for (const [code, value] of Object.entries(rawCounts)) counts[code] = Number(value);
  const latest: Refusal[] = [];
  for (const line of rawLatest) {
    try {
      latest.push(JSON.parse(line) as Refusal);
    } catch {
      // An entry that is not JSON was not written by us: skip it rather than fail the page.
    }
  }
  return { counts, latest, lineFiles: Number(rawLineFiles ?? 0) };
}
