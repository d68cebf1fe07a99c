/**
 * The push gate: one Redis round trip before an item's request (`enter`) and one after it
 * (`leave`). Each is one Lua script, so every check and every change it makes is atomic across
 * processes.
 *
 * `enter` decides, in this order:
 *  1. order — a label or CT-e may be sent only while it is its delivery's newest document (the
 *     content at the high-water generation, see `keys.document`); an older one is *superseded*,
 *     one the API already holds is *already accepted*, and only one document request per delivery
 *     is in flight at a time (the document lock). A collecting event may be sent only when it is
 *     the earliest unfinished event of its delivery; otherwise it *parks* until that one finishes.
 *  2. the 401 gate — while the API refuses the key, exactly one item at a time is let through as
 *     the probe (when the scheduler opens the probe), the others wait.
 *  3. the shared rate limit — a 429 pause, then a slot of the sliding window (see limiter.ts).
 * Only when all three pass does it take the slot, the document lock and the probe together.
 *
 * `leave` stamps the slot again with the time the response arrived, releases the document lock,
 * and, for an item that ended, counts it (stats and the minute's activity, see activity.ts), records the content the API now holds (documents) or
 * advances its delivery's event chain, returning the parked event to wake (events).
 *
 * Document records (the document order and the re-drop memory): one compact value per kind and
 * delivery, `<generation: 14 bytes><content id at it: 8 bytes>[<content id the API holds: 8 bytes>]`
 * (`compactGeneration`, `compactContentId`), a field `<l|c><delivery id>` (`documentField`) of one hash among
 * `DOCUMENT_SHARDS` per retention bucket (`docs:<shard>:<bucket>`). A bucket spans an eighth of the
 * retention and expires a retention after it ends; a record written again moves to the current
 * bucket, so it lives at least `retentionSec` (at most 1⅛ of it) after its last write, and a
 * lookup reads the newest of the 9 buckets that can hold it. Many small records in few packed
 * hashes cost ~40–70 bytes each; a key per delivery costs ~250 (README, "Key layout of the document record").
 */
import { createHash, randomBytes } from 'node:crypto';
import type { RedisConnection } from './redis.js';
import { keyIdOf, type ItemKind, type Keys } from './keys.js';
import type { ItemJob, ItemResult } from './payloads.js';
import { ACTIVITY_TTL_SEC } from './activity.js';
import { sinceMs, stampSlotLua, takeSlotLua } from './limiter.js';
import { defineScript } from './script.js';

/** Retention buckets of the document records: a lookup reads this many, newest first. */
const DOCUMENT_BUCKETS = 9;

// Lua helpers over document records (see the file header). `docGet(stem, field, period)` returns
// the record (or false), the bucket it was found in, and the current bucket. `docPut` writes it
// into the current bucket (moving it there), which expires a retention after the bucket ends.
// Generations compare byte by byte: Lua's `<` on strings follows Redis' locale (strcoll).
const DOCUMENT_RECORD_LUA = `
local function docGet(stem, field, period)
  local current = math.floor(tonumber(redis.call('TIME')[1]) / period)
  for b = current, current - ${DOCUMENT_BUCKETS - 1}, -1 do
    local v = redis.call('HGET', stem .. b, field)
    if v then return v, b, current end
  end
  return false, nil, current
end
local function docPut(stem, field, value, found, current, period, ttl)
  if found and found ~= current then redis.call('HDEL', stem .. found, field) end
  redis.call('HSET', stem .. current, field, value)
  redis.call('EXPIREAT', stem .. current, (current + 1) * period + tonumber(ttl))
end
local function isNewer(a, b)
  for i = 1, 14 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return false
end
`;

