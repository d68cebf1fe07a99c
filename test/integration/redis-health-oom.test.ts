/**
 * A full Redis is one episode, not many (store/redis-health.ts): once it refused a write with OOM,
 * probe writes that get through while it is still at its limit (a deletion freed a few bytes) do not
 * end the episode; it ends when 5 % of maxmemory is free. On a redis-server of the test's own.
 */
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/store/redis.js';
import { trackRedisHealth, type RedisHealth } from '../../src/store/redis-health.js';
import { startOwnRedis, type OwnRedis } from '../support/own-redis.js';
import { waitFor } from '../support/wait.js';

let own: OwnRedis | undefined;
let admin: Redis | undefined;
let redis: RedisConnection | undefined;
let health: RedisHealth | undefined;

afterAll(async () => {
  health?.close();
  if (redis !== undefined) await closeRedis(redis);
  admin?.disconnect();
  await own?.close();
});

const memory = async (field: string): Promise<number> => Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(await admin!.info('memory'))?.[1]);
const probesTaken = async (): Promise<number> => Number(/^cmdstat_set:calls=(\d+)/m.exec(await admin!.info('commandstats'))?.[1] ?? 0);

it('stays in one OOM episode while probes get through at the limit, and ends with room to spare', { timeout: 60_000 }, async () => {
  own = await startOwnRedis();
  admin = new Redis(own.url, { maxRetriesPerRequest: null });
  redis = connectRedis(own.url, 'health-oom');
  await redis.ping();
  const changes: Array<string | null> = [];
  health = trackRedisHealth(redis, silentLogger, { probeKey: 'health-oom:probe' });
  health.onChange((episode) => changes.push(episode?.code ?? null));

  // Filled with small keys until Redis refuses one: at its limit, as a queue of labels leaves it.
  await admin.config('SET', 'maxmemory', String((await memory('used_memory')) + 256 * 1024));
  let refusal: unknown = null;
  for (let i = 0; refusal === null && i < 10_000; i++)
    refusal = await redis.set(`fill:${i}`, 'x'.repeat(1024)).then(
      () => null,
      (error: unknown) => error,
    );
  expect(String(refusal)).toMatch(/OOM/);
  expect(health.report(refusal, 'test')).toBe(true);
  expect(health.writesRefused()?.code).toBe('OOM');

  // Deletions free a few kilobytes: the probes' tiny writes are taken, and the episode goes on. How many
  // kilobytes a deletion frees depends on the allocator and on the clients' buffers at that moment, so
  // keys go one at a time until 16 KiB are free, which stays under the 5 % that would end the episode.
  const maxmemory = await memory('maxmemory');
  for (let i = 0; maxmemory - (await memory('used_memory')) < 16 * 1024 && i < 200; i++) await admin.del(`fill:${i}`);
  expect(maxmemory - (await memory('used_memory'))).toBeLessThan(maxmemory * 0.05);
  const before = await probesTaken();
  await waitFor(async () => health!.writesRefused() === null || (await probesTaken()) >= before + 4, {
    timeoutMs: 15_000,
    what: 'four probe writes taken at the limit (or the episode ended)',
  });
  expect(health.writesRefused()?.code).toBe('OOM');

  await admin.config('SET', 'maxmemory', '0');
  await waitFor(() => health!.writesRefused() === null, { timeoutMs: 15_000, what: 'the episode ended once memory was raised' });
  expect(changes).toEqual(['OOM', null]);
});
