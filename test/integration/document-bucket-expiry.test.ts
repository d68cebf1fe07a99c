/**
 * A document record's bucket gets its expiry once, when the bucket is made (its marker, the empty
 * field, is new then), not with every new record written into it (issue 46: a command a new
 * document). A bucket of a version before the marker gets it once more. Real Redis.
 */
import { afterAll, expect, it } from 'vitest';
import { createKeys, documentShardOf } from '../../src/store/keys.js';
import { documentGeneration, queueDocumentOrders, type DocumentQueueVerdict } from '../../src/gate/document-record.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('doc-bucket');
const keys = createKeys(prefix);
const redis = connectRedis(testRedisUrl(), 'doc-bucket-test');
const WEEK = 7 * 86_400;

afterAll(async () => {
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

async function queue(deliveryId: string, n: number, contentId: string): Promise<DocumentQueueVerdict> {
  const generation = documentGeneration(1_790_000_000_000 + n, 1_790_000_000_000_000 + n);
  const [result] = await queueDocumentOrders(redis, keys, [{ kind: 'label', deliveryId, generation, contentId }], WEEK);
  if (result === undefined || 'error' in result) throw result?.error ?? new Error('no result');
  return result.value;
}

/** Delivery ids whose records share one shard hash (so one bucket key). */
function sameShard(count: number): string[] {
  const byShard = new Map<number, string[]>();
  for (let i = 0; ; i += 1) {
    const id = `D${i}`;
    const ids = byShard.get(documentShardOf(id)) ?? [];
    ids.push(id);
    byShard.set(documentShardOf(id), ids);
    if (ids.length === count) return ids;
  }
}

async function bucketKeyOf(deliveryId: string): Promise<string> {
  const found = await redis.keys(`${keys.documentRecords(deliveryId)}*`);
  expect(found).toHaveLength(1);
  return found[0]!;
}

it('sets a bucket’s expiry when the bucket is made, not with each new record; a bucket without the marker gets it once more', async () => {
  const [a, b, c] = sameShard(3) as [string, string, string];
  expect(await queue(a, 9, '0123456789abcdef')).toBe('queue');
  const bucket = await bucketKeyOf(a);
  expect(await redis.ttl(bucket)).toBeGreaterThan(WEEK);
  expect(await redis.hget(bucket, '')).toBe('');

  // The bucket's expiry taken away: a new record in it does not set it again.
  await redis.persist(bucket);
  expect(await queue(b, 9, '0123456789abcdef')).toBe('queue');
  expect(await redis.ttl(bucket)).toBe(-1);
  // The records are read as before, the marker beside them.
  expect(await queue(a, 5, 'fedcba9876543210')).toBe('older');
  expect(await queue(b, 5, 'fedcba9876543210')).toBe('older');

  // A bucket of a version before the marker (no empty field): its next new record sets the expiry.
  await redis.hdel(bucket, '');
  expect(await queue(c, 9, '0123456789abcdef')).toBe('queue');
  expect(await redis.ttl(bucket)).toBeGreaterThan(WEEK);
  expect(await redis.hlen(bucket)).toBe(4);
});
