/**
 * The journey of each item: one record per step (seen, claimed, refused, queued, attempt, answer,
 * superseded, accepted, dead-lettered, replayed, archived, failed…), written by whichever process
 * did the step, read by `carrier-sync history` and the overview (journey-read.ts).
 *
 * Key layout (docs/internals.md, "Redis keys"):
 *  - `journey:<epoch day>` — one hash per UTC day: field = delivery id, value = that day's steps of
 *    the delivery, compact JSON records (`StoredStep`: short field names, no delivery id, the time
 *    in epoch ms) joined by newlines, oldest first. It expires a retention after the day ends:
 *    trimmed by time without a scan. One field per delivery and day instead of a key per delivery:
 *    a key costs Redis ~200 bytes of bookkeeping however small its value (measured: 209 bytes a
 *    step with a list per delivery, against ~120 this way; test/bench/scenarios/history.ts).
 *  - `journey-files:<epoch day>:<shard>` — file name → delivery id (score 0, read by lex range)
 *    of the files seen that day whose name does not carry their delivery id (events files, odd
 *    names); `journey-sha:<epoch day>:<shard>` — sha256 → file name. Same expiry. Up to 4,096
 *    shards a day, each small enough to stay a listpack (`fileIndexEntry`, `shaIndexEntry`).
 *
 * Writes ride on round trips that exist already: the push gate's scripts (`JOURNEY_LUA`), the
 * claim's pipelines (`appendSteps`), the outcome's file moves (`createJourneyWriter`: one
 * pipelined write per batch of steps). A step is written only once the thing it tells happened
 * (or, for an attempt, once the request is about to leave: its answer is a step of its own, so an
 * attempt without an answer reads as "no answer recorded"). Nothing secret is kept: files are
 * named by name and hash, never their bytes; API keys never reach a step.
 */
