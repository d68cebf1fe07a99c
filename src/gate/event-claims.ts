/**
 * The event_at memory: per delivery, every normalised instant ever claimed, and by whom.
 *
 * A claim is taken when an event is ingested, before its job is added. The claim names its
 * source (file content + line, or request + index), not the job, so that:
 *  - the same source ingested again after a crash (claim taken, job not yet added) gets OWN and
 *    adds its job — nothing is lost in that window; once its event was sent, the claim is marked
 *    done and the same source gets SENT: not queued again (completed jobs are not kept, so a job id
 *    cannot tell), but still its own — an events file re-read after a crash counts it as one of
 *    its events, finished;
 *  - any other source with the same instant gets DUPLICATE and is never queued;
 *  - a job's own retries never consult the memory, so a crash between a send and its record
 *    cannot block the retry.
 * The memory outlives BullMQ's job records (BullMQ forgets a job id once the job is removed).
 *
 * Layout (docs/internals.md, "Key layout of the event_at claims"): a claim is a 12-byte record, `<event: 8
 * bytes><owner: 4 bytes>` (`claimRecord`), appended to one string per shard and time bucket,
 * `event-claims:<shard>:<bucket>` (`CLAIM_SHARDS` shards by delivery; a bucket spans
 * `CLAIM_BUCKET_SEC`, 10 days, and expires `retention` after it ends, so a claim lives at least the
 * retention and at most 10 days more after it was taken). A lookup reads the buckets that can hold a
 * claim of the last `retention` (10 for 90 days) and finds the event's 8 bytes at a record's start.
 * About 13–21 bytes a claim kept, against ~100–200 in a hash per delivery (BENCHMARKS.md, issue 23).
 * Claims of the earlier layout (`dedup:<delivery>` hashes: instant → source id, `done:<source>`)
 * are read where no record is found, until they expire on their own (docs/internals.md, "Upgrading").
 */
import { hash } from 'node:crypto';
import type { RedisConnection } from '../store/redis.js';
import type { Keys } from '../store/keys.js';
import { CLOCK_LUA } from './limiter.js';
import { defineScript } from '../store/script.js';

/** A claims bucket spans 10 days, whatever the retention (so a change of it keeps finding them). */
export const CLAIM_BUCKET_SEC = 10 * 86_400;
const RECORD_BYTES = 12;

// Lua helpers over the claims (see the file header; they need `nowMs` from limiter.ts' CLOCK_LUA,
// which the push gate's scripts have with the rate window); `record` is the claim's 12 bytes, `ttl` the
// retention in s. `claimFind(stem, record, ttl)` returns the owner (4 bytes) of the event's claim,
// its bucket and its byte offset there — or false — and the current bucket. The event's 8 bytes
// count only at a record's start. It reads the current bucket first (GET: where the gate finds the
// claim of an event being sent), then the older ones in one MGET: a new claim reads the 10 buckets
// of a 90-day retention in 2 commands instead of 10 (issue 46), and a claim found in the current
// bucket never copies the older ones into the script. `claimDone(owner)` is the owner once the event was sent (the
// first bit set). `claimIsDone` and `claimMarkDone` fall back to the claim of the earlier layout
// (`legacyKey`: instant → source id or `done:<source>`) where no record is found.
export const CLAIM_RECORD_LUA = `
local function claimFindIn(records, event)
  local at = 1
  while records do
    local i = string.find(records, event, at, true)
    if not i then return nil end
    if i % ${RECORD_BYTES} == 1 then return i end
    at = i + 1
  end
  return nil
end
local function claimFind(stem, record, ttl)
  local event = string.sub(record, 1, 8)
  local current = math.floor(nowMs() / ${CLAIM_BUCKET_SEC * 1000})
  local records = redis.call('GET', stem .. current)
  local i = claimFindIn(records, event)
  if i then return string.sub(records, i + 8, i + 11), current, i - 1, current end
  local oldest = current - math.ceil(tonumber(ttl) / ${CLAIM_BUCKET_SEC})
  if oldest >= current then return false, nil, nil, current end
  local older = {}
  for b = current - 1, oldest, -1 do older[#older + 1] = stem .. b end
  local values = redis.call('MGET', unpack(older))
  for n = 1, #older do
    local v = values[n]
    i = claimFindIn(v, event)
    if i then return string.sub(v, i + 8, i + 11), current - n, i - 1, current end
  end
  return false, nil, nil, current
end
local function claimDone(owner)
  return string.char(string.byte(owner, 1) + 128) .. string.sub(owner, 2)
end
local function claimIsDone(stem, record, ttl, legacyKey, instant, source)
  local owner = claimFind(stem, record, ttl)
  if owner then return owner == claimDone(string.sub(record, 9, 12)) end
  return redis.call('HGET', legacyKey, instant) == 'done:' .. source
end
local function claimMarkDone(stem, record, ttl, legacyKey, instant, source)
  local owner, bucket, offset = claimFind(stem, record, ttl)
  if owner then
    if owner == string.sub(record, 9, 12) then redis.call('SETRANGE', stem .. bucket, offset + 8, claimDone(owner)) end
  elseif redis.call('HGET', legacyKey, instant) == source then
    redis.call('HSET', legacyKey, instant, 'done:' .. source)
  end
end
`;