// The head of a delivery's event chain: its earliest unfinished event (member and score), or nil.
// Members whose job finished are dropped. Events are registered in the chain before their jobs are
// added (enqueue.ts), so a member whose job is not there is still being queued — it blocks, as an
// unfinished one does — unless its job stays missing for `graceMs` (the queueing process died in
// between, or an operator removed the job): then it is dropped. Dropping it at once, as this did
// before, let a delivery's later events go before (or beside) an earlier one queued in the same
// file but a later chunk (issue 19).
const CHAIN_HEAD_LUA = `
local function chainHead(orderKey, jobPrefix, missingPrefix, graceMs)
  while true do
    local head = redis.call('ZRANGE', orderKey, 0, 0, 'WITHSCORES')
    if head[1] == nil then return nil, nil end
    local jobKey = jobPrefix .. head[1]
    if redis.call('EXISTS', jobKey) == 1 then
      if redis.call('HEXISTS', jobKey, 'finishedOn') == 0 then return head[1], head[2] end
    else
      local missingKey = missingPrefix .. head[1]
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      local since = redis.call('GET', missingKey)
      if not since then
        redis.call('SET', missingKey, now, 'PX', graceMs * 2)
        return head[1], head[2]
      end
      if now - tonumber(since) < graceMs then return head[1], head[2] end
      redis.call('DEL', missingKey)
    end
    redis.call('ZREM', orderKey, head[1])
  end
end
`;

// KEYS: 1 order (doc record stem | event order zset), 2 document lock | parked set, 3 auth failure,
//       4 auth probe, 5 limiter window, 6 limiter pause, 7 auth epoch, 8 event lock, 9 event_at memory.
// ARGV: 1 job id, 2 mode ('doc'|'event'), 3 compact content id (doc), 4 compact generation (doc),
//       5 lock ttl ms, 6 BullMQ job key prefix (event), 7 window ms, 8 limit, 9 slot member,
//       10 longest request ms, 11 order ttl s, 12 activity key prefix (+ epoch minute),
//       13 activity ttl s, 14 record field (doc), 15 record bucket period s (doc),
//       16 event time ms (event), 17 instant key (event), 18 source id (event),
//       19 missing-job grace ms (event), 20 missing-job marker stem (event).
// Events: one on the wire per delivery at a time (the event lock, held by the run's slot member),
// and only the head of the chain. An event not in its chain was finished by another run of its job
// (a stalled job taken over: 'already' when its claim is done) or replayed from the dead letters
// (registered again here).
// Returns {verdict, a, b, c}: {'go', isProbe, member, auth epoch} | {'superseded'} | {'already'} |
//   {'park', headDueMs} | {'busy', ms} | {'auth'} | {'wait', ms}.
const ENTER = defineScript(`${DOCUMENT_RECORD_LUA}${CHAIN_HEAD_LUA}
local jobId = ARGV[1]
local isEvent = ARGV[2] == 'event'
local member = ARGV[9]
local lockMs = ARGV[5]
local lockKey = isEvent and KEYS[8] or KEYS[2]
if not isEvent then
  local period = tonumber(ARGV[15])
  local record, found, current = docGet(KEYS[1], ARGV[14], period)
  if not record then
    docPut(KEYS[1], ARGV[14], ARGV[4] .. ARGV[3], nil, current, period, ARGV[11])
  elseif string.sub(record, 15, 22) ~= ARGV[3] then
    return {'superseded'}
  elseif string.sub(record, 23, 30) == ARGV[3] then
    return {'already'}
  end
  local owner = redis.call('GET', lockKey)
  if owner and owner ~= jobId then
    local left = redis.call('PTTL', lockKey)
    if left < 1 then left = 1 end
    return {'busy', left}
  end
else
  local orderKey, parkedKey, dedupKey = KEYS[1], KEYS[2], KEYS[9]
  local eventMs, instant, source = ARGV[16], ARGV[17], ARGV[18]
  if not redis.call('ZSCORE', orderKey, jobId) then
    if redis.call('HGET', dedupKey, instant) == 'done:' .. source then return {'already'} end
    redis.call('ZADD', orderKey, eventMs, jobId)
  end
  local head, headDue = chainHead(orderKey, ARGV[6], ARGV[20], tonumber(ARGV[19]))
  if head ~= jobId then
    redis.call('SADD', parkedKey, jobId)
    redis.call('EXPIRE', parkedKey, ARGV[11])
    return {'park', headDue}
  end
  if redis.call('EXISTS', lockKey) == 1 then
    local left = redis.call('PTTL', lockKey)
    if left < 1 then left = 1 end
    return {'busy', left}
  end
end
local isProbe = 0
if redis.call('EXISTS', KEYS[3]) == 1 then
  local probe = redis.call('GET', KEYS[4])
  if probe ~= 'open' and probe ~= jobId then return {'auth'} end
  isProbe = 1
end
${takeSlotLua({ window: 'KEYS[5]', pause: 'KEYS[6]', windowMs: 'ARGV[7]', limit: 'ARGV[8]', member: 'ARGV[9]', maxRequestMs: 'ARGV[10]' })}
local bucket = ARGV[12] .. math.floor(now / 60000)
redis.call('HINCRBY', bucket, 'requests', 1)
redis.call('EXPIRE', bucket, ARGV[13])
if isEvent then
  redis.call('SREM', KEYS[2], jobId)
  redis.call('SET', lockKey, member, 'PX', lockMs)
else
  redis.call('SET', lockKey, jobId, 'PX', lockMs)
end
if isProbe == 1 then redis.call('SET', KEYS[4], jobId, 'PX', lockMs) end
return {'go', isProbe, member, tonumber(redis.call('GET', KEYS[7]) or '0')}
`);