import type { StoredReason } from '../errors.js';
import type { ChainableCommander } from 'ioredis';
import { hash } from 'node:crypto';
import { hostname } from 'node:os';
import { fnv1a32, type ItemKind, type Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';

export const DAY_MS = 86_400_000;

/** A step as stored: short field names (docs/internals.md lists them), the delivery id in the key's name. */
export interface StoredStep {
  /**
   * Set by the writer (Lua: Redis' clock): ms since the start of the step's UTC day (its key's
   * day), 5 bytes shorter than epoch ms; the reader makes it epoch ms again (`absoluteStepLine`).
   * Steps written before this change hold epoch ms, and are read as they are.
   */
  t?: number;
  /** Kind: l label, c CT-e, e collecting, w a webhook registration (`webhook:<id>`). */
  k: 'l' | 'c' | 'e' | 'w';
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
  /** A refusal's reason key and values, so the history shows it in the reader's language. */
  rk?: StoredReason;
  /** Attempt number and the attempt's id (joins an attempt's start to its answer). */
  n?: number;
  a?: string;
  /** The attempt's trace id (tracing on): its CONSUMER span's trace, which holds the API request. */
  tr?: string;
  /** HTTP status, the API's code, the request's duration (ms). */
  st?: number;
  ac?: string;
  ms?: number;
  /** event_at as received (received and duplicate steps); `i` the instant's short ref (`eventRef`), on every event step. */
  e?: string;
  i?: string;
  /** Where the event came from (file, POST /events, enqueue, pull, backfill) and its line. */
  src?: string;
  l?: number;
  /** Duplicate of which earlier record (its source id). */
  o?: string;
  /** Held until (epoch ms). */
  d?: number;
  /** Where the file went (archive/failed path, relative to the spool). */
  to?: string;
  /** Replayed by whom: cli, ui, re-drop; a webhook set by: cli, reconcile. */
  by?: string;
  /** What was sent (a webhook registration, without header values). */
  x?: string;
  /** A label's padding bytes after %%EOF, not sent (on its seen record; the valid step tells it). */
  p?: number;
}

export const KIND_CODE: Readonly<Record<ItemKind, StoredStep['k']>> = { label: 'l', cte: 'c', collecting: 'e' };
export type JourneyKind = ItemKind | 'webhook';
export const KIND_OF_CODE: Readonly<Record<StoredStep['k'], JourneyKind>> = { l: 'label', c: 'cte', e: 'collecting', w: 'webhook' };

/** This process, as steps name it: the host's short name and the pid. */
export const SELF = `${hostname().split('.')[0] ?? 'host'}/${process.pid}`;

/** Messages are kept short: a step is a line of a timeline, not a copy of the response. */
const MAX_TEXT = 160;

export function stepJson(step: StoredStep): string {
  return JSON.stringify(step.r !== undefined && step.r.length > MAX_TEXT ? { ...step, r: `${step.r.slice(0, MAX_TEXT - 1)}…` } : step);
}

/** An event's short ref in its delivery's journey: 6 hex of its instant's hash (the later steps name it by this). */
export function eventRef(instantKey: string): string {
  return hash('sha256', instantKey, 'hex').slice(0, 6);
}

/** The delivery id a spool file name carries (`<id>.pdf`, `<id>__<external id>.pdf`), or null for other names. */
export function deliveryOfName(fileName: string): string | null {
  const cut = fileName.indexOf('__');
  const stem = cut > 0 ? fileName.slice(0, cut) : fileName.slice(0, Math.max(0, fileName.lastIndexOf('.')));
  return stem === '' ? null : stem;
}

export function epochDayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

const DAY_TIME = /^\{"t":(\d+),/;

/** A stored line of the day `day` with its time as epoch ms (a time within the day is made whole). */
export function absoluteStepLine(line: string, day: number): string {
  const match = DAY_TIME.exec(line);
  if (match === null) return line;
  const t = Number(match[1]);
  return t >= DAY_MS ? line : `{"t":${day * DAY_MS + t},${line.slice(match[0].length)}`;
}

// `journal(dayStem, deliveryId, ttlSec, ...)`: appends the steps given (JSON objects without `t`;
// '' or nil ones record nothing) to the delivery's steps of the day, in one read and one write,
// with Redis' time (`nowMs` from limiter.ts' CLOCK_LUA: one TIME per script call). The day's
// hash is named here from that time (`dayStem .. day`): on Redis Cluster it shares the
// deployment's hash slot through the prefix's hash tag, as the document record's buckets do. Its
// expiry is a function of the day alone, so it is set with the day's first step of a delivery
// (every later append finds it set).
export const JOURNEY_LUA = `
local function journal(dayStem, deliveryId, ttlSec, ...)
  local entries = nil
  for _, step in ipairs({...}) do
    if step ~= '' then
      local entry = '{"t":' .. string.format('%d', nowMs() % ${DAY_MS}) .. ',' .. string.sub(step, 2)
      entries = entries and (entries .. '\\n' .. entry) or entry
    end
  end
  if entries == nil then return end
  local day = math.floor(nowMs() / ${DAY_MS})
  local key = dayStem .. day
  local before = redis.call('HGET', key, deliveryId)
  redis.call('HSET', key, deliveryId, before and (before .. '\\n' .. entries) or entries)
  if not before then redis.call('EXPIREAT', key, (day + 1) * ${DAY_MS / 1000} + tonumber(ttlSec)) end
end
`;

// `journeyAppend(k, n, verdicts)`: the journey's writes of one claim (`journeyAppendCall` builds
// its keys and arguments). KEYS from `k`: the day's journey hash, then the file indexes' keys
// written (to the end of KEYS). ARGV from `n`: 1 their expiry (epoch s), 2 the number of steps,
// then per step: its condition (two arguments), delivery id, step (complete JSON, with its time);
// then for each index key, its number of members and per member: the member, its number of
// conditions and the conditions. Appends each step whose condition holds to its delivery's steps
// of the day, adds the members (score 0) with a condition that holds, and sets the expiry of each
// key written. A condition is an item and the verdicts it needs: item 0 always holds, else
// `verdicts[item]` (one character, the caller's script decides it: the claim scripts of
// queue/claim-scripts.ts, where a step is written only for the claim it tells) must be one of them.
export const JOURNEY_APPEND_LUA = `
local function journeyHolds(verdicts, item, allowed)
  item = tonumber(item)
  return item == 0 or string.find(allowed, verdicts[item], 1, true) ~= nil
end
local function journeyAppend(k, n, verdicts)
  local key, expireAt, steps = KEYS[k], ARGV[n], tonumber(ARGV[n + 1])
  n = n + 2
  local written = false
  for _ = 1, steps do
    if journeyHolds(verdicts, ARGV[n], ARGV[n + 1]) then
      local deliveryId, entry = ARGV[n + 2], ARGV[n + 3]
      local before = redis.call('HGET', key, deliveryId)
      redis.call('HSET', key, deliveryId, before and (before .. '\\n' .. entry) or entry)
      written = true
    end
    n = n + 4
  end
  if written then redis.call('EXPIREAT', key, expireAt) end
  for i = k + 1, #KEYS do
    local count = tonumber(ARGV[n])
    n = n + 1
    local args = {}
    local added = false
    for m = 1, count do
      local member, conditions = ARGV[n], tonumber(ARGV[n + 1])
      local holds = conditions == 0
      for c = 1, conditions do
        holds = holds or journeyHolds(verdicts, ARGV[n + 2 * c], ARGV[n + 2 * c + 1])
      end
      n = n + 2 + 2 * conditions
      if holds then
        args[#args + 1] = 0
        args[#args + 1] = member
      end
      if #args > 0 and (#args == 1000 or m == count) then
        redis.call('ZADD', KEYS[i], unpack(args))
        args = {}
        added = true
      end
    end
    if added then redis.call('EXPIREAT', KEYS[i], expireAt) end
  end
  return n
end
`;

// KEYS and ARGV: `journeyAppend`'s (above) from the first, every step and member unconditional.
// Returns 1.
const APPEND_STEPS = defineScript(
  'journeyAppend',
  `${JOURNEY_APPEND_LUA}
journeyAppend(1, 1, {})
return 1
`,
);

/**
 * The file indexes (`--file`, `--sha256`): per day, up to 4,096 small sorted sets each (3 hex
 * digits) instead of one big one. A sorted set of at most 128 members of at most 64 bytes is one
 * listpack (Redis' defaults), ~60 bytes a member; past that it is a skiplist, ~150. Only shards
 * written exist (a key costs ~100 bytes), so a quiet day costs what one set did, and a day of up
 * to ~500,000 files stays compact; beyond, a shard is no worse than the one set was. Members are
 * read by lex range (`<lookup>\n…`).
 *  - file name → delivery, for names that do not carry their delivery id (events files, odd
 *    names): shard and member from the name's FNV-1a hash (`<8 hex>\n<delivery id>`, 45 bytes
 *    for a UUID): a long name stays short. Two names of one hash only cost a journey read more
 *    (the reader keeps the steps of the file asked for).
 *  - sha256 → file name: shard = its first 3 hex, member = its hex 4–16 and the name.
 */
export function fileIndexEntry(fileName: string, deliveryId: string): { shard: string; member: string } {
  const hash = fnv1a(fileName);
  return { shard: hash.slice(0, 3), member: `${hash}\n${deliveryId}` };
}

export function shaIndexEntry(sha256: string, fileName: string): { shard: string; member: string } {
  return { shard: sha256.slice(0, 3), member: `${sha256.slice(3, 16)}\n${fileName}` };
}

/** 32-bit FNV-1a of a string, as 8 hex. */
export function fnv1a(text: string): string {
  return fnv1a32(text).toString(16).padStart(8, '0');
}

/** Call before making a pipeline or MULTI that `appendSteps` will write into. */
export function prepareJourney(redis: RedisConnection): void {
  APPEND_STEPS.define(redis);
}

/** The first three arguments of `journal` for one delivery. */
export function journalArgs(keys: Keys, deliveryId: string, ttlSec: number): [string, string, number] {
  return [keys.journeyDayStem, deliveryId, ttlSec];
}

export interface JourneyEntry {
  deliveryId: string;
  step: StoredStep;
  /** Index the file the step names (by name and hash) for `--file` / `--sha256`. */
  file?: { name: string; sha256: string };
}

/**
 * A journey entry written only when its item's verdict is one of `verdicts` (characters): the
 * claim scripts decide the verdict and the steps in one call (queue/claim-scripts.ts).
 * `item` counts from 1 in the script's own items.
 */
export interface ConditionalEntry extends JourneyEntry {
  when?: { item: number; verdicts: string };
}

/**
 * `journeyAppend`'s keys and arguments for the entries (see JOURNEY_APPEND_LUA), to be appended to
 * a script call's own. Empty for no entries.
 */
export function journeyAppendCall(
  keys: Keys,
  ttlSec: number,
  entries: readonly ConditionalEntry[],
  nowMs: number,
): { keys: string[]; args: Array<string | number> } {
  if (entries.length === 0) return { keys: [], args: [] };
  const day = epochDayOf(nowMs);
  const dayExpiresAt = (day + 1) * (DAY_MS / 1000) + ttlSec;
  const conditionOf = (when: ConditionalEntry['when']): [number, string] => (when === undefined ? [0, ''] : [when.item, when.verdicts]);
  // The index members by key, each member once, with the conditions that write it (none: always).
  // An events file's events all name the same file, so its sha256 member is written once, not
  // once an event, and its name's members (one a delivery, all in the name's shard) are one ZADD.
  const indexes = new Map<string, Map<string, Map<string, [number, string]> | 'always'>>();
  const index = (key: string, member: string, when: ConditionalEntry['when']): void => {
    let members = indexes.get(key);
    if (members === undefined) indexes.set(key, (members = new Map()));
    const before = members.get(member);
    if (before === 'always' || when === undefined) return void members.set(member, 'always');
    const conditions = before ?? new Map<string, [number, string]>();
    conditions.set(`${when.item}:${when.verdicts}`, conditionOf(when));
    members.set(member, conditions);
  };
  for (const { deliveryId, file, when } of entries) {
    if (file === undefined) continue;
    // A name that carries its delivery id (labels, CT-e) is found from the name itself.
    if (deliveryOfName(file.name) !== deliveryId) {
      const { shard, member } = fileIndexEntry(file.name, deliveryId);
      index(keys.journeyFiles(day, shard), member, when);
    }
    if (file.sha256 !== '') {
      const { shard, member } = shaIndexEntry(file.sha256, file.name);
      index(keys.journeyHashes(day, shard), member, when);
    }
  }
  return {
    keys: [keys.journeyDay(day), ...indexes.keys()],
    args: [
      dayExpiresAt,
      entries.length,
      ...entries.flatMap(({ deliveryId, step, when }) => [...conditionOf(when), deliveryId, stepJson({ t: nowMs - day * DAY_MS, ...step })]),
      ...[...indexes.values()].flatMap((members) => [
        members.size,
        ...[...members].flatMap(([member, conditions]) =>
          conditions === 'always' ? [member, 0] : [member, conditions.size, ...[...conditions.values()].flat()],
        ),
      ]),
    ],
  };
}

/**
 * Appends the entries' writes to `chain` (one round trip with the caller's own commands): one
 * script call that appends the steps and writes the file indexes (issue 46: the indexes' `ZADD` and
 * `EXPIREAT` were top-level commands of their own, 2 round trips a claimed label).
 */
export function appendSteps(chain: ChainableCommander, keys: Keys, ttlSec: number, entries: readonly JourneyEntry[], nowMs: number): ChainableCommander {
  if (entries.length === 0) return chain;
  const call = journeyAppendCall(keys, ttlSec, entries, nowMs);
  APPEND_STEPS.queue(chain, call.keys, call.args);
  return chain;
}

export interface JourneyWriter {
  /** Records steps; they leave with the next round trip that takes them (`rideOn`), or within `FLUSH_MS`. */
  add(...entries: JourneyEntry[]): void;
  /** Appends the steps added so far to `chain` (a MULTI or pipeline its caller sends anyway). */
  rideOn(chain: ChainableCommander): void;
  /** Takes the steps added so far as `journeyAppend`'s keys and arguments, for a script of the caller's (the outcome consumer's `take`); null for none. */
  takeCall(): { keys: string[]; args: Array<string | number> } | null;
  /** Resolves once every step added so far was written (or failed: a journey is never worth an error). */
  flush(): Promise<void>;
}

/**
 * How long a step may wait for a round trip to ride on. The outcome consumer's settle (one call
 * per batch of file moves) takes the file-end steps well within it; refused files' steps wait for
 * the consumer's next call or this.
 */
export const FLUSH_MS = 250;

/**
 * Buffers steps for the places that have no round trip of their own to ride on (file moves,
 * refused files): they go with the next round trip that takes them (`takeCall`: the outcome
 * consumer's settle), else in a pipeline of their own within `FLUSH_MS`. A failed write is
 * reported to `onError` and dropped.
 */
export function createJourneyWriter(redis: RedisConnection, keys: Keys, ttlSec: number, now: () => number, onError: (error: unknown) => void): JourneyWriter {
  prepareJourney(redis);
  let pending: JourneyEntry[] = [];
  let inFlight: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | null = null;
  const take = (): JourneyEntry[] => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    const batch = pending;
    pending = [];
    return batch;
  };
  const send = (): Promise<void> => {
    const batch = take();
    if (batch.length === 0) return inFlight;
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
      timer ??= setTimeout(() => void send(), FLUSH_MS).unref();
    },
    rideOn(chain) {
      if (pending.length > 0) appendSteps(chain, keys, ttlSec, take(), now());
    },
    takeCall() {
      return pending.length > 0 ? journeyAppendCall(keys, ttlSec, take(), now()) : null;
    },
    flush: send,
  };
}

/** The retention in seconds from the configured days. */
export function historyTtlSec(retentionDays: number): number {
  return retentionDays * 86_400;
}
