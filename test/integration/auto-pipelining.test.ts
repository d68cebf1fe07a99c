/**
 * Our own connection auto-pipelines (store/redis.ts); BullMQ's does not. A script used for the
 * first time in a turn of the event loop whose auto-pipeline was already made (another command
 * came first) must still run, and every caller of that turn get its own reply.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeRedis, connectRedis } from '../../src/store/redis.js';
import { defineScript } from '../../src/store/script.js';
import { cleanupPrefix, testRedisUrl, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('autopipe');
const redis = connectRedis(testRedisUrl(), 'test:auto-pipelining', undefined, { autoPipelining: true });
afterAll(async () => {
  await cleanupPrefix(prefix);
  await closeRedis(redis);
});

// KEYS: 1 a counter. ARGV: 1 a step. Returns the counter after the step.
const ADD = defineScript('testAutoPipelineAdd', `local key, step = KEYS[1], ARGV[1]\nreturn redis.call('INCRBY', key, step)`);
// KEYS: 1 a counter. ARGV: none. Returns it after adding 1 (sent at once: never held in a batch).
const URGENT = defineScript('testAutoPipelineUrgent', `local key = KEYS[1]\nreturn redis.call('INCR', key)`, { isUrgent: true });
// KEYS: 1 a string. ARGV: none. Returns its length.
const LENGTH = defineScript('testAutoPipelineLength', `local key = KEYS[1]\nreturn redis.call('STRLEN', key)`);

/** Runs `body` with the connection's socket writes counted (`writes()`: how many so far). */
async function countingWrites(body: (writes: () => number) => Promise<void>): Promise<void> {
  let count = 0;
  const stream = (redis as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream;
  const write = stream.write.bind(stream);
  stream.write = (...args: unknown[]) => {
    count += 1;
    return write(...args);
  };
  try {
    await body(() => count);
  } finally {
    stream.write = write;
  }
}

describe('auto-pipelining on our own connection', () => {
  it('runs a script first defined after the turn’s pipeline was made, and gives each caller its reply', async () => {
    expect(redis.options.enableAutoPipelining).toBe(true);
    // One turn: a plain command makes the auto-pipeline, then two scripts never defined on this connection.
    const replies = await Promise.all([
      redis.set(`${prefix}:s`, 'abcde'),
      ADD(redis, [`${prefix}:n`], [5]),
      LENGTH(redis, [`${prefix}:s`], []),
      ADD(redis, [`${prefix}:n`], [2]),
      redis.get(`${prefix}:n`),
    ]);
    expect(replies).toEqual(['OK', 5, 5, 7, '7']);
  });

  it('sends an urgent script at once, while the commands of its turn wait for their batch', async () => {
    await countingWrites(async (writes) => {
      const calls = [ADD(redis, [`${prefix}:u1`], [1]), URGENT(redis, [`${prefix}:u2`], []), ADD(redis, [`${prefix}:u1`], [1])];
      const writtenInTheTurn = writes();
      expect(await Promise.all(calls)).toEqual([1, 1, 2]);
      expect(writtenInTheTurn).toBe(1);
      expect(writes()).toBeGreaterThanOrEqual(2);
    });
  });

  it('sends the commands of one turn in one write', async () => {
    await countingWrites(async (writes) => {
      const keys = Array.from({ length: 20 }, (_, i) => `${prefix}:k${i}`);
      await Promise.all(keys.map((key, i) => ADD(redis, [key], [i])));
      expect(writes()).toBe(1);
    });
  });
});