// KEYS: 1 order (doc record stem | event order zset), 2 document lock | parked set, 3 limiter window,
//       4 stats hash, 5 held-by-429 counter of the job, 6 event_at memory (event), 7 event lock.
// ARGV: 1 job id, 2 mode, 3 compact content id (doc), 4 result ('' while the item goes on), 5 slot member
//       ('' when no request was made), 6 order ttl s, 7 counter, 8 BullMQ job key prefix (event),
//       9 instant key (event), 10 source id (event), 11 kind, 12 activity key prefix, 13 activity ttl s,
//       14 ms since the response arrived (the slot's stamp), 15 record field (doc),
//       16 record bucket period s (doc), 17 missing-job grace ms (event), 18 missing-job marker stem (event).
// The run's lock is released (a document's by job id, an event's by slot member). An item that ended
// is counted in the stats hash (`<counter>:<kind>`) and in its minute's activity.
// An event that ended (not dead-lettered) marks its event_at claim done: the same source taken in
// again (a re-pull, a file re-read after a crash) is then a duplicate, not a second send.
// Returns the id of a parked event to wake, or false.
const LEAVE = defineScript(`${DOCUMENT_RECORD_LUA}${CHAIN_HEAD_LUA}
local jobId = ARGV[1]
local member = ARGV[5]
${stampSlotLua({ window: 'KEYS[3]', member: 'ARGV[5]', sinceResponseMs: 'ARGV[14]' })}
if ARGV[2] == 'doc' and redis.call('GET', KEYS[2]) == jobId then redis.call('DEL', KEYS[2]) end
if ARGV[2] == 'event' and member ~= '' and redis.call('GET', KEYS[7]) == member then redis.call('DEL', KEYS[7]) end
if ARGV[4] == '' then return false end
redis.call('HINCRBY', KEYS[4], ARGV[7] .. ':' .. ARGV[11], 1)
local t = redis.call('TIME')
local bucket = ARGV[12] .. math.floor(tonumber(t[1]) / 60)
redis.call('HINCRBY', bucket, ARGV[7], 1)
redis.call('EXPIRE', bucket, ARGV[13])
redis.call('UNLINK', KEYS[5])
if ARGV[2] == 'doc' then
  if ARGV[4] == 'accepted' then
    local period = tonumber(ARGV[16])
    local record, found, current = docGet(KEYS[1], ARGV[15], period)
    local held = record and string.sub(record, 1, 22) or (string.rep('\\0', 14) .. ARGV[3])
    docPut(KEYS[1], ARGV[15], held .. ARGV[3], found, current, period, ARGV[6])
  end
  return false
end
if ARGV[4] ~= 'dead-lettered' and redis.call('HGET', KEYS[6], ARGV[9]) == ARGV[10] then
  redis.call('HSET', KEYS[6], ARGV[9], 'done:' .. ARGV[10])
end
redis.call('ZREM', KEYS[1], jobId)
local head = chainHead(KEYS[1], ARGV[8], ARGV[18], tonumber(ARGV[17]))
if head ~= nil and redis.call('SREM', KEYS[2], head) == 1 then return head end
return false
`);

