/**
 * Changing `delivery.completedRetentionSec` keeps the document order and the re-drop memory on a
 * real Redis: the records' bucket period is the deployment's (fixed by its first process, an
 * eighth of the retention it ran with), so a process with another retention reads the records
 * written before. Found in issue 46's seventh session: with a period derived from each process'
 * retention, an older version dropped again after the change was queued ('queue') instead of
 * superseded ('older'), and sent over the newer one.
 */
import { afterAll, expect, it } from 'vitest';
import { createKeys } from '../../src/store/keys.js';
import { documentBucketSec, documentGeneration, queueDocumentOrders, type DocumentQueueVerdict } from '../../src/gate/document-record.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('doc-retention');
const keys = createKeys(prefix);
const redis = connectRedis(testRedisUrl(), 'doc-retention-test');

afterAll(async () => {
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

/** One document's order as a process with this retention queues it (each retention reads the deployment's period itself). */
async function queueAt(retentionSec: number, deliveryId: string, generation: string, contentId: string): Promise<DocumentQueueVerdict> {
  const [result] = await queueDocumentOrders(redis, keys, [{ kind: 'label', deliveryId, generation, contentId }], retentionSec);
  if (result === undefined || 'error' in result) throw result?.error ?? new Error('no result');
  return result.value;
}

const gen = (n: number): string => documentGeneration(1_790_000_000_000 + n, 1_790_000_000_000_000 + n);
const A = '0123456789abcdef';
const B = 'fedcba9876543210';

it('an older version dropped after the retention changed, longer or shorter, is still older', async () => {
  const days = 86_400;
  expect(await queueAt(7 * days, 'D1', gen(9), A)).toBe('queue');
  // The first process fixed the deployment's period: an eighth of its retention, as before the period was kept.
  expect(Number(await redis.get(keys.documentPeriod))).toBe(documentBucketSec(7 * days));
  expect(await redis.ttl(keys.documentPeriod)).toBe(-1);

  for (const retention of [30 * days, 14 * days, 1 * days, 3600]) {
    expect(await queueAt(retention, 'D1', gen(5), B), `retention ${retention} s`).toBe('older');
    expect(Number(await redis.get(keys.documentPeriod))).toBe(documentBucketSec(7 * days));
  }
  // A record written under a longer retention is read under the first one too.
  expect(await queueAt(30 * days, 'D2', gen(9), A)).toBe('queue');
  expect(await queueAt(7 * days, 'D2', gen(5), B)).toBe('older');
  // A newer one still wins.
  expect(await queueAt(14 * days, 'D1', gen(10), B)).toBe('queue');
});
