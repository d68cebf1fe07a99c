/**
 * A Lua script run by its SHA (EVALSHA), loaded on first use and again after a Redis restart
 * (NOSCRIPT). Sending the body once instead of on every call keeps a hot-path round trip small.
 */
import { createHash } from 'node:crypto';
import type { RedisConnection } from './redis.js';

export interface ScriptCall {
  keys: readonly string[];
  args: ReadonlyArray<string | number | Buffer>;
}

export type Script = ((redis: RedisConnection, keys: readonly string[], args: ReadonlyArray<string | number | Buffer>) => Promise<unknown>) & {
  /**
   * Runs the script once per call, all in one pipeline (one round trip; every key of a deployment
   * shares one hash slot). Each call settles on its own: an error fails only its own result.
   */
  many(redis: RedisConnection, calls: readonly ScriptCall[]): Promise<Array<{ error: Error } | { value: unknown }>>;
};

const isNoScript = (error: unknown): boolean => error instanceof Error && error.message.startsWith('NOSCRIPT');

export function defineScript(source: string): Script {
  const sha = createHash('sha1').update(source).digest('hex');
  const run = async (redis: RedisConnection, keys: readonly string[], args: ReadonlyArray<string | number | Buffer>): Promise<unknown> => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return redis.eval(source, keys.length, ...keys, ...args);
    }
  };
  const many: Script['many'] = async (redis, calls) => {
    const pipelined = async (batch: readonly ScriptCall[]): Promise<Array<{ error: Error } | { value: unknown }>> => {
      const pipeline = redis.pipeline();
      for (const { keys, args } of batch) pipeline.evalsha(sha, keys.length, ...keys, ...args);
      const replies = (await pipeline.exec()) ?? [];
      return batch.map((_, i) => {
        const [error, value] = replies[i] ?? [new Error('no reply in the pipeline'), null];
        return error === null ? { value } : { error };
      });
    };
    const results = await pipelined(calls);
    // A call that got NOSCRIPT did not run: load the script once and run those calls again.
    const missed = calls.flatMap((call, i) => (isNoScript((results[i] as { error?: Error }).error) ? [i] : []));
    if (missed.length === 0) return results;
    await redis.script('LOAD', source);
    const again = await pipelined(missed.map((i) => calls[i]!));
    missed.forEach((at, i) => (results[at] = again[i]!));
    return results;
  };
  return Object.assign(run, { many });
}
