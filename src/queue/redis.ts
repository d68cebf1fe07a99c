import { Redis } from 'ioredis';

/**
 * One ioredis connection as BullMQ wants it (no per-request retry limit: BullMQ's blocking
 * commands must wait out a Redis restart rather than fail).
 */
export function connectRedis(url: string, name: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    connectionName: name,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(times * 200, 5000),
  });
}

/** Closes a connection; safe to call twice. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
