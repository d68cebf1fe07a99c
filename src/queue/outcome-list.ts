/**
 * The outcome messages of one spool: how each item that came from a file ended, on its way back to
 * the process that holds the spool (which moves the file). A plain Redis list rather than a BullMQ
 * queue: a message is written once (RPUSH, by the gate's leave script with the answer) and read in
 * batches by the one holder of the spool, who removes a batch only after applying it (SETTLE_BATCH:
 * by the entries' identity, so a list changed by a failover loses nothing). A
 * holder that dies mid-batch leaves the batch at the head of the list for the next holder; applying
 * an outcome is idempotent, so applying one twice moves nothing twice.
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
import type { ChainableCommander } from 'ioredis';
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

// Moves retries whose time has come back to the end of the list, 256 at most.
// KEYS: 1 the list, 2 the retry set (scored by due time). ARGV: 1 now ms. Returns how many moved.
const MOVE_DUE = defineScript(
  'outcomesMoveDue',
  `
local listKey, retryKey = KEYS[1], KEYS[2]
local nowMs = ARGV[1]
local due = redis.call('ZRANGEBYSCORE', retryKey, '-inf', nowMs, 'LIMIT', 0, 256)
if #due > 0 then
  redis.call('RPUSH', listKey, unpack(due))
  redis.call('ZREM', retryKey, unpack(due))
end
return #due
`,
);

// Removes a settled batch from the head of the list: the entries `peek` read, named by their SHA-1s.
// The head is the batch unless the list changed under it, which only a failover does (the batch was
// read from the old primary; the new one may lack its newest entries, and hold others pushed since):
// then only the batch's own entries among the head are removed, and the rest stays to be applied. A
// count-based LTRIM would have removed messages never applied (their file never moved).
// KEYS: 1 the list. ARGV: the SHA-1 of each entry of the batch, in list order. Returns how many removed.
const SETTLE_BATCH = defineScript(
  'outcomesSettle',
  `
local listKey = KEYS[1]
local n = #ARGV
local head = redis.call('LRANGE', listKey, 0, n - 1)
local same = #head == n
local shas = {}
for i = 1, #head do
  shas[i] = redis.sha1hex(head[i])
  if shas[i] ~= ARGV[i] then same = false end
end
if same then
  redis.call('LTRIM', listKey, n, -1)
  return n
end
local wanted = {}
for i = 1, n do wanted[ARGV[i]] = (wanted[ARGV[i]] or 0) + 1 end
local removed = 0
for i = 1, #head do
  local left = wanted[shas[i]]
  if left ~= nil and left > 0 then
    wanted[shas[i]] = left - 1
    removed = removed + redis.call('LREM', listKey, 1, head[i])
  end
end
return removed
`,
);

/** Consumer side: only the holder of the spool's lease reads and removes. */
export interface OutcomeInbox {
  /** The oldest `max` messages, not removed (a batch is removed by `settle`). */
  peek(max: number): Promise<OutcomeEntry[]>;
  /**
   * Removes `batch` (the messages just applied, as `peek` read them) from the list and schedules the
   * failed ones of it again, or keeps them as failed for good after MAX_ATTEMPTS; one MULTI, which
   * `ride` may add to (the journey's file-end steps of the batch).
   */
  settle(
    batch: readonly OutcomeEntry[],
    failed: ReadonlyArray<OutcomeEntry & { error: string }>,
    now: number,
    ride?: (multi: ChainableCommander) => void,
  ): Promise<void>;
  /** Retries whose time has come go back to the list. */
  moveDue(now: number): Promise<number>;
  /** Waits (on its own connection) until the list holds a message, at most `maxMs`. */
  waitForMessages(maxMs: number): Promise<void>;
  /** Messages waiting in the list and in the retry set. */
  pending(): Promise<{ waiting: number; retrying: number }>;
  close(): Promise<void>;
}

export function openOutcomeInbox(redis: RedisConnection, keys: Keys, spoolId: string): OutcomeInbox {
  const k = outcomeKeys(keys, spoolId);
  SETTLE_BATCH.define(redis);
  // A blocking command holds its connection: the wait gets one of its own, made on first use.
  let blocking: RedisConnection | null = null;
  let isClosed = false;
  return {
    async peek(max) {
      const stored = await redis.lrangeBuffer(k.list, 0, max - 1);
      return stored.map((bytes) => ({ ...parseEntry(bytes.toString('utf8')), storedSha1: hash('sha1', bytes, 'hex') }));
    },
    async settle(batch, failed, now, ride) {
      const multi = redis.multi();
      ride?.(multi);
      const shas = batch.flatMap((entry) => entry.storedSha1 ?? []);
      if (shas.length > 0) SETTLE_BATCH.queue(multi, [k.list], shas);
      for (const entry of failed) {
        const failures = entry.failures + 1;
        const stored = JSON.stringify({ message: entry.message, failures } satisfies OutcomeEntry);
        if (failures >= MAX_ATTEMPTS)
          multi.lpush(k.failed, JSON.stringify({ message: entry.message, failures, error: entry.error, at: new Date(now).toISOString() }));
        else multi.zadd(k.retry, now + retryDelayMs(failures), stored);
      }
      if (failed.some((entry) => entry.failures + 1 >= MAX_ATTEMPTS)) multi.ltrim(k.failed, 0, FAILED_KEPT - 1);
      await multi.exec();
    },
    async moveDue(now) {
      return Number(await MOVE_DUE(redis, [k.list, k.retry], [now]));
    },
    async waitForMessages(maxMs) {
      if (isClosed) return;
      if (blocking === null) {
        blocking = redis.duplicate();
        // Its errors are the main connection's (same server, same moments), which reports them once
        // per outage (redis-health.ts); without a listener ioredis prints each one as plain text.
        blocking.on('error', () => {});
      }
      // Source and destination the same, head to head: nothing changes; it only returns once the
      // list has a message (or after the timeout, in seconds).
      await blocking.blmove(k.list, k.list, 'LEFT', 'LEFT', Math.max(0.01, maxMs / 1000)).catch((error: unknown) => {
        if (!isClosed) throw error;
      });
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