// `dedupClaim(stem, legacyKey, record, ttlSec, instant, source)`: the delivery's claims stem and
// its claims of the earlier layout (hash); the claim record, the retention (s), the instant key and
// the source id. Returns 1 new claim, 2 own earlier claim, 3 own claim of an event already sent (the
// same source taken in again after it was sent: not sent again), 0 duplicate of another source.
// Needs CLOCK_LUA and CLAIM_RECORD_LUA; the claim of a chunk of events (queue/claim-scripts.ts)
// runs it once an event.
export const DEDUP_CLAIM_LUA = `
local function dedupClaim(stem, legacyKey, record, ttlSec, instant, source)
  local owner, bucket, offset, current = claimFind(stem, record, ttlSec)
  if owner then
    local mine = string.sub(record, 9, 12)
    if owner == mine then return 2 end
    return owner == claimDone(mine) and 3 or 0
  end
  local legacy = redis.call('HGET', legacyKey, instant)
  if legacy then
    if legacy == source then return 2 end
    return legacy == 'done:' .. source and 3 or 0
  end
  local key = stem .. current
  if redis.call('APPEND', key, record) == ${RECORD_BYTES} then
    redis.call('EXPIREAT', key, (current + 1) * ${CLAIM_BUCKET_SEC} + ttlSec)
  end
  return 1
end
`;

// KEYS: 1 the delivery's claims stem, 2 its claims of the earlier layout (hash).
// ARGV: 1 claim record, 2 retention s, 3 instant key, 4 source id.
// Returns `dedupClaim`'s (above).
const CLAIM = defineScript(
  'dedupClaim',
  `${CLOCK_LUA}${CLAIM_RECORD_LUA}${DEDUP_CLAIM_LUA}
local stem, legacyKey = KEYS[1], KEYS[2]
local record, ttlSec, instant, source = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
return dedupClaim(stem, legacyKey, record, ttlSec, instant, source)
`,
);

/** `dedupClaim`'s replies (1, 2, 3, 0) as results. */
export function claimResultOf(reply: unknown): ClaimResult {
  const result = Number(reply);
  return result === 1 ? 'new' : result === 2 ? 'own' : result === 3 ? 'sent' : 'duplicate';
}

/**
 * 'sent': the source's own claim, its event already sent — the same source taken in again (a file
 * re-read after a crash): never sent again, and no duplicate of another source either.
 */
export type ClaimResult = 'new' | 'own' | 'sent' | 'duplicate';

export interface DedupMemory {
  /** How long a claim is kept at least (s): the claim of a chunk of events (queue/claim-scripts.ts) needs it. */
  readonly retentionSec: number;
  claim(deliveryId: string, instantKey: string, sourceId: string): Promise<ClaimResult>;
  /** Forgets one claim (a purged dead letter), so the instant may be sent again. */
  release(deliveryId: string, instantKey: string, sourceId: string): Promise<void>;
}

// KEYS: 1 the delivery's claims stem, 2 its claims of the earlier layout.
// ARGV: 1 claim record, 2 retention s, 3 instant key, 4 source id.
// Deletes the claim only when that source holds it (not done). Returns 1.
const RELEASE = defineScript(
  'dedupRelease',
  `${CLOCK_LUA}${CLAIM_RECORD_LUA}
local stem, legacyKey = KEYS[1], KEYS[2]
local record, ttlSec, instant, source = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local owner, bucket, offset = claimFind(stem, record, ttlSec)
if owner then
  if owner ~= string.sub(record, 9, 12) then return 1 end
  local key = stem .. bucket
  local records = redis.call('GET', key)
  local rest = string.sub(records, 1, offset) .. string.sub(records, offset + ${RECORD_BYTES + 1})
  if rest == '' then
    redis.call('DEL', key)
  else
    redis.call('SET', key, rest)
    redis.call('EXPIREAT', key, (bucket + 1) * ${CLAIM_BUCKET_SEC} + ttlSec)
  end
elseif redis.call('HGET', legacyKey, instant) == source then
  redis.call('HDEL', legacyKey, instant)
end
return 1
`,
);

export function createDedupMemory(redis: RedisConnection, keys: Keys, retentionDays: number): DedupMemory {
  const ttlSeconds = retentionDays * 86_400;
  const call = (deliveryId: string, instantKey: string, sourceId: string): [string[], Array<string | number | Buffer>] => [
    [keys.eventClaims(deliveryId), keys.dedup(deliveryId)],
    [claimRecord(deliveryId, instantKey, sourceId), ttlSeconds, instantKey, sourceId],
  ];
  return {
    retentionSec: ttlSeconds,
    async claim(deliveryId, instantKey, sourceId) {
      return claimResultOf(await CLAIM(redis, ...call(deliveryId, instantKey, sourceId)));
    },
    async release(deliveryId, instantKey, sourceId) {
      await RELEASE(redis, ...call(deliveryId, instantKey, sourceId));
    },
  };
}

/**
 * A claim's 12 bytes: the event (delivery and instant: the first 8 bytes of their SHA-256) and its
 * owner (the first 4 bytes of the source id's SHA-256, first bit clear; set once sent).
 * Sizes: two events of one shard's deliveries sharing 8 bytes would make the later a false
 * duplicate (never sent): with 4.5 million claims kept over 2,048 shards, ~5·10⁹ pairs share a
 * shard, so about 3·10⁻¹⁰ for a whole retention. Two sources of one event sharing 31 bits make the
 * second OWN instead of DUPLICATE while the first is not sent yet: it adds a job under the same job
 * id, which BullMQ ignores while the first job exists (then the claim is done: duplicate), so it is
 * a miscount, never a second send — about 5·10⁻¹⁰ per duplicate taken in.
 */
export function claimRecord(deliveryId: string, instantKey: string, sourceId: string): Buffer {
  const record = Buffer.alloc(RECORD_BYTES);
  hash('sha256', `${deliveryId}\n${instantKey}`, 'buffer').copy(record, 0, 0, 8);
  hash('sha256', sourceId, 'buffer').copy(record, 8, 0, 4);
  record[8] = record[8]! & 0x7f;
  return record;
}
