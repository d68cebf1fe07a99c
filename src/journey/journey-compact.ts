/**
 * Folding old journeys (issue 46 item 6): once a day ended `history.detailDays` ago, every
 * delivery of that day whose items have all settled (file archived or failed, event accepted or a
 * duplicate, no dead letter waiting) keeps one compact record instead of its day's steps: ~100
 * bytes instead of ~700 a label. The history still answers for it (journey-read.ts reads a
 * compact record as its milestone steps and one `folded` step naming the steps whose detail is
 * gone). A housekeeping job (`journeyCompact`, hourly) runs it.
 *
 * The compact record (journey-compact-record.ts) is the day's hash field's value: the day's hash
 * keeps its expiry, and the record goes when the day's detail would have.
 *
 * The sha256 index (`journey-sha:<day>:<shard>`, ~130 bytes a file) is kept for days in detail
 * only: a folded file's member is removed, and its sha256 goes to the day's packed index instead
 * (`journey-shc:<day>:<2 hex>`, one string a shard: `<sha256 hex 3–12><delivery id>\n` a file,
 * ~47 bytes), which `history --sha256` reads for older days.
 *
 * Days with deliveries not settled yet keep those in `journey-left:<day>` (a set; `''` marks the
 * day as passed), which later runs look at instead of the whole day again.
 */
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';
import { absoluteStepLine, DAY_MS, epochDayOf, shaIndexEntry, type StoredStep } from './journey.js';
import { publicSteps, type JourneyStep } from './journey-read.js';
import { compactRecord, itemOf, packedShaEntry } from './journey-compact-record.js';

/** An item's last step that means it is done: a document's file moved (or a newer one took its place), an event sent or not needed. */
const SETTLED_DOCUMENT = new Set(['archived', 'failed', 'superseded']);
const SETTLED_EVENT = new Set(['accepted', 'duplicate', 'superseded', 'already-accepted']);

/**
 * Whether every item of these steps (a delivery's, over the days from the one to fold to today)
 * has settled. Webhook registrations are never folded (they are few and a person reads them whole).
 */
export function isSettled(steps: readonly JourneyStep[]): boolean {
  const last = new Map<string, JourneyStep>();
  for (const step of steps) {
    if (step.kind === 'webhook') return false;
    if (step.step === 'folded') continue;
    last.set(itemOf(step), step);
  }
  for (const step of last.values()) {
    const settled = step.kind === 'collecting' ? SETTLED_EVENT : SETTLED_DOCUMENT;
    // A step that names no version (a refusal before hashing) is done by itself.
    if (!settled.has(step.step) && !(step.step === 'refused' && step.sha256 === undefined)) return false;
  }
  return last.size > 0;
}

// KEYS: 1 the day's hash, then per file of the delivery that day: its sha256 index key and its
// packed index key. ARGV: 1 delivery id, 2 its day's value as read, 3 the compact record, 4 the
// packed index's expiry (epoch s), then per file: its sha256 index member (removed) and its packed
// index line (appended). Folds only a value still as it was read (a late step keeps its detail
// until the next run). Returns 1 folded, 0 changed since read.
const FOLD = defineScript(
  'journeyFold',
  `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
for i = 2, #KEYS, 2 do
  redis.call('ZREM', KEYS[i], ARGV[i + 3])
  redis.call('APPEND', KEYS[i + 1], ARGV[i + 4])
  if tonumber(ARGV[4]) > 0 then redis.call('EXPIREAT', KEYS[i + 1], ARGV[4]) end
end
return 1
`,
);

// KEYS: a day's packed sha256 index shards. Writes each back as it is: APPEND grows a string with
// room to spare (up to twice its length), a string set anew takes its length (measured: 80 bytes a
// folded file before, ~50 after; BENCHMARKS.md).
const TRIM = defineScript(
  'journeyPackedTrim',
  `
for _, key in ipairs(KEYS) do
  local value = redis.call('GET', key)
  if value then redis.call('SET', key, value, 'KEEPTTL') end
end
return 1
`,
);

/** Every shard of a day's packed sha256 index (2 hex). */
const PACKED_SHARDS = Array.from({ length: 256 }, (_, n) => n.toString(16).padStart(2, '0'));

async function trimPacked(redis: RedisConnection, keys: Keys, day: number): Promise<void> {
  for (let start = 0; start < PACKED_SHARDS.length; start += 64)
    await TRIM(
      redis,
      PACKED_SHARDS.slice(start, start + 64).map((shard) => keys.journeyHashesPacked(day, shard)),
      [],
    );
}

export interface CompactOptions {
  retentionDays: number;
  detailDays: number;
  nowMs: number;
  /** The deliveries with a dead letter waiting (a failed job that may be replayed): their detail stays. */
  deadLetterDeliveries(): Promise<Set<string>>;
}

export interface CompactResult {
  /** Days looked at. */
  days: number;
  /** Deliveries folded. */
  folded: number;
  /** Deliveries left with their detail (an item not settled). */
  left: number;
}