// KEYS: 1 doc record stem, 2 document lock. ARGV: 1 compact generation, 2 compact content id,
// 3 ttl s, 4 record field, 5 record bucket period s.
// 'older': a newer document of the delivery was queued already; 'accepted': the API holds this
// content and no other document is in flight; 'queue': this is now the delivery's newest document.
const QUEUE_DOCUMENT = defineScript(`${DOCUMENT_RECORD_LUA}
local period = tonumber(ARGV[5])
local record, found, current = docGet(KEYS[1], ARGV[4], period)
if record and isNewer(record, ARGV[1]) then return 'older' end
local held = record and string.sub(record, 23, 30) or ''
docPut(KEYS[1], ARGV[4], ARGV[1] .. ARGV[2] .. held, found, current, period, ARGV[3])
if held == ARGV[2] and redis.call('EXISTS', KEYS[2]) == 0 then return 'accepted' end
return 'queue'
`);

export type GateVerdict =
  | { action: 'go'; isProbe: boolean; slot: string; authEpoch: number }
  | { action: 'superseded' }
  | { action: 'already-accepted' }
  /** Events: an earlier event of the delivery is unfinished; it is due at `headDueMs` (epoch ms). */
  | { action: 'park'; headDueMs: number }
  /** Documents: another version's request is in flight; ask again within `ms`. */
  | { action: 'busy'; ms: number }
  /** The API refuses the key and another item is the probe. */
  | { action: 'auth' }
  /** A 429 pause or a full window: a slot frees in `ms`. */
  | { action: 'wait'; ms: number };

export interface PushGateOptions {
  ratePerMinute: number;
  /** The API's window; 60 s. Tests shorten it. */
  windowMs?: number;
  /** Longest a request can take (connect + headers + body timeouts): a slot counts as in flight till then. */
  maxRequestMs: number;
  /** The document lock's and the probe's lifetime: longer than any request. */
  lockMs: number;
  /** How long the document order and the re-drop memory are kept after a delivery's last document. */
  retentionSec: number;
  /** How long an event registered in its chain may be without its job before the chain drops it (`chainHead`). */
  missingJobGraceMs?: number;
}

/** A slot whose request was made: its member, and `performance.now()` when the answer (or failure) came. */
export interface SlotUse {
  slot: string;
  respondedAt: number;
}

export interface PushGate {
  enter(item: ItemJob, jobId: string): Promise<GateVerdict>;
  /**
   * After a request (`slot` set) or a decision without one. `result` is set when the item ended
   * (counted, order advanced); null while it goes on (a retry). Returns a parked event to wake.
   */
  leave(item: ItemJob, jobId: string, slot: SlotUse | null, result: ItemResult | null): Promise<string | null>;
  /** Events: true while the job waits to be woken (a `leave` that woke it took it off). */
  isParked(item: ItemJob, jobId: string): Promise<boolean>;
}

/**
 * How long an event registered in its delivery's chain may be without its job before the chain
 * drops it (see `chainHead`): far longer than the one round trip between registering and adding.
 */
