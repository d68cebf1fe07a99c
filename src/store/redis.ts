import { Cluster, Redis } from 'ioredis';

/** A Redis server or a Redis Cluster: every module takes either. */
export type RedisConnection = Redis | Cluster;

/** The longest wait between two reconnect attempts (gate/attempt-owner.ts counts on it). */
export const RECONNECT_MAX_MS = 5000;

const retryStrategy = (times: number): number => Math.min(times * 200, RECONNECT_MAX_MS);

/**
 * A primary that became a replica answers writes with READONLY, and cuts blocking commands with
 * UNBLOCKED (a managed service failing over behind one name): reconnect (the name then leads to the
 * new primary) instead of failing every write until a restart. The command itself fails to its
 * caller, who keeps or retries it (push/kept-answers.ts, BullMQ's own retries): resending it on
 * the new connection (ioredis' "2") piled every write of a demoted primary onto reconnect after
 * reconnect (Node's MaxListeners warning every 200 ms in the failover test). `onFailover` tells
 * store/redis-health.ts (one warning, one info line when writes are taken again).
 */
function reconnectOnErrorOf(onFailover: ((error: Error) => void) | undefined): (error: Error) => 1 | false {
  return (error) => {
    if (!/^(READONLY|UNBLOCKED)/.test(error.message)) return false;
    onFailover?.(error);
    return 1;
  };
}

export interface ConnectOptions {
  /**
   * ioredis' auto-pipelining: the commands issued in one turn of the event loop leave in one socket
   * write (and one read of their replies) instead of a write each. For carrier-sync's own
   * connection only: BullMQ's pipelines break on a connection that has it ("results[i] is not
   * iterable"), so BullMQ gets a connection of its own (runtime/context.ts).
   */
  autoPipelining?: boolean;
  /** A READONLY or UNBLOCKED answer: the primary moved (see `reconnectOnErrorOf`). */
  onFailover?: (error: Error) => void;
}

/**
 * One connection as BullMQ wants it (no per-request retry limit: BullMQ's blocking commands must
 * wait out a Redis restart rather than fail). With `isCluster`, `url` may list several seed nodes
 * separated by commas; every key of a deployment shares the prefix's hash tag, so each Lua script
 * and multi-key command stays within one slot.
 */
export function connectRedis(url: string, name: string, isCluster = false, options: ConnectOptions = {}): RedisConnection {
  const enableAutoPipelining = options.autoPipelining === true;
  const reconnectOnError = reconnectOnErrorOf(options.onFailover);
  if (!isCluster)
    return new Redis(url, { maxRetriesPerRequest: null, connectionName: name, enableReadyCheck: true, retryStrategy, reconnectOnError, enableAutoPipelining });
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
      reconnectOnError,
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
