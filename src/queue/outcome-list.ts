/**
 * The outcome messages of one spool: how each item that came from a file ended, on its way back to
 * the process that holds the spool (which moves the file). A plain Redis list rather than a BullMQ
 * queue: a message is written once (RPUSH, by the gate's leave script with the answer) and read in
 * batches by the one holder of the spool, who removes a batch only after applying it (`take`: by
 * the entries' identity, so a list changed by a failover loses nothing), in the call that reads the
 * next batch. A holder that dies mid-batch leaves the batch at the head of the list for the next
 * holder; applying an outcome is idempotent, so applying one twice moves nothing twice.
 *
 * Why not a BullMQ job per message (as before): each cost an add, an activation and a finish — three
 * scripts with their event-stream writes, plus a job hash, for a message read once by one consumer.
 * In the mixed-drop profile that was a third of the daemon's BullMQ work (BENCHMARKS.md, issue 14).
 *
 * A message whose move fails (a full disk, a share gone) is tried again later: it waits in a sorted
 * set scored by its next attempt's time (1 s doubling to 1 h, about a day over MAX_ATTEMPTS), then
 * goes back to the list. After the last attempt it is kept in the spool's `failed` list (the newest
 * FAILED_KEPT) and the file stays in `.inflight/`, where the periodic reconcile takes it up again.
 */
import { hash } from 'node:crypto';
import { JOURNEY_APPEND_LUA } from '../journey/journey.js';
import type { Keys } from '../store/keys.js';
import type { OutcomeMessage } from '../store/payloads.js';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';

export const MAX_ATTEMPTS = 30;
const FAILED_KEPT = 10_000;
const FIRST_RETRY_MS = 1000;
const LONGEST_RETRY_MS = 3_600_000;

/** A message as stored: the outcome, and how many times applying it failed so far. */
export interface OutcomeEntry {
  message: OutcomeMessage;
  failures: number;
  /** Not an outcome message (kept among the failed without being applied). */
  isUnreadable?: boolean;
  /** SHA-1 of the entry as stored, when it was read from the list: `settle` removes it by this. */
  storedSha1?: string;
}

export function outcomeKeys(keys: Keys, spoolId: string): { list: string; retry: string; failed: string } {
  const list = keys.outcomes(spoolId);
  return { list, retry: `${list}:retry`, failed: `${list}:failed` };
}

/** A new message as stored. The push path appends it in the gate's leave script (the answer is one write). */
export function outcomeEntryJson(message: OutcomeMessage): string {
  return JSON.stringify({ message, failures: 0 } satisfies OutcomeEntry);
}

/** Appends one message (a carried-over legacy outcome; tests). */
export async function pushOutcome(redis: RedisConnection, keys: Keys, spoolId: string, message: OutcomeMessage): Promise<void> {
  await redis.rpush(outcomeKeys(keys, spoolId).list, outcomeEntryJson(message));
}

export function retryDelayMs(failures: number): number {
  return Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, failures - 1));
}

