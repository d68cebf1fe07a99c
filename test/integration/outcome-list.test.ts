/**
 * The outcome messages of a spool on a real Redis (queue/outcome-list.ts, outcome/consumer.ts):
 * every message applied, a failed move tried again later and kept for good after the last attempt,
 * nothing removed by a process that does not hold the spool, and what an older version left in its
 * BullMQ outcome queue carried over.
 */
import { Queue } from 'bullmq';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import { createKeys, legacyOutcomeQueueName } from '../../src/store/keys.js';
import { MAX_ATTEMPTS, openOutcomeInbox, outcomeKeys, pushOutcome, retryDelayMs } from '../../src/queue/outcome-list.js';
import type { OutcomeMessage } from '../../src/store/payloads.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { startOutcomeConsumer, type OutcomeConsumer } from '../../src/outcome/consumer.js';
import { carryOverLegacyOutcomes } from '../../src/outcome/legacy-outcomes.js';
import { createJourneyWriter, epochDayOf, FLUSH_MS } from '../../src/journey/journey.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('outcomes');
const keys = createKeys(prefix);
const redis = connectRedis(testRedisUrl(), 'outcome-list-test');
const consumers: OutcomeConsumer[] = [];
let spoolCount = 0;
const newSpool = (): string => `spool${(spoolCount += 1)}`;

