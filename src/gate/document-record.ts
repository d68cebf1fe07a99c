/**
 * The document record: what carrier-sync remembers of each delivery's label and CT-e, for "newest
 * document wins" and the re-drop memory. Claim and enqueue write it (`QUEUE_DOCUMENT_LUA`, in the claim of a
 * batch of documents: queue/claim-scripts.ts), the push gate reads and updates it (`DOCUMENT_RECORD_LUA`).
 *
 * One compact value per kind and delivery, `<generation: 14 bytes><content id at it: 8 bytes>[<content id the API holds: 8 bytes>]`
 * (`compactGeneration`, `compactContentId`), a field `<l|c><delivery id>` (`documentField`) of one hash among
 * `DOCUMENT_SHARDS` per retention bucket (`docs:<shard>:<bucket>`). A bucket spans an eighth of the
 * retention and expires a retention after it ends; a record written again moves to the current
 * bucket, so it lives at least `retentionSec` (at most 1⅛ of it) after its last write, and a
 * lookup reads the newest of the 9 buckets that can hold it. Many small records in few packed
 * hashes cost ~40–70 bytes each; a key per delivery costs ~250 (docs/internals.md, "Key layout of the document record").
 *
 * The bucket period is the deployment's, fixed by its first process (`documentPeriodSec`: an
 * eighth of the retention it ran with) and kept in Redis: a bucket's number is its start over the
 * period, so a period derived from each process' retention would number the buckets anew when the
 * retention changes, and every record kept before would go unread (an older version dropped again
 * would then be sent over the newer). A lookup reads as many buckets as the retention of now spans
 * at that period (9 at the first retention; more after it grew, fewer after it shrank).
 */