// One call a batch (issue 46: the outcome side was a wake, a read, a MULTI with the settle and the
// journey's steps, and a due-retries move, 2.0 round trips a label): settles the batch just
// applied, keeps its failed ones for later, appends the journey's steps that ride on it, moves the
// retries that came due back to the list, then reads the next batch. Each part may be empty: the
// first read after a wait settles nothing.
//
// The settle removes the batch by its entries' identity (SHA-1s, as read): the head is the batch
// unless the list changed under it, which only a failover does (the batch was read from the old
// primary; the new one may lack its newest entries, and hold others pushed since): then only the
// batch's own entries among the head are removed, and the rest stays to be applied. A count-based
// LTRIM would have removed messages never applied (their file never moved).
//
// KEYS: 1 the list, 2 the retry set (scored by due time), 3 the failed list, then (when steps ride
// on the call) the journey's keys, `journeyAppend`'s (journey/journey.ts) from KEYS[4].
// ARGV: 1 due by (ms; '' looks at no retry), 2 how many to read (0: none), 3 n, the batch's size,
// 4 m, its failed ones; then the SHA-1 of each of the n entries in list order; then per failed
// one: 'retry' or 'failed', the retry's due time (ms, '' for failed), the entry to keep; then the
// journey's arguments. Returns {moved due, then per entry read: its SHA-1, the entry}.
const TAKE = defineScript(
  'outcomesTake',
  `${JOURNEY_APPEND_LUA}
local listKey, retryKey, failedKey = KEYS[1], KEYS[2], KEYS[3]
local dueBy, readCount, n, m = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if n > 0 then
  local head = redis.call('LRANGE', listKey, 0, n - 1)
  local same = #head == n
  local shas = {}
  for i = 1, #head do
    shas[i] = redis.sha1hex(head[i])
    if shas[i] ~= ARGV[4 + i] then same = false end
  end
  if same then
    redis.call('LTRIM', listKey, n, -1)
  else
    local wanted = {}
    for i = 1, n do wanted[ARGV[4 + i]] = (wanted[ARGV[4 + i]] or 0) + 1 end
    for i = 1, #head do
      local left = wanted[shas[i]]
      if left ~= nil and left > 0 then
        wanted[shas[i]] = left - 1
        redis.call('LREM', listKey, 1, head[i])
      end
    end
  end
end
local a = 5 + n
local retries, kept = {}, {}
for _ = 1, m do
  if ARGV[a] == 'retry' then
    retries[#retries + 1] = ARGV[a + 1]
    retries[#retries + 1] = ARGV[a + 2]
  else
    kept[#kept + 1] = ARGV[a + 2]
  end
  a = a + 3
end
if #retries > 0 then redis.call('ZADD', retryKey, unpack(retries)) end
if #kept > 0 then
  redis.call('LPUSH', failedKey, unpack(kept))
  redis.call('LTRIM', failedKey, 0, ${FAILED_KEPT - 1})
end
if #KEYS > 3 then journeyAppend(4, a, {}) end
local reply = {0}
if dueBy ~= '' then
  local due = redis.call('ZRANGEBYSCORE', retryKey, '-inf', dueBy, 'LIMIT', 0, 256)
  if #due > 0 then
    redis.call('RPUSH', listKey, unpack(due))
    redis.call('ZREM', retryKey, unpack(due))
  end
  reply[1] = #due
end
if readCount > 0 then
  for _, entry in ipairs(redis.call('LRANGE', listKey, 0, readCount - 1)) do
    reply[#reply + 1] = redis.sha1hex(entry)
    reply[#reply + 1] = entry
  end
end
return reply
`,
);

/** What one `take` call does, each part optional, in this order. */
export interface TakeRequest {
  /** The batch just applied (as a `take` read it): removed from the list; its failed ones kept for a retry, or for good. */
  settled?: { batch: readonly OutcomeEntry[]; failed: ReadonlyArray<OutcomeEntry & { error: string }> };
  /** The journey's steps that ride on the call (`journeyAppendCall`'s keys and arguments). */
  journey?: { keys: readonly string[]; args: ReadonlyArray<string | number> } | null;
  /** Retries due by this time (ms) go back to the end of the list. */
  dueBy?: number;
  /** Then reads the oldest this many messages, not removed (the next batch); 0 reads none. */
  read: number;
  /** Now (ms): the failed ones' next attempt is counted from it. */
  now: number;
}

/** Consumer side: only the holder of the spool's lease reads and removes. */
export interface OutcomeInbox {
  /**
   * Settles, writes the steps, moves due retries and reads the next batch, as asked: one script
   * call, all or nothing (a holder that dies before it leaves the batch to the next one).
   */
  take(request: TakeRequest): Promise<{ batch: OutcomeEntry[]; movedDue: number }>;
  /** The oldest `max` messages, not removed (a `take` that reads and nothing else). */
  peek(max: number): Promise<OutcomeEntry[]>;
  /**
   * Waits (on its own connection) until the list holds a message, at most `maxMs`; returns the
   * oldest message, not removed (a batch of one for `take` to settle), or null after the wait.
   */
  waitForMessages(maxMs: number): Promise<OutcomeEntry | null>;
  /** Messages waiting in the list and in the retry set. */
  pending(): Promise<{ waiting: number; retrying: number }>;
  close(): Promise<void>;
}