afterEach(async () => {
  while (consumers.length > 0) await consumers.pop()!.stop();
});
afterAll(async () => {
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

const message = (n: number): OutcomeMessage => ({
  kind: 'label',
  jobId: `label.d${n}.c${n}`,
  deliveryId: `d${n}`,
  result: 'accepted',
  origin: { source: 'spool', spoolId: 'x', fileName: `d${n}.pdf`, contentId: `c${n}` },
  attempts: 1,
  at: new Date(0).toISOString(),
});

function consume(spoolId: string, apply: (m: OutcomeMessage) => Promise<void>, isHeld: () => boolean = () => true): OutcomeConsumer {
  const consumer = startOutcomeConsumer({ redis, keys, spoolId, apply, isHeld, clock: systemClock, logger: silentLogger });
  consumers.push(consumer);
  return consumer;
}

describe('outcome messages', () => {
  it('applies every message once it holds the spool, whether written before it started or while it waits', async () => {
    const spoolId = newSpool();
    for (let n = 0; n < 100; n += 1) await pushOutcome(redis, keys, spoolId, message(n));
    const applied: string[] = [];
    const consumer = consume(spoolId, async (m) => void applied.push(m.jobId));
    await waitFor(() => applied.length === 100, { what: '100 outcomes applied' });
    // The consumer now waits on its blocking read: a new message wakes it.
    for (let n = 100; n < 150; n += 1) await pushOutcome(redis, keys, spoolId, message(n));
    await waitFor(() => applied.length === 150, { what: '150 outcomes applied' });
    await consumer.drain(5000);
    expect(new Set(applied).size).toBe(150);
    expect(await redis.llen(outcomeKeys(keys, spoolId).list)).toBe(0);
  });

  it("writes the journey steps its moves recorded in the batch's settle: with the messages' removal, not a round trip of their own", async () => {
    const spoolId = newSpool();
    const writer = createJourneyWriter(
      redis,
      keys,
      86_400,
      () => Date.now(),
      (error) => {
        throw error;
      },
    );
    const settled: number[] = [];
    const consumer = startOutcomeConsumer({
      redis,
      keys,
      spoolId,
      apply: async (m) => writer.add({ deliveryId: m.deliveryId, step: { k: 'l', s: 'archived', h: m.jobId, to: 'archive/labels/x/' } }),
      isHeld: () => true,
      takeJourneySteps: () => {
        settled.push(Date.now());
        return writer.takeCall();
      },
      clock: systemClock,
      logger: silentLogger,
    });
    consumers.push(consumer);
    for (let n = 0; n < 20; n += 1) await pushOutcome(redis, keys, spoolId, message(n));
    await consumer.drain(5000);
    expect(await redis.llen(outcomeKeys(keys, spoolId).list)).toBe(0);
    // Read at once: not left for the writer's own flush (FLUSH_MS later).
    const day = keys.journeyDay(epochDayOf(Date.now()));
    const recorded = await Promise.all(Array.from({ length: 20 }, (_, n) => redis.hget(day, `d${n}`)));
    expect(recorded.every((value) => value?.includes('"s":"archived"') === true)).toBe(true);
    expect(settled.length).toBeGreaterThan(0);
    expect(FLUSH_MS).toBeGreaterThanOrEqual(100);
    await writer.flush();
  });

  it('tries a failed move again later; the other messages of its batch are not held up', async () => {
    const spoolId = newSpool();
    let failuresLeft = 1;
    const applied: string[] = [];
    consume(spoolId, async (m) => {
      if (m.jobId === message(3).jobId && failuresLeft > 0) {
        failuresLeft -= 1;
        throw new Error('ENOSPC: no space left on device');
      }
      applied.push(m.jobId);
    });
    for (let n = 0; n < 10; n += 1) await pushOutcome(redis, keys, spoolId, message(n));
    await waitFor(() => applied.length === 9, { what: 'the nine other outcomes applied' });
    expect(applied).not.toContain(message(3).jobId);
    // The batch's settle (which schedules the retry) follows its moves, up to the consumer's gather later.
    await waitFor(async () => (await redis.zcard(outcomeKeys(keys, spoolId).retry)) === 1, { what: 'the failed outcome waiting for its retry' });
    // First retry after retryDelayMs(1) = 1 s.
    await waitFor(() => applied.includes(message(3).jobId), { what: 'the failed outcome applied on its retry', timeoutMs: 10_000 });
    expect(await redis.zcard(outcomeKeys(keys, spoolId).retry)).toBe(0);
  });

  it('schedules retries doubling from 1 s to at most an hour, and keeps a message for good after the last attempt', async () => {
    expect([1, 2, 3, 13, MAX_ATTEMPTS].map(retryDelayMs)).toEqual([1000, 2000, 4000, 3_600_000, 3_600_000]);
    const spoolId = newSpool();
    const inbox = openOutcomeInbox(redis, keys, spoolId);
    const k = outcomeKeys(keys, spoolId);
    await pushOutcome(redis, keys, spoolId, message(1));
    await pushOutcome(redis, keys, spoolId, message(2));
    const batch = await inbox.peek(10);
    const now = 1_000_000;
    const settle = await inbox.take({
      settled: {
        batch,
        failed: [
          { ...batch[0]!, error: 'EIO' },
          { ...batch[1]!, failures: MAX_ATTEMPTS - 1, error: 'EIO' },
        ],
      },
      read: 10,
      now,
    });
    // The read after the settle: both out of the list (one waits in the retry set).
    expect(settle.batch).toEqual([]);
    expect(await redis.llen(k.list)).toBe(0);
    expect(await redis.zrange(k.retry, 0, -1, 'WITHSCORES')).toEqual([expect.stringContaining(message(1).jobId), String(now + 1000)]);
    const kept = (await redis.lrange(k.failed, 0, -1)).map((raw) => JSON.parse(raw) as { message: OutcomeMessage; failures: number; error: string });
    expect(kept).toMatchObject([{ message: { jobId: message(2).jobId }, failures: MAX_ATTEMPTS, error: 'EIO' }]);
    expect((await inbox.take({ dueBy: now + 999, read: 10, now })).movedDue).toBe(0);
    // The due retry moved back to the list and read in the same call.
    const due = await inbox.take({ dueBy: now + 1000, read: 10, now });
    expect(due.movedDue).toBe(1);
    expect(due.batch.map((entry) => [entry.message.jobId, entry.failures])).toEqual([[message(1).jobId, 1]]);
    await inbox.close();
  });

  it('removes only the batch it applied when the list changed under it (a failover: the new primary lacks the newest, holds others)', async () => {
    const spoolId = newSpool();
    const inbox = openOutcomeInbox(redis, keys, spoolId);
    const k = outcomeKeys(keys, spoolId);
    for (const n of [1, 2, 3]) await pushOutcome(redis, keys, spoolId, message(n));
    const batch = await inbox.peek(10);
    expect(batch.map((entry) => entry.message.jobId)).toEqual([1, 2, 3].map((n) => message(n).jobId));
    // As the promoted replica has it: message 3 never reached it; 4 and 5 were pushed there since.
    await redis.rpop(k.list);
    for (const n of [4, 5]) await pushOutcome(redis, keys, spoolId, message(n));
    // The settle and the next read, one call: 4 and 5 are left, and read.
    const next = (await inbox.take({ settled: { batch, failed: [] }, read: 10, now: 1_000_000 })).batch;
    expect(next.map((entry) => entry.message.jobId)).toEqual([4, 5].map((n) => message(n).jobId));
    // The head unchanged: the batch goes as one trim.
    await pushOutcome(redis, keys, spoolId, message(6));
    const last = (await inbox.take({ settled: { batch: next, failed: [] }, read: 10, now: 1_000_000 })).batch;
    expect(last.map((entry) => entry.message.jobId)).toEqual([message(6).jobId]);
    // Applying a batch twice (a holder that died before its settle, then the next one): the second
    // settle finds none of it and removes nothing else.
    await inbox.take({ settled: { batch: next, failed: [] }, read: 0, now: 1_000_000 });
    expect((await inbox.peek(10)).map((entry) => entry.message.jobId)).toEqual([message(6).jobId]);
    await inbox.close();
  });

  it('sets an unreadable entry aside among the failed without holding up the messages behind it', async () => {
    const spoolId = newSpool();
    const k = outcomeKeys(keys, spoolId);
    await redis.rpush(k.list, 'not json', JSON.stringify({ no: 'message' }));
    await pushOutcome(redis, keys, spoolId, message(1));
    const applied: string[] = [];
    consume(spoolId, async (m) => void applied.push(m.jobId));
    await waitFor(() => applied.length === 1, { what: 'the readable outcome applied' });
    await waitFor(async () => (await redis.llen(k.failed)) === 2, { what: 'both unreadable entries kept as failed' });
    expect(applied).toEqual([message(1).jobId]);
    expect(await redis.llen(k.list)).toBe(0);
  });

  it('a process that does not hold the spool applies nothing and removes nothing', async () => {
    const spoolId = newSpool();
    let isHeld = false;
    const applied: string[] = [];
    consume(
      spoolId,
      async (m) => void applied.push(m.jobId),
      () => isHeld,
    );
    for (let n = 0; n < 5; n += 1) await pushOutcome(redis, keys, spoolId, message(n));
    // Bounded look for a wrong move: the consumer checks the lease each pass.
    await expect(waitFor(() => applied.length > 0, { timeoutMs: 1500 })).rejects.toThrow(/timed out/);
    expect(await redis.llen(outcomeKeys(keys, spoolId).list)).toBe(5);
    isHeld = true;
    await waitFor(() => applied.length === 5, { what: 'outcomes applied once the spool is held' });
  });

  it("carries over what an older version's BullMQ outcome queue held, then removes that queue", async () => {
    const spoolId = newSpool();
    const legacy = new Queue<OutcomeMessage>(legacyOutcomeQueueName(spoolId), { connection: redis, prefix });
    await legacy.add('outcome', message(1), { jobId: 'a' });
    await legacy.add('outcome', message(2), { jobId: 'b', delay: 60_000 });
    await legacy.close();
    expect(await carryOverLegacyOutcomes(redis, keys, spoolId, silentLogger)).toBe(2);
    const inbox = openOutcomeInbox(redis, keys, spoolId);
    expect((await inbox.peek(10)).map((entry) => entry.message.jobId).sort()).toEqual([message(1).jobId, message(2).jobId]);
    expect(await redis.keys(`${prefix}:${legacyOutcomeQueueName(spoolId)}:*`)).toEqual([]);
    // Nothing left to carry: one EXISTS and done.
    expect(await carryOverLegacyOutcomes(redis, keys, spoolId, silentLogger)).toBe(0);
    await inbox.close();
  });
});