const MISSING_JOB_GRACE_MS = 30_000;

const COUNTER_OF: Readonly<Record<ItemResult, string>> = {
  accepted: 'sent',
  repeat: 'duplicates',
  superseded: 'superseded',
  'dead-lettered': 'dead_lettered',
};

export function createPushGate(redis: RedisConnection, keys: Keys, carrierKey: string, options: PushGateOptions): PushGate {
  const keyId = keyIdOf(carrierKey);
  const windowMs = options.windowMs ?? 60_000;
  const activityPrefix = keys.activity(0).slice(0, -1);
  const jobPrefix = (kind: ItemKind): string => `${keys.bullPrefix}:${kind}:`;
  const orderKeys = (item: ItemJob): [string, string] =>
    item.kind === 'collecting'
      ? [keys.eventOrder(item.deliveryId), keys.eventParked(item.deliveryId)]
      : [keys.documentRecords(item.deliveryId), keys.documentLock(item.kind, item.deliveryId)];
  const contentOf = (item: ItemJob): Buffer | string => (item.kind === 'collecting' ? '' : compactContentId(item.origin.contentId));
  const fieldOf = (item: ItemJob): Buffer | string => (item.kind === 'collecting' ? '' : documentField(item.kind, item.deliveryId));
  const period = documentBucketSec(options.retentionSec);
  const missingJobGraceMs = options.missingJobGraceMs ?? MISSING_JOB_GRACE_MS;

  return {
    async enter(item, jobId) {
      const member = `${jobId}:${randomBytes(4).toString('hex')}`;
      const isDocument = item.kind !== 'collecting';
      const raw = (await ENTER(
        redis,
        [
          ...orderKeys(item),
          keys.authFailure,
          keys.authProbe,
          keys.limiter(keyId),
          keys.pause(keyId),
          keys.authEpoch,
          keys.eventLock(item.deliveryId),
          keys.dedup(item.deliveryId),
        ],
        [
          jobId,
          isDocument ? 'doc' : 'event',
          contentOf(item),
          isDocument ? compactGeneration(item.generation ?? '') : '',
          options.lockMs,
          jobPrefix(item.kind),
          windowMs,
          options.ratePerMinute,
          member,
          options.maxRequestMs,
          options.retentionSec,
          activityPrefix,
          ACTIVITY_TTL_SEC,
          fieldOf(item),
          period,
          item.kind === 'collecting' ? item.epochMs : '',
          item.kind === 'collecting' ? item.instantKey : '',
          item.kind === 'collecting' ? item.sourceId : '',
          missingJobGraceMs,
          keys.eventMissing,
        ],
      )) as [string, number | string | undefined, string | undefined, number | undefined];
      const [verdict, a, b, c] = raw;
      switch (verdict) {
        case 'go':
          return { action: 'go', isProbe: Number(a) === 1, slot: String(b), authEpoch: Number(c) };
        case 'superseded':
          return { action: 'superseded' };
        case 'already':
          return { action: 'already-accepted' };
        case 'park':
          return { action: 'park', headDueMs: Number(a) };
        case 'busy':
          return { action: 'busy', ms: Number(a) };
        case 'auth':
          return { action: 'auth' };
        default:
          return { action: 'wait', ms: Number(a) };
      }
    },
    async leave(item, jobId, slot, result) {
      const woken = await LEAVE(
        redis,
        [...orderKeys(item), keys.limiter(keyId), keys.stats, keys.attempts(`${jobId}:held`), keys.dedup(item.deliveryId), keys.eventLock(item.deliveryId)],
        [
          jobId,
          item.kind === 'collecting' ? 'event' : 'doc',
          contentOf(item),
          result ?? '',
          slot?.slot ?? '',
          options.retentionSec,
          result === null ? '' : COUNTER_OF[result],
          jobPrefix(item.kind),
          item.kind === 'collecting' ? item.instantKey : '',
          item.kind === 'collecting' ? item.sourceId : '',
          item.kind,
          activityPrefix,
          ACTIVITY_TTL_SEC,
          sinceMs(slot?.respondedAt),
          fieldOf(item),
          period,
          missingJobGraceMs,
          keys.eventMissing,
        ],
      );
      return typeof woken === 'string' ? woken : null;
    },
    async isParked(item, jobId) {
      return (await redis.sismember(keys.eventParked(item.deliveryId), jobId)) === 1;
    },
  };
}

