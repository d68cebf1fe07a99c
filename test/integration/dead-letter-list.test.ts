/**
 * Listing dead letters on a real Redis: every one by default (`dlq list`), or only the newest of
 * each kind (the overview page, which must not read thousands of jobs on every refresh), each with
 * its last attempt's error from the attempt log.
 */
import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, expect, it } from 'vitest';
import { createAttemptLog } from '../../src/queue/attempts.js';
import { listDeadLetters } from '../../src/queue/dead-letter.js';
import { createDedupMemory } from '../../src/gate/event-claims.js';
import { createKeys } from '../../src/store/keys.js';
import { openQueues } from '../../src/queue/queues.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { TEST_DELIVERY } from '../support/delivery.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix('dlq-list');
const redis = connectRedis(testRedisUrl(), 'dlq-list-test');
const keys = createKeys(prefix);
const queues = openQueues(redis, prefix, TEST_DELIVERY);
const attempts = createAttemptLog(redis, keys);

afterAll(async () => {
  await queues.close();
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

it('lists every dead letter, or the newest of each kind, with the last error of its attempt log', async () => {
  for (let n = 1; n <= 3; n += 1) {
    const jobId = `label.D${n}.c${n}`;
    await attempts.record(jobId, {
      attempt: 1,
      at: `2026-01-0${n}T00:00:00.000Z`,
      code: 'API_NOT_FOUND',
      message: 'no such delivery',
      status: 404,
      apiCode: 'DELIVERY_NOT_FOUND',
    });
    await queues.items.label.add('label', { kind: 'label', deliveryId: `D${n}`, origin: { source: 'cli' } } as never, { jobId });
  }
  // One worker at a time, so the jobs fail (and are stamped) in the order they were added.
  const worker = new Worker(
    'label',
    async () => {
      throw new UnrecoverableError('API_NOT_FOUND: no such delivery');
    },
    { connection: redis, prefix, concurrency: 1 },
  );
  try {
    await waitFor(async () => (await queues.items.label.getFailedCount()) === 3, { what: 'three dead letters' });
  } finally {
    await worker.close();
  }
  const deps = { queues, attempts, dedup: createDedupMemory(redis, keys, 30) };
  const all = await listDeadLetters(deps);
  expect(all.map((l) => [l.id, l.deliveryId, l.apiCode, l.status, l.lastFailureAt])).toEqual([
    ['label.D1.c1', 'D1', 'DELIVERY_NOT_FOUND', 404, '2026-01-01T00:00:00.000Z'],
    ['label.D2.c2', 'D2', 'DELIVERY_NOT_FOUND', 404, '2026-01-02T00:00:00.000Z'],
    ['label.D3.c3', 'D3', 'DELIVERY_NOT_FOUND', 404, '2026-01-03T00:00:00.000Z'],
  ]);
  const newest = await listDeadLetters(deps, { latestPerKind: 2 });
  expect(newest.map((l) => l.id)).toEqual(['label.D2.c2', 'label.D3.c3']);
});
