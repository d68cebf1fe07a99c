import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { singleTarget, type RedisTarget } from '../config/redis-target.js';
import { liveSecret } from '../config/secret-file.js';
import { sentinelConnectorFollowing, SteadySentinelConnector } from './sentinel-connector.js';

/** A Redis server (alone or found through Sentinel) or a Redis Cluster: every module takes either. */
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

/**
 * The one way carrier-sync connects to Redis: queues, workers, our own commands, `status` and the
 * CLI all come here (BullMQ's blocking connections are `duplicate()`s of these, so they carry the
 * same options). Every connection is as BullMQ wants it: no per-request retry limit, so a blocking
 * command waits out a restart or a failover rather than fails.
 *
 * - single: one server (a managed service's endpoint counts as one).
 * - sentinel: ioredis asks the sentinels for the primary, and `failoverDetector` subscribes to
 *   their +switch-master so a connection leaves a demoted primary at once, not at its next error
 *   (through sentinel-connector.ts, which keeps that message from ending a reconnect for good).
 *   TLS to the data nodes (`enableTLSForSentinelMode`) and to the sentinels (`sentinelTLS`).
 * - cluster: every key of a deployment shares the prefix's hash tag, so each Lua script and
 *   multi-key command stays in one slot. While a slot's master is down and its replica not yet
 *   promoted, a command is retried every 200 ms up to 100 times (20 s: past a failover under the
 *   default cluster-node-timeout of 15 s) rather than failed after ioredis' default 16 × 100 ms.
 *   The slot map is also refreshed every 5 s, so a promotion is seen without waiting for an error.
 *
 * A string is a single server's URL (tests and tools that hold only a URL). `onFailover`: see
 * reconnectOnErrorOf above.
 */
export interface ConnectOptions {
  /**
   * ioredis' auto-pipelining: the commands issued in one turn of the event loop leave in one socket
   * write (and one read of their replies) instead of a write each. For carrier-sync's own
   * connection only: BullMQ's pipelines break on a connection that has it ("results[i] is not
   * iterable"), so BullMQ gets a connection of its own (runtime/context.ts).
   */
  autoPipelining?: boolean;
}
// Auto-pipelining is on for a single server only: on Sentinel and Cluster the failover e2e tests
// (test/e2e/redis-failover…) failed with it at the last merge, not understood in the time there was.

export function connectRedis(where: RedisTarget | string, name: string, onFailover?: (error: Error) => void, options: ConnectOptions = {}): RedisConnection {
  const target = typeof where === 'string' ? singleTarget(where) : where;
  const reconnectOnError = reconnectOnErrorOf(onFailover);
  const enableAutoPipelining = options.autoPipelining === true;
  const common: RedisOptions = {
    maxRetriesPerRequest: null,
    connectionName: name,
    enableReadyCheck: true,
    retryStrategy,
    reconnectOnError,
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.isTls ? { tls: {} } : {}),
  };
  switch (target.kind) {
    case 'single':
      return new Redis({
        ...common,
        enableAutoPipelining,
        ...(target.socketPath === undefined ? { host: target.node.host, port: target.node.port } : { path: target.socketPath }),
        db: target.db,
      });
    case 'sentinel': {
      // Given as CARRIER_SYNC_REDIS_SENTINEL_PASSWORD_FILE, the password is read again at each connect to a sentinel (issue 45).
      const password = target.sentinelPassword === undefined ? null : liveSecret(process.env, 'CARRIER_SYNC_REDIS_SENTINEL_PASSWORD', target.sentinelPassword);
      return new Redis({
        ...common,
        db: target.db,
        name: target.name,
        sentinels: target.sentinels,
        ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
        ...(target.isSentinelTls ? { sentinelTLS: {} } : {}),
        enableTLSForSentinelMode: target.isTls,
        failoverDetector: true,
        // A +switch-master in the middle of a reconnect no longer ends the connection (sentinel-connector.ts).
        Connector: password === null ? SteadySentinelConnector : sentinelConnectorFollowing(password),
      });
    }
    case 'cluster':
      return new Cluster(target.nodes, {
        clusterRetryStrategy: retryStrategy,
        enableReadyCheck: true,
        retryDelayOnFailover: 200,
        retryDelayOnClusterDown: 200,
        retryDelayOnTryAgain: 200,
        maxRedirections: 100,
        slotsRefreshInterval: 5000,
        redisOptions: common,
      });
  }
}

/**
 * Closes a connection; safe to call twice. One that is not ready (still connecting, or refused
 * at first contact) is dropped: QUIT would wait in the offline queue for a Redis that may never come.
 */
export async function closeRedis(redis: RedisConnection): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
