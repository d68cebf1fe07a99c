/**
 * Upgrading from the earlier document record layout (one `doc:<kind>:<delivery>` hash each) on a
 * real Redis: the marks and the re-drop memory are carried over into the compact records, a mark a
 * process of this version already wrote is kept when it is newer, and it runs once.
 */
import { afterAll, expect, it } from 'vitest';
import { createKeys } from '../../src/queue/keys.js';
import { documentGeneration, migrateDocumentRecords, queueDocumentOrder } from '../../src/queue/push-gate.js';
import { closeRedis, connectRedis } from '../../src/queue/redis.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('doc-migrate');
const keys = createKeys(prefix);
const redis = connectRedis(testRedisUrl(), 'doc-migrate-test');
const RETENTION = 3600;

afterAll(async () => {
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

const gen = (n: number): string => documentGeneration(1_790_000_000_000 + n, 1_790_000_000_000_000 + n);
const A = '0123456789abcdef';
const B = 'fedcba9876543210';
const C = '00112233445566aa';

it('carries the marks and the re-drop memory over, keeps a newer mark written since, and runs once', async () => {
  // D1: label B marked at gen 5, the API holds A. D2: a CT-e marked, nothing accepted yet.
  await redis.hset(`${prefix}:doc:label:D1`, 'g', gen(5), 'c', B, 's', A);
  await redis.hset(`${prefix}:doc:cte:D2`, 'g', gen(5), 'c', C);
  // D3: a process of this version already marked gen 9; the old layout still says gen 5.
  expect(await queueDocumentOrder(redis, keys, 'label', 'D3', gen(9), C, RETENTION)).toBe('queue');
  await redis.hset(`${prefix}:doc:label:D3`, 'g', gen(5), 'c', A, 's', A);
  // A delivery id with a ':' in it, and a UUID (hashed in its field).
  const uuid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
  await redis.hset(`${prefix}:doc:label:${uuid}`, 'g', gen(5), 'c', A, 's', A);

  expect(await migrateDocumentRecords(redis, keys, RETENTION)).toBe(4);
  expect(await redis.keys(`${prefix}:doc:*`)).toEqual([]);

  // D1: an older version is still older than the carried mark; a newer drop of A is what the API holds.
  expect(await queueDocumentOrder(redis, keys, 'label', 'D1', gen(4), C, RETENTION)).toBe('older');
  expect(await queueDocumentOrder(redis, keys, 'label', 'D1', gen(6), A, RETENTION)).toBe('accepted');
  // D2: the mark came over; the API holds nothing.
  expect(await queueDocumentOrder(redis, keys, 'cte', 'D2', gen(4), A, RETENTION)).toBe('older');
  expect(await queueDocumentOrder(redis, keys, 'cte', 'D2', gen(6), C, RETENTION)).toBe('queue');
  // D3: the newer mark (gen 9) stayed; the held content came from the old record.
  expect(await queueDocumentOrder(redis, keys, 'label', 'D3', gen(8), C, RETENTION)).toBe('older');
  expect(await queueDocumentOrder(redis, keys, 'label', 'D3', gen(10), A, RETENTION)).toBe('accepted');
  expect(await queueDocumentOrder(redis, keys, 'label', uuid, gen(6), A, RETENTION)).toBe('accepted');

  // Once done, a later start does not scan again.
  await redis.hset(`${prefix}:doc:label:D4`, 'g', gen(5), 'c', A);
  expect(await migrateDocumentRecords(redis, keys, RETENTION)).toBe(0);
});
