/**
 * A deployment's identity: what tells two deployments apart when they share a spool by mistake
 * (staging and production on one share, each with its own Redis or prefix). The id is random,
 * stored once under the prefix (SET NX), so every process of one deployment reads the same one and
 * it survives restarts of processes and of Redis (with persistence). Redis's own `run_id` would not
 * do: it changes with every restart of the server. The prefix and the Redis address (credentials
 * and query stripped) are for the people reading log lines, `/readyz` and `status`.
 */
import { randomBytes } from 'node:crypto';
import type { Keys } from './keys.js';
import type { RedisConnection } from './redis.js';

export interface DeploymentIdentity {
  deploymentId: string;
  prefix: string;
  /** Where its Redis is, without user name, password or query: `redis://host:port/db`. */
  redis: string;
}

/** Reads this deployment's id, writing it first when the prefix has none yet. */
export async function resolveDeploymentId(redis: RedisConnection, keys: Keys): Promise<string> {
  await redis.set(keys.deploymentId, randomBytes(12).toString('hex'), 'NX');
  const id = await redis.get(keys.deploymentId);
  if (id === null) throw new Error(`${keys.deploymentId} vanished right after it was written`);
  return id;
}

/** The deployment id already stored under the prefix, or null (for readers such as `status`). */
export async function readDeploymentId(redis: RedisConnection, keys: Keys): Promise<string | null> {
  return redis.get(keys.deploymentId);
}

/**
 * A Redis URL (or a cluster's comma-separated seed list) as it may be shown and written: scheme,
 * host, port and database only. A user name, a password or a query never come out of here.
 */
export function redisAddressOf(url: string): string {
  return url
    .split(',')
    .map((part) => {
      try {
        const parsed = new URL(part.trim());
        const db = /^\/\d+$/.test(parsed.pathname) ? parsed.pathname : '';
        return `${parsed.protocol}//${parsed.hostname}:${parsed.port || '6379'}${db}`;
      } catch {
        return 'redis (unreadable address)';
      }
    })
    .join(',');
}
