/**
 * The event chain of the push gate, step by step against a real Redis and real BullMQ jobs: the
 * cases behind issue 19, where a delivery's later event went out before (or beside) an earlier one.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys } from '../../src/store/keys.js';
import type { CollectingJob } from '../../src/store/payloads.js';
import { createPushGate, type PushGate } from '../../src/gate/push-gate.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('chain');
const keys = createKeys(prefix);
let redis: Redis;
let queue: Queue;
let gate: PushGate;
const GRACE_MS = 400;

beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
  queue = new Queue('collecting', { connection: redis, prefix });
  gate = createPushGate(redis, keys, 'carrier-key', {
    ratePerMinute: 1000,
    maxRequestMs: 5000,
    lockMs: 10_000,
    retentionSec: 3600,
    missingJobGraceMs: GRACE_MS,
  });
});
afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await cleanupPrefix(prefix);
});

let deliveries = 0;
/** A delivery's events, `count` instants a minute apart, with their job ids. */
function eventsOf(count: number): Array<{ job: CollectingJob; jobId: string }> {
  const deliveryId = `d-${(deliveries += 1)}`;
  return Array.from({ length: count }, (_, i) => {
    const epochMs = Date.UTC(2026, 0, 1, 12, i);
    const instantKey = String(epochMs);
    const job: CollectingJob = {
      kind: 'collecting',
      deliveryId,
      eventAt: new Date(epochMs).toISOString(),
      wire: new Date(epochMs).toISOString(),
      instantKey,
      epochMs,
      sourceId: `test:${deliveryId}:${i}`,
      origin: { source: 'cli' },
      receivedAt: new Date().toISOString(),
    };
    return { job, jobId: `collecting.${deliveryId}.${i}` };
  });
}
/** What enqueue.ts does, in its two steps: claim the instant and register in the chain, then add the jobs. */
const register = async (events: ReadonlyArray<{ job: CollectingJob; jobId: string }>): Promise<void> => {
  for (const { job, jobId } of events) {
    await redis.hset(keys.dedup(job.deliveryId), job.instantKey, job.sourceId);
    await redis.zadd(keys.eventOrder(job.deliveryId), job.epochMs, jobId);
  }
};
const add = async (events: ReadonlyArray<{ job: CollectingJob; jobId: string }>): Promise<void> => {
  await queue.addBulk(events.map(({ job, jobId }) => ({ name: 'collecting', data: job, opts: { jobId } })));
};
const slotOf = (verdict: Awaited<ReturnType<PushGate['enter']>>): { slot: string; respondedAt: number } => {
  if (verdict.action !== 'go') throw new Error(`expected go, got ${JSON.stringify(verdict)}`);
  return { slot: verdict.slot, respondedAt: performance.now() };
};

describe('the event chain of the push gate', () => {
  it('keeps an earlier event registered while its job is still being added (a file queued in chunks)', async () => {
    const [e0, e1, e2] = eventsOf(3) as [{ job: CollectingJob; jobId: string }, { job: CollectingJob; jobId: string }, { job: CollectingJob; jobId: string }];
    // Chunk 1 holds the first event; chunk 2 (the other two) is registered, its jobs not added yet.
    await register([e0]);
    await add([e0]);
    const first = await gate.enter(e0.job, e0.jobId);
    await register([e1, e2]);
    // The first event ends in the gap between chunk 2's registering and its adding.
    expect(await gate.leave(e0.job, e0.jobId, slotOf(first), 'accepted')).toBeNull();
    await add([e1, e2]);
    // Before the fix, that leave dropped e1 and e2 from the chain (no job yet): e2 went first.
    expect((await gate.enter(e2.job, e2.jobId)).action).toBe('park');
    const second = await gate.enter(e1.job, e1.jobId);
    expect(second.action).toBe('go');
    expect((await gate.enter(e2.job, e2.jobId)).action).toBe('park');
    expect(await gate.leave(e1.job, e1.jobId, slotOf(second), 'accepted')).toBe(e2.jobId);
    expect((await gate.enter(e2.job, e2.jobId)).action).toBe('go');
  });

  it('drops a registered event whose job never comes, once the grace is over', async () => {
    const [e0, e1] = eventsOf(2) as [{ job: CollectingJob; jobId: string }, { job: CollectingJob; jobId: string }];
    await register([e0, e1]);
    await add([e1]);
    // e0's job never comes (the queueing process died between the two steps).
    expect((await gate.enter(e1.job, e1.jobId)).action).toBe('park');
    const since = Date.now();
    await waitFor(async () => (await gate.enter(e1.job, e1.jobId)).action === 'go', { timeoutMs: 5000, intervalMs: 50, what: 'e1 to go' });
    expect(Date.now() - since).toBeGreaterThanOrEqual(GRACE_MS - 50);
  });

  it('does not send an event again that another run of its job settled (a stalled job taken over)', async () => {
    const [e0, e1] = eventsOf(2) as [{ job: CollectingJob; jobId: string }, { job: CollectingJob; jobId: string }];
    await register([e0, e1]);
    await add([e0, e1]);
    const run1 = await gate.enter(e0.job, e0.jobId);
    expect(run1.action).toBe('go');
    // A second run of the same job (BullMQ judged the first stalled: its process was killed) goes on.
    const run2 = await gate.enter(e0.job, e0.jobId);
    expect(run2.action).toBe('go');
    expect(await gate.leave(e0.job, e0.jobId, slotOf(run2), 'accepted')).toBeNull();
    // The event is settled: a third run (the first one's process was alive after all) does not send it again.
    expect((await gate.enter(e0.job, e0.jobId)).action).toBe('already-accepted');
    expect((await gate.enter(e1.job, e1.jobId)).action).toBe('go');
  });

  it("holds a delivery's later event while the event lock is held, even when the earlier one left the chain", async () => {
    const [e0, e1] = eventsOf(2) as [{ job: CollectingJob; jobId: string }, { job: CollectingJob; jobId: string }];
    await register([e0, e1]);
    await add([e0, e1]);
    const first = await gate.enter(e0.job, e0.jobId);
    expect(first.action).toBe('go');
    // BullMQ finished e0's job while its request still runs (e.g. failed after too many stalls).
    await redis.hset(`${prefix}:collecting:${e0.jobId}`, 'finishedOn', Date.now());
    const verdict = await gate.enter(e1.job, e1.jobId);
    expect(verdict.action).toBe('busy');
    await gate.leave(e0.job, e0.jobId, slotOf(first), null);
    expect((await gate.enter(e1.job, e1.jobId)).action).toBe('go');
  });

  it('keeps the chain through a retry: the earlier event holds the later one until it ends', async () => {
    const [e0, e1] = eventsOf(2) as [{ job: CollectingJob; jobId: string }, { job: CollectingJob; jobId: string }];
    await register([e0, e1]);
    await add([e0, e1]);
    const attempt1 = await gate.enter(e0.job, e0.jobId);
    // A 5xx, a 429 or a 401: the item goes on (result null), its lock is released.
    expect(await gate.leave(e0.job, e0.jobId, slotOf(attempt1), null)).toBeNull();
    expect((await gate.enter(e1.job, e1.jobId)).action).toBe('park');
    const attempt2 = await gate.enter(e0.job, e0.jobId);
    expect(attempt2.action).toBe('go');
    expect(await gate.leave(e0.job, e0.jobId, slotOf(attempt2), 'dead-lettered')).toBe(e1.jobId);
    expect((await gate.enter(e1.job, e1.jobId)).action).toBe('go');
  });
});
