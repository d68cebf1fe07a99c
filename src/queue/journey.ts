/**
 * The journey of each item: one record per step (seen, claimed, refused, queued, attempt, answer,
 * superseded, accepted, dead-lettered, replayed, archived, failed…), written by whichever process
 * did the step, read by `carrier-sync history` and the overview (journey-read.ts).
 *
 * Key layout (README, "Where is delivery X?"):
 *  - `journey:<delivery id>` — a list of compact JSON steps, oldest first (`StoredStep`: short field
 *    names, no delivery id, the time in epoch ms). Every write sets its expiry to the retention, so
 *    a delivery's journey lives a retention after its last step: trimmed by time without a scan.
 *  - `journey-day:<epoch day>` — a sorted set of the deliveries with a step that day, scored by
 *    their latest step, for `--since/--until`; expires a retention after the day ends.
 *  - `journey-files:<epoch day>` — `<file name>\n<delivery id>` members (score 0, read by lex
 *    range) of the files seen that day; `journey-sha:<epoch day>` — `<sha256 16 hex>\n<file name>`.
 *    Same expiry as the day's set.
 *
 * Writes ride on round trips that exist already: the push gate's scripts (`JOURNEY_LUA`), the
 * claim's pipelines (`appendSteps`), the outcome's file moves (`createJourneyWriter`: one
 * pipelined write per batch of steps). A step is written only once the thing it tells happened
 * (or, for an attempt, once the request is about to leave: its answer is a step of its own, so an
 * attempt without an answer reads as "no answer recorded"). Nothing secret is kept: files are
 * named by name and hash, never their bytes; API keys never reach a step.
 */
import type { ChainableCommander } from 'ioredis';
import { hostname } from 'node:os';
import type { ItemKind, Keys } from './keys.js';
import type { RedisConnection } from './redis.js';

export const DAY_MS = 86_400_000;

/** A step as stored: short field names (README lists them), the delivery id in the key's name. */
export interface StoredStep {
  /** Epoch ms; set by the writer (Lua: Redis' clock). */
  t?: number;
  /** Kind: l label, c CT-e, e collecting. */
  k: 'l' | 'c' | 'e';
  /** The step's name. */
  s: string;
  /** File name; `h` its sha256 (hex; 16 hex beyond the `seen` step), `z` its size, `m` its mtime (ms). */
  f?: string;
  h?: string;
  z?: number;
  m?: number;
  /** `host/pid` of the process that did the step. */
  w?: string;
  /** Generation (document order) of a queued document. */
  g?: string;
  /** Our error code and its message / reason. */
  c?: string;
  r?: string;
  /** Attempt number and the attempt's id (joins an attempt's start to its answer). */
  n?: number;
  a?: string;
  /** HTTP status, the API's code, the request's duration (ms). */
  st?: number;
  ac?: string;
  ms?: number;
  /** event_at as received; where the event came from (file, http, cli, pull, backfill) and its line. */
  e?: string;
  src?: string;
  l?: number;
  /** Duplicate of which earlier record (its source id). */
  o?: string;
  /** Held until (epoch ms). */
  d?: number;
  /** Where the file went (archive/failed path, relative to the spool). */
  to?: string;
  /** Replayed by whom: cli, ui, re-drop. */
  by?: string;
}

export const KIND_CODE: Readonly<Record<ItemKind, StoredStep['k']>> = { label: 'l', cte: 'c', collecting: 'e' };
export const KIND_OF_CODE: Readonly<Record<StoredStep['k'], ItemKind>> = { l: 'label', c: 'cte', e: 'collecting' };

/** This process, as steps name it: the host's short name and the pid. */
export const SELF = `${hostname().split('.')[0] ?? 'host'}/${process.pid}`;

/** Messages are kept short: a step is a line of a timeline, not a copy of the response. */
const MAX_TEXT = 160;

export function stepJson(step: StoredStep): string {
  return JSON.stringify(step.r !== undefined && step.r.length > MAX_TEXT ? { ...step, r: `${step.r.slice(0, MAX_TEXT - 1)}…` } : step);
}

export function epochDayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