export type DocumentQueueVerdict = 'older' | 'accepted' | 'queue';

/**
 * Raises the delivery's high-water generation to this document's, unless a newer one was queued
 * already (generations never go down), and tells whether the API already holds these bytes.
 */
export async function queueDocumentOrder(
  redis: RedisConnection,
  keys: Keys,
  kind: Exclude<ItemKind, 'collecting'>,
  deliveryId: string,
  generation: string,
  contentId: string,
  retentionSec: number,
): Promise<DocumentQueueVerdict> {
  return (await QUEUE_DOCUMENT(
    redis,
    [keys.documentRecords(deliveryId), keys.documentLock(kind, deliveryId)],
    [compactGeneration(generation), compactContentId(contentId), retentionSec, documentField(kind, deliveryId), documentBucketSec(retentionSec)],
  )) as DocumentQueueVerdict;
}

// KEYS: 1 a record of the earlier layout (`doc:<kind>:<delivery>` hash: g, c, s), 2 doc record stem.
// ARGV: 1 record field, 2 compact generation (g), 3 compact content id (c), 4 compact content id
// the API holds (s, or ''), 5 bucket period s, 6 ttl s.
// The newer mark of the two wins (a process of this version may have written one already); the
// content the API holds is the newer record's, else the old one's. The old key is deleted.
const MIGRATE_DOCUMENT = defineScript(`${DOCUMENT_RECORD_LUA}
local period = tonumber(ARGV[5])
local record, found, current = docGet(KEYS[2], ARGV[1], period)
local value
if record and not isNewer(ARGV[2], record) then
  value = string.len(record) >= 30 and record or (string.sub(record, 1, 22) .. ARGV[4])
else
  local held = (record and string.len(record) >= 30) and string.sub(record, 23, 30) or ARGV[4]
  value = ARGV[2] .. ARGV[3] .. held
end
docPut(KEYS[2], ARGV[1], value, found, current, period, ARGV[6])
redis.call('DEL', KEYS[1])
return 1
`);

/**
 * Carries the document records of the earlier layout (one `doc:<kind>:<delivery>` hash each) over
 * into the compact one, once per deployment (a marker key says it was done): without them, the
 * first job of a delivery to reach the gate after an upgrade would set its mark, and a newer
 * document queued before the upgrade could be superseded by an older one. Returns how many moved.
 */
export async function migrateDocumentRecords(redis: RedisConnection, keys: Keys, retentionSec: number): Promise<number> {
  if ((await redis.exists(keys.documentRecordsMigrated)) === 1) return 0;
  const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
  const legacy = new RegExp(`^${escapeRegExp(keys.bullPrefix)}:doc:(label|cte):(.+)$`);
  let moved = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, names] = await node.scan(cursor, 'MATCH', `${escapeGlob(keys.bullPrefix)}:doc:*`, 'COUNT', 1000);
      cursor = next;
      for (const name of names) {
        const match = legacy.exec(name);
        if (match === null) continue;
        const kind = match[1] as Exclude<ItemKind, 'collecting'>;
        const deliveryId = match[2]!;
        const [g, c, held] = await redis.hmget(name, 'g', 'c', 's');
        if (g == null || c == null) {
          await redis.del(name);
          continue;
        }
        await MIGRATE_DOCUMENT(
          redis,
          [name, keys.documentRecords(deliveryId)],
          [
            documentField(kind, deliveryId),
            compactGeneration(g),
            compactContentId(c),
            held == null ? '' : compactContentId(held),
            documentBucketSec(retentionSec),
            retentionSec,
          ],
        );
        moved += 1;
      }
    } while (cursor !== '0');
  }
  await redis.set(keys.documentRecordsMigrated, new Date().toISOString());
  return moved;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const escapeGlob = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');

