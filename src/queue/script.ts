/**
 * A Lua script run by its SHA (EVALSHA), loaded on first use and again after a Redis restart
 * (NOSCRIPT). Sending the body once instead of on every call keeps a hot-path round trip small.
 */
import { createHash } from 'node:crypto';
import type { RedisConnection } from './redis.js';

export type Script = (redis: RedisConnection, keys: readonly string[], args: ReadonlyArray<string | number | Buffer>) => Promise<unknown>;

export function defineScript(source: string): Script {
  const sha = createHash('sha1').update(source).digest('hex');
  return async (redis, keys, args) => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(source, keys.length, ...keys, ...args);
    }
  };
}