import { hash } from 'node:crypto';
import type { ItemKind, Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { CLOCK_LUA } from './limiter.js';
import { defineScript } from '../store/script.js';

/** Retention buckets of the document records at the retention that fixed the period: a lookup reads this many, newest first. */
const DOCUMENT_BUCKETS = 9;

// Lua helpers over document records (see the file header; they need `nowMs` from limiter.ts'
// CLOCK_LUA, which the push gate's scripts have with the rate window). `docGet(stem, field, period, ttl)`
// returns the record (or false), the bucket it was found in, and the current bucket, reading the
// buckets a record written within the retention `ttl` (s) can be in. `docPut` writes it
// into the current bucket (moving it there), which expires a retention after the bucket ends: the
// EXPIREAT goes with a new bucket only. Its expiry is fixed by its number, so it is set once: every
// write also writes the bucket's marker, the empty field (no record's: a field is a kind's initial
// and a delivery id), and HSET answers 2 only when the record and the marker are both new — a bucket
// made now (a bucket of a version before the marker gets its expiry once more). Before, the expiry
// went with every new record (issue 46: a command a new document, a bucket holding thousands).
// Generations compare byte by byte: Lua's `<` on strings follows Redis' locale (strcoll).
export const DOCUMENT_RECORD_LUA = `
local function docGet(stem, field, period, ttl)
  local current = math.floor(nowMs() / (period * 1000))
  for b = current, current - math.ceil(tonumber(ttl) / period), -1 do
    local v = redis.call('HGET', stem .. b, field)
    if v then return v, b, current end
  end
  return false, nil, current
end
local function docPut(stem, field, value, found, current, period, ttl)
  if found and found ~= current then redis.call('HDEL', stem .. found, field) end
  if redis.call('HSET', stem .. current, field, value, '', '') == 2 then
    redis.call('EXPIREAT', stem .. current, (current + 1) * period + tonumber(ttl))
  end
end
local function isNewer(a, b)
  for i = 1, 14 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return false
end
`;

export type DocumentQueueVerdict = 'older' | 'accepted' | 'queue';

// `queueDocument(stem, lockKey, generation, contentId, ttlSec, field, period)`: the delivery's
// record stem and its kind's document lock; the compact generation and content id, the retention
// (s), the record's field and its bucket period (s). Returns 'older' (a newer document of the
// delivery was queued already), 'accepted' (the API holds this content and no other document is in
// flight) or 'queue' (this is now the delivery's newest). Needs CLOCK_LUA and DOCUMENT_RECORD_LUA;
// the claim of a batch of documents (queue/claim-scripts.ts) runs it once a document.
export const QUEUE_DOCUMENT_LUA = `
local function queueDocument(stem, lockKey, generation, contentId, ttlSec, field, period)
  local record, found, current = docGet(stem, field, period, ttlSec)
  if record and isNewer(record, generation) then return 'older' end
  local held = record and string.sub(record, 23, 30) or ''
  docPut(stem, field, generation .. contentId .. held, found, current, period, ttlSec)
  if held == contentId and redis.call('EXISTS', lockKey) == 0 then return 'accepted' end
  return 'queue'
end
`;

// KEYS: 1 the delivery's record stem, 2 its kind's document lock.
// ARGV: 1 compact generation, 2 compact content id, 3 ttl s, 4 record field, 5 record bucket period s.
// Returns `queueDocument`'s verdict (above).
const QUEUE_DOCUMENT = defineScript(
  'queueDocument',
  `${CLOCK_LUA}${DOCUMENT_RECORD_LUA}${QUEUE_DOCUMENT_LUA}
local stem, lockKey = KEYS[1], KEYS[2]
local generation, contentId, ttlSec, field, period = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
return queueDocument(stem, lockKey, generation, contentId, ttlSec, field, period)
`,
);

/**
 * The document order of many documents in one round trip, each in the given order (two of one
 * delivery in a batch meet the script one after the other, as two separate calls would). One
 * script call a document; the daemon's enqueue claims a whole batch in one call instead
 * (`claimDocuments`, queue/claim-scripts.ts: the same Lua, with the job-exists check and the journey).
 */
export async function queueDocumentOrders(
  redis: RedisConnection,
  keys: Keys,
  documents: ReadonlyArray<{ kind: Exclude<ItemKind, 'collecting'>; deliveryId: string; generation: string; contentId: string }>,
  retentionSec: number,
): Promise<Array<{ error: Error } | { value: DocumentQueueVerdict }>> {
  const period = await documentPeriodSec(redis, keys, retentionSec);
  const calls = documents.map((d) => ({
    keys: [keys.documentRecords(d.deliveryId), keys.documentLock(d.kind, d.deliveryId)],
    args: [compactGeneration(d.generation), compactContentId(d.contentId), retentionSec, documentField(d.kind, d.deliveryId), period],
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
  return Buffer.concat([Buffer.from(initial.toUpperCase()), hash('sha256', deliveryId, 'buffer').subarray(0, 12)]);
}

/** A retention bucket spans an eighth of the retention that fixed the deployment's period (see the file header). */
export function documentBucketSec(retentionSec: number): number {
  return Math.max(1, Math.ceil(retentionSec / (DOCUMENT_BUCKETS - 1)));
}

// KEYS: 1 the deployment's period. ARGV: 1 the period this process would fix. Returns the period.
const DOCUMENT_PERIOD = defineScript(
  'documentPeriod',
  `local period = redis.call('GET', KEYS[1])
if period then return tonumber(period) end
redis.call('SET', KEYS[1], ARGV[1])
return tonumber(ARGV[1])
`,
);

/** The deployment's period as this process read it, by key and retention; a failed read is read again next time. */
const periods = new Map<string, Promise<number>>();

/**
 * The deployment's bucket period (s): the one in Redis, or, for the deployment's first process (or
 * a deployment from before the period was kept: the same eighth of its retention), the one it
 * fixes now. Read once a process: the key never changes once set (see the file header).
 */
export function documentPeriodSec(redis: RedisConnection, keys: Keys, retentionSec: number): Promise<number> {
  const key = keys.documentPeriod;
  const memo = `${key} ${retentionSec}`;
  let period = periods.get(memo);
  if (period === undefined) {
    const read = DOCUMENT_PERIOD(redis, [key], [documentBucketSec(retentionSec)]).then((reply) => {
      const seconds = Number(reply);
      if (!Number.isInteger(seconds) || seconds < 1) throw new Error(`${key} holds no period in seconds: ${String(reply)}`);
      return seconds;
    });
    read.catch(() => periods.get(memo) === read && periods.delete(memo));
    periods.set(memo, read);
    period = read;
  }
  return period;
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
  return hash('sha256', contentId, 'buffer').subarray(0, 8);
}

/**
 * A document's generation: later file mtime, then later claim, is newer. Fixed-width decimal
 * microseconds, so Lua compares them as strings.
 */
export function documentGeneration(mtimeMs: number, claimStampUs: number): string {
  const pad = (n: number): string => String(Math.max(0, Math.floor(n))).padStart(17, '0');
  return `${pad(mtimeMs * 1000)}.${pad(claimStampUs)}`;
}

// KEYS: 1 a record of the earlier layout (`doc:<kind>:<delivery>` hash: g, c, s), 2 the record stem.
// ARGV: 1 record field, 2 compact generation (g), 3 compact content id (c), 4 compact content id
// the API holds (s, or ''), 5 bucket period s, 6 ttl s. Returns 1.
// The newer mark of the two wins (a process of this version may have written one already); the
// content the API holds is the newer record's, else the old one's. The old key is deleted.
const MIGRATE_DOCUMENT = defineScript(
  'migrateDocument',
  `${CLOCK_LUA}${DOCUMENT_RECORD_LUA}
local oldKey, stem = KEYS[1], KEYS[2]
local field, generation, contentId, oldHeld, period, ttlSec = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local record, found, current = docGet(stem, field, period, ttlSec)
local value
if record and not isNewer(generation, record) then
  value = string.len(record) >= 30 and record or (string.sub(record, 1, 22) .. oldHeld)
else
  local held = (record and string.len(record) >= 30) and string.sub(record, 23, 30) or oldHeld
  value = generation .. contentId .. held
end
docPut(stem, field, value, found, current, period, ttlSec)
redis.call('DEL', oldKey)
return 1
`,
);

/**
 * Carries the document records of the earlier layout (one `doc:<kind>:<delivery>` hash each) over
 * into the compact one, once per deployment (a marker key says it was done): without them, the
 * first job of a delivery to reach the gate after an upgrade would set its mark, and a newer
 * document queued before the upgrade could be superseded by an older one. Returns how many moved.
 * An upgrade step (runtime/upgrades.ts): it runs once per deployment.
 */
export async function carryOverDocumentRecords(redis: RedisConnection, keys: Keys, retentionSec: number): Promise<number> {
  const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
  const period = await documentPeriodSec(redis, keys, retentionSec);
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
          [documentField(kind, deliveryId), compactGeneration(g), compactContentId(c), held == null ? '' : compactContentId(held), period, retentionSec],
        );
        moved += 1;
      }
    } while (cursor !== '0');
  }
  return moved;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const escapeGlob = (text: string): string => text.replace(/[*?[\]\\]/g, '\\$&');