// `journal(key, dayStem, deliveryId, ttlSec, step)`: appends `step` (a JSON object without `t`) to
// the delivery's journey with Redis' time (needs `nowMs` from limiter.ts' RATE_WINDOW_LUA), renews
// its expiry and marks the delivery in the day's set. A '' step records nothing.
export const JOURNEY_LUA = `
local function journal(key, dayStem, deliveryId, ttlSec, step)
  if step == nil or step == '' then return end
  local now = nowMs()
  redis.call('RPUSH', key, '{"t":' .. string.format('%d', now) .. ',' .. string.sub(step, 2))
  redis.call('EXPIRE', key, ttlSec)
  local day = math.floor(now / ${DAY_MS})
  redis.call('ZADD', dayStem .. day, now, deliveryId)
  redis.call('EXPIREAT', dayStem .. day, (day + 1) * ${DAY_MS / 1000} + tonumber(ttlSec))
end
`;

/** The first four arguments of `journal` for one delivery. */
export function journalArgs(keys: Keys, deliveryId: string, ttlSec: number): [string, string, string, number] {
  return [keys.journey(deliveryId), keys.journeyDayStem, deliveryId, ttlSec];
}

export interface JourneyEntry {
  deliveryId: string;
  step: StoredStep;
  /** Index the file the step names (by name and hash) for `--file` / `--sha256`. */
  file?: { name: string; sha256: string };
}

/** Appends the entries' writes to `chain` (one round trip with the caller's own commands). */
export function appendSteps(chain: ChainableCommander, keys: Keys, ttlSec: number, entries: readonly JourneyEntry[], nowMs: number): ChainableCommander {
  const day = epochDayOf(nowMs);
  const dayKey = `${keys.journeyDayStem}${day}`;
  const dayExpiresAt = (day + 1) * (DAY_MS / 1000) + ttlSec;
  const touched = new Map<string, number>();
  for (const { deliveryId, step, file } of entries) {
    const key = keys.journey(deliveryId);
    chain.rpush(key, stepJson({ t: nowMs, ...step }));
    touched.set(deliveryId, nowMs);
    if (file !== undefined) {
      chain.zadd(keys.journeyFiles(day), 0, `${file.name}\n${deliveryId}`);
      chain.zadd(keys.journeyHashes(day), 0, `${file.sha256.slice(0, 16)}\n${file.name}`);
    }
  }
  if (touched.size === 0) return chain;
  for (const deliveryId of touched.keys()) chain.expire(keys.journey(deliveryId), ttlSec);
  chain.zadd(dayKey, ...[...touched].flatMap(([deliveryId, at]) => [at, deliveryId]));
  chain.expireat(dayKey, dayExpiresAt);
  if (entries.some((entry) => entry.file !== undefined)) {
    chain.expireat(keys.journeyFiles(day), dayExpiresAt);
    chain.expireat(keys.journeyHashes(day), dayExpiresAt);
  }
  return chain;
}

export interface JourneyWriter {
  /** Records steps; they leave with the next batch (within the event loop's next turn). */
  add(...entries: JourneyEntry[]): void;
  /** Resolves once every step added so far was written (or failed: a journey is never worth an error). */
  flush(): Promise<void>;
}

/**
 * Buffers steps and writes each batch in one pipeline: for the places that have no round trip of
 * their own to ride on (file moves, replays). A failed write is reported to `onError` and dropped.
 */
export function createJourneyWriter(redis: RedisConnection, keys: Keys, ttlSec: number, now: () => number, onError: (error: unknown) => void): JourneyWriter {
  let pending: JourneyEntry[] = [];
  let inFlight: Promise<void> = Promise.resolve();
  let isScheduled = false;
  const send = (): Promise<void> => {
    isScheduled = false;
    if (pending.length === 0) return inFlight;
    const batch = pending;
    pending = [];
    const write = appendSteps(redis.pipeline(), keys, ttlSec, batch, now())
      .exec()
      .then(
        () => undefined,
        (error: unknown) => onError(error),
      );
    inFlight = Promise.all([inFlight, write]).then(() => undefined);
    return inFlight;
  };
  return {
    add(...entries) {
      pending.push(...entries);
      if (!isScheduled) {
        isScheduled = true;
        setImmediate(() => void send());
      }
    },
    flush: send,
  };
}

/** The retention in seconds from the configured days. */
export function historyTtlSec(retentionDays: number): number {
  return retentionDays * 86_400;
}