/**
 * Folds the settled deliveries of every day of the retention that ended `detailDays` ago or
 * earlier (every step folded is at least that old). Safe to run at any time, from any process:
 * each fold is conditional on the value read.
 */
export async function compactJourneys(redis: RedisConnection, keys: Keys, options: CompactOptions): Promise<CompactResult> {
  FOLD.define(redis);
  const today = epochDayOf(options.nowMs);
  const newest = epochDayOf(options.nowMs - options.detailDays * DAY_MS) - 1;
  const oldest = today - options.retentionDays;
  const waiting = await options.deadLetterDeliveries();
  const result: CompactResult = { days: 0, folded: 0, left: 0 };
  for (let day = oldest; day <= newest; day += 1) {
    if ((await redis.exists(keys.journeyDay(day))) === 0) continue;
    result.days += 1;
    const leftKey = keys.journeyLeft(day);
    const isPassed = (await redis.sismember(leftKey, '')) === 1;
    const expireAt = Math.ceil(((await redis.pexpiretime(keys.journeyDay(day))) as number) / 1000);
    const fold = async (ids: string[]): Promise<string[]> => foldDeliveries(redis, keys, ids, { day, today, waiting, expireAt }, result);
    if (isPassed) {
      const ids = (await redis.smembers(leftKey)).filter((id) => id !== '');
      const left = new Set(await fold(ids));
      const done = ids.filter((id) => !left.has(id));
      if (done.length > 0) {
        await redis.srem(leftKey, ...done);
        await trimPacked(redis, keys, day);
      }
      continue;
    }
    let cursor = '0';
    const left: string[] = [];
    do {
      const [next, flat] = await redis.hscan(keys.journeyDay(day), cursor, 'COUNT', 500);
      const ids: string[] = [];
      for (let i = 0; i < flat.length; i += 2) if (!flat[i + 1]!.startsWith('~')) ids.push(flat[i]!);
      left.push(...(await fold(ids)));
      cursor = next;
    } while (cursor !== '0');
    await trimPacked(redis, keys, day);
    const pipeline = redis.pipeline().sadd(leftKey, '', ...left);
    if (expireAt > 0) pipeline.expireat(leftKey, expireAt);
    await pipeline.exec();
  }
  return result;
}

/** Folds the settled ones of these deliveries' steps of `day`; returns the ones left in detail. */
async function foldDeliveries(
  redis: RedisConnection,
  keys: Keys,
  ids: readonly string[],
  { day, today, waiting, expireAt }: { day: number; today: number; waiting: ReadonlySet<string>; expireAt: number },
  result: CompactResult,
): Promise<string[]> {
  if (ids.length === 0) return [];
  FOLD.define(redis);
  const days = Array.from({ length: today - day + 1 }, (_, i) => day + i);
  const read = redis.pipeline();
  for (const id of ids) for (const d of days) read.hget(keys.journeyDay(d), id);
  const replies = (await read.exec()) ?? [];
  const left: string[] = [];
  const write = redis.pipeline();
  const folding: string[] = [];
  ids.forEach((id, i) => {
    const values = days.map((_, d) => {
      const [error, value] = replies[i * days.length + d] ?? [null, null];
      if (error !== null) throw error;
      return typeof value === 'string' ? value : null;
    });
    const own = values[0];
    if (own === null || own === undefined || own.startsWith('~')) return;
    const linesOf = (value: string | null, d: number): string[] =>
      value === null || value.startsWith('~') ? [] : value.split('\n').map((line) => absoluteStepLine(line, days[d]!));
    const since = publicSteps(
      id,
      values.flatMap((value, d) => linesOf(value, d)),
    );
    if (waiting.has(id) || !isSettled(since)) return void left.push(id);
    const ownLines = linesOf(own, 0);
    const steps = publicSteps(id, ownLines);
    const record = compactRecord(id, steps, day);
    // The day's full sha256 members of this delivery's files, replaced by the packed index.
    const fileKeys: string[] = [];
    const fileArgs: string[] = [];
    for (const line of ownLines) {
      let stored: StoredStep;
      try {
        stored = JSON.parse(line) as StoredStep;
      } catch {
        continue;
      }
      if (stored.s !== 'seen' || stored.h?.length !== 64 || stored.f === undefined) continue;
      const { shard, member } = shaIndexEntry(stored.h, stored.f);
      const packed = packedShaEntry(stored.h, id);
      fileKeys.push(keys.journeyHashes(day, shard), keys.journeyHashesPacked(day, packed.shard));
      fileArgs.push(member, packed.line);
    }
    FOLD.queue(write, [keys.journeyDay(day), ...fileKeys], [id, own, record, expireAt, ...fileArgs]);
    folding.push(id);
  });
  if (folding.length > 0) {
    const answers = (await write.exec()) ?? [];
    answers.forEach(([error, folded], i) => {
      if (error !== null) throw error;
      if (folded === 1) result.folded += 1;
      else left.push(folding[i]!);
    });
  }
  result.left += left.length;
  return left;
}
