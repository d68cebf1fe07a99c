import { Cluster, Redis } from 'ioredis';

/** A Redis server or a Redis Cluster: every module takes either. */
export type RedisConnection = Redis | Cluster;

const retryStrategy = (times: number): number => Math.min(times * 200, 5000);

export interface ConnectOptions {
  /**
   * ioredis' auto-pipelining: the commands issued in one turn of the event loop leave in one socket
   * write (and one read of their replies) instead of a write each. For carrier-sync's own
   * connection only: BullMQ's pipelines break on a connection that has it ("results[i] is not
   * iterable"), so BullMQ gets a connection of its own (runtime/context.ts).
   */
  autoPipelining?: boolean;
}

/**
 * One connection as BullMQ wants it (no per-request retry limit: BullMQ's blocking commands must
 * wait out a Redis restart rather than fail). With `isCluster`, `url` may list several seed nodes
 * separated by commas; every key of a deployment shares the prefix's hash tag, so each Lua script
 * and multi-key command stays within one slot.
 */
export function connectRedis(url: string, name: string, isCluster = false, options: ConnectOptions = {}): RedisConnection {
  const enableAutoPipelining = options.autoPipelining === true;
  if (!isCluster) return new Redis(url, { maxRetriesPerRequest: null, connectionName: name, enableReadyCheck: true, retryStrategy, enableAutoPipelining });
  const nodes = url.split(',').map((part) => {
    const parsed = new URL(part.trim());
    return { host: parsed.hostname, port: Number(parsed.port || 6379) };
  });
  const first = new URL(url.split(',')[0]!.trim());
  return new Cluster(nodes, {
    clusterRetryStrategy: retryStrategy,
    enableReadyCheck: true,
    enableAutoPipelining,
    redisOptions: {
      maxRetriesPerRequest: null,
      connectionName: name,
      ...(first.username === '' ? {} : { username: decodeURIComponent(first.username) }),
      ...(first.password === '' ? {} : { password: decodeURIComponent(first.password) }),
      ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  });
}

/** Closes a connection; safe to call twice. */
export async function closeRedis(redis: RedisConnection): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