export function openOutcomeInbox(redis: RedisConnection, keys: Keys, spoolId: string): OutcomeInbox {
  const k = outcomeKeys(keys, spoolId);
  TAKE.define(redis);
  // A blocking command holds its connection: the wait gets one of its own, made on first use.
  let blocking: RedisConnection | null = null;
  let isClosed = false;
  const take: OutcomeInbox['take'] = async ({ settled, journey, dueBy, read, now }) => {
    const shas = settled?.batch.flatMap((entry) => entry.storedSha1 ?? []) ?? [];
    const failed = settled?.failed ?? [];
    const failedArgs = failed.flatMap((entry) => {
      const failures = entry.failures + 1;
      return failures >= MAX_ATTEMPTS
        ? ['failed', '', JSON.stringify({ message: entry.message, failures, error: entry.error, at: new Date(now).toISOString() })]
        : ['retry', now + retryDelayMs(failures), JSON.stringify({ message: entry.message, failures } satisfies OutcomeEntry)];
    });
    const reply = (await TAKE(
      redis,
      [k.list, k.retry, k.failed, ...(journey?.keys ?? [])],
      [dueBy ?? '', read, shas.length, failed.length, ...shas, ...failedArgs, ...(journey?.args ?? [])],
    )) as Array<number | string>;
    const batch: OutcomeEntry[] = [];
    for (let i = 1; i + 1 < reply.length; i += 2) batch.push({ ...parseEntry(String(reply[i + 1])), storedSha1: String(reply[i]) });
    return { batch, movedDue: Number(reply[0]) };
  };
  return {
    take,
    async peek(max) {
      return (await take({ read: max, now: Date.now() })).batch;
    },
    async waitForMessages(maxMs) {
      if (isClosed) return null;
      if (blocking === null) {
        blocking = redis.duplicate();
        // Its errors are the main connection's (same server, same moments), which reports them once
        // per outage (redis-health.ts); without a listener ioredis prints each one as plain text.
        blocking.on('error', () => {});
      }
      // Source and destination the same, head to head: nothing changes; it only returns once the
      // list has a message (or after the timeout, in seconds), and returns that message: the batch
      // that follows a wake needs no read of its own (the settle's call reads the rest).
      const head = await blocking.blmoveBuffer(k.list, k.list, 'LEFT', 'LEFT', Math.max(0.01, maxMs / 1000)).catch((error: unknown) => {
        if (!isClosed) throw error;
        return null;
      });
      return head === null ? null : { ...parseEntry(head.toString('utf8')), storedSha1: hash('sha1', head, 'hex') };
    },
    async pending() {
      const [waiting, retrying] = await Promise.all([redis.llen(k.list), redis.zcard(k.retry)]);
      return { waiting, retrying };
    },
    async close() {
      isClosed = true;
      blocking?.disconnect();
      blocking = null;
    },
  };
}

/** Per spool ever held: outcome messages waiting, waiting for a retry, and kept as failed for good. */
export async function readOutcomeBacklog(
  redis: RedisConnection,
  keys: Keys,
): Promise<Array<{ spoolId: string; waiting: number; retrying: number; failed: number }>> {
  const spoolIds = (await redis.smembers(keys.spools)).sort();
  const pipeline = redis.pipeline();
  for (const spoolId of spoolIds) {
    const k = outcomeKeys(keys, spoolId);
    pipeline.llen(k.list).zcard(k.retry).llen(k.failed);
  }
  const replies = ((await pipeline.exec()) ?? []).map(([error, value]) => {
    if (error !== null) throw error;
    return Number(value);
  });
  return spoolIds.map((spoolId, i) => ({ spoolId, waiting: replies[3 * i] ?? 0, retrying: replies[3 * i + 1] ?? 0, failed: replies[3 * i + 2] ?? 0 }));
}

/**
 * An entry that cannot be read (not JSON, no message) must not stop the ones behind it: it comes
 * out as its last attempt, with `unreadable`, so the consumer keeps it among the failed at once.
 */
/** The job ids whose outcome messages wait in a spool's list or its retry set (not yet applied). */
export async function pendingOutcomeJobIds(redis: RedisConnection, keys: Keys, spoolId: string): Promise<Set<string>> {
  const k = outcomeKeys(keys, spoolId);
  const [listed, retrying] = await Promise.all([redis.lrange(k.list, 0, -1), redis.zrange(k.retry, 0, -1)]);
  const entries = [...listed, ...retrying].map(parseEntry);
  return new Set(entries.flatMap((entry) => (entry.isUnreadable === true ? [] : [entry.message.jobId])));
}

function parseEntry(raw: string): OutcomeEntry {
  try {
    const parsed = JSON.parse(raw) as Partial<OutcomeEntry>;
    if (typeof parsed.message === 'object' && parsed.message !== null && typeof parsed.message.jobId === 'string') {
      return { message: parsed.message, failures: Number(parsed.failures ?? 0) || 0 };
    }
  } catch {
    // falls through
  }
  return { message: { unreadable: raw.slice(0, 2000) } as unknown as OutcomeMessage, failures: MAX_ATTEMPTS - 1, isUnreadable: true };
}
