/**
 * Upgrading from the earlier document record layout (one `doc:<kind>:<delivery>` hash each) on a
 * real Redis: the marks and the re-drop memory are carried over into the compact records, a mark a
 * process of this version already wrote is kept when it is newer, and it runs once.
 */
import { afterAll, expect, it } from 'vitest';
import { createKeys } from '../../src/store/keys.js';
import { documentGeneration, queueDocumentOrders, type DocumentQueueVerdict } from '../../src/gate/document-record.js';
import { createLogger } from '../../src/log.js';
import { runDeploymentUpgrades } from '../../src/runtime/upgrades.js';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('doc-migrate');
const keys = createKeys(prefix);
const redis = connectRedis(testRedisUrl(), 'doc-migrate-test');
const RETENTION = 3600;

afterAll(async () => {
  await closeRedis(redis);
  await cleanupPrefix(prefix);
});

/** One document's order, as claim and enqueue queue it. */
async function queueDocumentOrder(kind: 'label' | 'cte', deliveryId: string, generation: string, contentId: string): Promise<DocumentQueueVerdict> {
  const [result] = await queueDocumentOrders(redis, keys, [{ kind, deliveryId, generation, contentId }], RETENTION);
  if (result === undefined || 'error' in result) throw result?.error ?? new Error('no result');
  return result.value;
}
/** The deployment's upgrade steps, as a start runs them; returns what the document step changed. */
async function upgrade(): Promise<number> {
  await runDeploymentUpgrades({ redis, keys, config: { delivery: { completedRetentionSec: RETENTION } } }, createLogger({ level: 'silent' }));
  const recorded = await redis.hget(keys.upgrades, 'document-records-compact');
  return recorded === null ? -1 : (JSON.parse(recorded) as { changed: number }).changed;
}

const gen = (n: number): string => documentGeneration(1_790_000_000_000 + n, 1_790_000_000_000_000 + n);
const A = '0123456789abcdef';
const B = 'fedcba9876543210';
const C = '00112233445566aa';

it('carries the marks and the re-drop memory over, keeps a newer mark written since, and runs once', async () => {
  // D1: label B marked at gen 5, the API holds A. D2: a CT-e marked, nothing accepted yet.
  await redis.hset(`${prefix}:doc:label:D1`, 'g', gen(5), 'c', B, 's', A);
  await redis.hset(`${prefix}:doc:cte:D2`, 'g', gen(5), 'c', C);
  // D3: a process of this version already marked gen 9; the old layout still says gen 5.
  expect(await queueDocumentOrder('label', 'D3', gen(9), C)).toBe('queue');
  await redis.hset(`${prefix}:doc:label:D3`, 'g', gen(5), 'c', A, 's', A);
  // A delivery id with a ':' in it, and a UUID (hashed in its field).
  const uuid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
  await redis.hset(`${prefix}:doc:label:${uuid}`, 'g', gen(5), 'c', A, 's', A);

  expect(await upgrade()).toBe(4);
  expect(await redis.keys(`${prefix}:doc:*`)).toEqual([]);

  // D1: an older version is still older than the carried mark; a newer drop of A is what the API holds.
  expect(await queueDocumentOrder('label', 'D1', gen(4), C)).toBe('older');
  expect(await queueDocumentOrder('label', 'D1', gen(6), A)).toBe('accepted');
  // D2: the mark came over; the API holds nothing.
  expect(await queueDocumentOrder('cte', 'D2', gen(4), A)).toBe('older');
  expect(await queueDocumentOrder('cte', 'D2', gen(6), C)).toBe('queue');
  // D3: the newer mark (gen 9) stayed; the held content came from the old record.
  expect(await queueDocumentOrder('label', 'D3', gen(8), C)).toBe('older');
  expect(await queueDocumentOrder('label', 'D3', gen(10), A)).toBe('accepted');
  expect(await queueDocumentOrder('label', uuid, gen(6), A)).toBe('accepted');

  // Once done (recorded in keys.upgrades), a later start does not scan again.
  await redis.hset(`${prefix}:doc:label:D4`, 'g', gen(5), 'c', A);
  expect(await upgrade()).toBe(4);
  expect(await redis.exists(`${prefix}:doc:label:D4`)).toBe(1);
});