/**
 * `queueDocumentOrder` for many documents in one round trip, each in the given order (two of one
 * delivery in a batch meet the script one after the other, as two separate calls would).
 */
export async function queueDocumentOrders(
  redis: RedisConnection,
  keys: Keys,
  documents: ReadonlyArray<{ kind: Exclude<ItemKind, 'collecting'>; deliveryId: string; generation: string; contentId: string }>,
  retentionSec: number,
): Promise<Array<{ error: Error } | { value: DocumentQueueVerdict }>> {
  const calls = documents.map((d) => ({
    keys: [keys.documentRecords(d.deliveryId), keys.documentLock(d.kind, d.deliveryId)],
    args: [compactGeneration(d.generation), compactContentId(d.contentId), retentionSec, documentField(d.kind, d.deliveryId), documentBucketSec(retentionSec)],
  }));
  return (await QUEUE_DOCUMENT.many(redis, calls)) as Array<{ error: Error } | { value: DocumentQueueVerdict }>;
}

/**
 * A document record's field in its shard: the kind's initial, then the delivery id; a delivery id
 * longer than 12 bytes (a UUID is 36) is replaced by the first 12 bytes of its SHA-256 after the
 * initial in capitals (two ids sharing them: about 2^-96 a pair).
 */
export function documentField(kind: Exclude<ItemKind, 'collecting'>, deliveryId: string): Buffer {
  const initial = kind === 'label' ? 'l' : 'c';
  if (Buffer.byteLength(deliveryId) <= 12) return Buffer.from(`${initial}${deliveryId}`);
  return Buffer.concat([Buffer.from(initial.toUpperCase()), createHash('sha256').update(deliveryId).digest().subarray(0, 12)]);
}

/** A retention bucket spans an eighth of the retention (see the file header). */
export function documentBucketSec(retentionSec: number): number {
  return Math.max(1, Math.ceil(retentionSec / (DOCUMENT_BUCKETS - 1)));
}

/**
 * `documentGeneration`'s two 17-digit numbers as 7 bytes each, big-endian, so that byte order is
 * generation order (14 bytes instead of 35). No generation (a job queued without one) is zeros:
 * older than any.
 */
export function compactGeneration(generation: string): Buffer {
  const out = Buffer.alloc(14);
  const match = /^(\d{1,17})\.(\d{1,17})$/.exec(generation);
  if (match === null) return out;
  const word = Buffer.alloc(8);
  [match[1]!, match[2]!].forEach((digits, i) => {
    word.writeBigUInt64BE(BigInt(digits));
    word.copy(out, i * 7, 1);
  });
  return out;
}

/**
 * A content id (16 hex digits, see spool/paths.ts) as its 8 bytes; anything else as the first 8
 * bytes of its SHA-256. Only compared for equality within one delivery.
 */
export function compactContentId(contentId: string): Buffer {
  if (/^[0-9a-f]{16}$/.test(contentId)) return Buffer.from(contentId, 'hex');
  return createHash('sha256').update(contentId).digest().subarray(0, 8);
}

/**
 * A document's generation: later file mtime, then later claim, is newer. Fixed-width decimal
 * microseconds, so Lua compares them as strings.
 */
export function documentGeneration(mtimeMs: number, claimStampUs: number): string {
  const pad = (n: number): string => String(Math.max(0, Math.floor(n))).padStart(17, '0');
  return `${pad(mtimeMs * 1000)}.${pad(claimStampUs)}`;
}
