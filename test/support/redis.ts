import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { addRefusal, type Refusal } from '../../src/store/activity.js';
import type { Keys } from '../../src/store/keys.js';
import type { RedisConnection } from '../../src/store/redis.js';

/** The Redis every test uses (see global-redis.ts). */
export function testRedisUrl(): string {
  return inject('redisUrl');
}

/** A key prefix private to one test file, so files can run in parallel on one Redis. */
export function uniquePrefix(label = 't'): string {
  return `cs-test-${label}-${randomBytes(4).toString('hex')}`;
}

/** Deletes every key under `prefix` (and only those). */
export async function cleanupPrefix(prefix: string): Promise<void> {
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A local refusal as the watcher records it (in its claim's MULTI), on its own: for tests. */
export async function recordRefusal(redis: RedisConnection, keys: Keys, refusal: Refusal, atMs: number): Promise<void> {
  await addRefusal(redis.multi(), keys, refusal, atMs).exec();
}
