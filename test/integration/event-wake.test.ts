/**
 * Waking a parked event (issue 23): the push gate's leave moves it from BullMQ's delayed set to the
 * front of the wait list, so a real BullMQ worker takes it before a backlog queued meanwhile, and an
 * idle worker is woken at once (the marker). Against a real Redis, real BullMQ queues and workers.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { wakeEvent } from '../../src/gate/event-wake.js';
import { createKeys } from '../../src/store/keys.js';
import type { CollectingJob } from '../../src/store/payloads.js';
import { cliEventJob } from '../support/builders.js';
import { createPushGate, type PushGate } from '../../src/gate/push-gate.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('wake');
const keys = createKeys(prefix);
/** Longer than any bound below: a parked job never falls due by itself in a test. */
const PARKED_MS = 600_000;
let redis: Redis;
let queue: Queue;
let gate: PushGate;
const workers: Worker[] = [];

beforeAll(() => {
  redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  queue = new Queue('collecting', { connection: redis, prefix });
  gate = createPushGate(redis, keys, 'carrier-key', { ratePerMinute: 100_000, maxRequestMs: 5000, lockMs: 10_000, retentionSec: 3600 });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map(async (worker) => worker.close()));
  await queue.obliterate({ force: true });
});
afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await cleanupPrefix(prefix);
});

let deliveries = 0;
type Event = { job: CollectingJob; jobId: string };
function eventsOf(count: number): Event[] {
  const deliveryId = `d-${(deliveries += 1)}`;
  return Array.from({ length: count }, (_, i) => cliEventJob(deliveryId, i));
}

/**
 * A delivery's two events as the processor leaves them: the first one sent (its job gone from the
 * wait list, as a taken job is), the second parked in delayed. Returns the first one's slot.
 */
async function firstSentSecondParked([e0, e1]: [Event, Event]): Promise<{ slot: string; respondedAt: number }> {
  for (const { job, jobId } of [e0, e1]) {
    await redis.hset(keys.dedup(job.deliveryId), job.instantKey, job.sourceId);
    await redis.zadd(keys.eventOrder(job.deliveryId), job.epochMs, jobId);
  }
  // Delayed too, so a running worker cannot take (and finish) it before the gate lets it go.
  await queue.add('collecting', e0.job, { jobId: e0.jobId, delay: PARKED_MS });
  await queue.add('collecting', e1.job, { jobId: e1.jobId, delay: PARKED_MS });
  const go = await gate.enter(e0.job, e0.jobId);
  if (go.action !== 'go') throw new Error(`expected go, got ${JSON.stringify(go)}`);
  await queue.remove(e0.jobId);
  expect((await gate.enter(e1.job, e1.jobId)).action).toBe('park');
  return { slot: go.slot, respondedAt: performance.now() };
}

const backlogOf = async (n: number): Promise<string[]> => {
  const ids = Array.from({ length: n }, (_, i) => `collecting.backlog-${deliveries}.${i}`);
  await queue.addBulk(ids.map((jobId) => ({ name: 'collecting', data: {}, opts: { jobId } })));
  return ids;
};

/** A worker that records the jobs it takes, in order. */
function recordingWorker(taken: string[]): void {
  const connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  const worker = new Worker(
    'collecting',
    async (job) => {
      taken.push(String(job.id));
      return 'ok';
    },
    // drainDelay (s): an idle worker not woken by the marker would sleep this long.
    { connection, prefix, concurrency: 1, drainDelay: 30 },
  );
  worker.on('closed', () => connection.disconnect());
  workers.push(worker);
}

describe('waking a parked event', () => {
  it('puts it at the front of the wait list: a worker takes it before the backlog queued meanwhile', async () => {
    const [e0, e1] = eventsOf(2) as [Event, Event];
    const slot = await firstSentSecondParked([e0, e1]);
    const backlog = await backlogOf(50);
    expect(await gate.leave(e0.job, e0.jobId, slot, 'accepted')).toBe(e1.jobId);
    expect(await queue.getJobState(e1.jobId)).toBe('waiting');
    expect(await redis.hget(`${prefix}:collecting:${e1.jobId}`, 'delay')).toBe('0');
    const taken: string[] = [];
    recordingWorker(taken);
    await waitFor(() => taken.length >= 3, { timeoutMs: 10_000, what: 'three jobs taken' });
    // Before: BullMQ's promote put it behind the whole backlog (LPUSH), or it waited out its delay.
    expect(taken.slice(0, 3)).toEqual([e1.jobId, backlog[0], backlog[1]]);
  });

  it('wakes an idle worker at once', async () => {
    const [e0, e1] = eventsOf(2) as [Event, Event];
    const taken: string[] = [];
    recordingWorker(taken);
    await workers[0]?.waitUntilReady();
    const slot = await firstSentSecondParked([e0, e1]);
    await gate.leave(e0.job, e0.jobId, slot, 'accepted');
    // Without the marker the worker would sleep until drainDelay (30 s) or the job's delay ran out.
    await waitFor(() => taken.includes(e1.jobId), { timeoutMs: 5_000, intervalMs: 10, what: 'the woken event taken' });
  });

  it('lets a parked event that its waker missed wake itself, to the front; a job not in delayed is left alone', async () => {
    const [e0, e1] = eventsOf(2) as [Event, Event];
    await firstSentSecondParked([e0, e1]);
    const backlog = await backlogOf(5);
    expect(await wakeEvent(redis, keys, e1.jobId)).toBe(true);
    expect(await wakeEvent(redis, keys, e1.jobId)).toBe(false);
    expect(await wakeEvent(redis, keys, backlog[0] ?? '')).toBe(false);
    expect(await queue.getWaitingCount()).toBe(6);
    const taken: string[] = [];
    recordingWorker(taken);
    await waitFor(() => taken.length >= 6, { timeoutMs: 10_000, what: 'every job taken' });
    expect(taken).toEqual([e1.jobId, ...backlog]);
  });
});
