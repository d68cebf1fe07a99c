/**
 * The 401 gate. When the API refuses our key, the first worker to see it records why and pauses
 * every item queue (BullMQ's global pause: no process fetches new jobs). Items stay waiting; none
 * is dead-lettered for a bad key. `carrier-sync resume` or the scheduler's probe clears the gate.
 */
import type { Queue } from 'bullmq';
import type { RedisConnection } from './redis.js';

export interface AuthFailure {
  at: string;
  endpoint: string;
  message: string;
}

export interface AuthGate {
  /** Records the failure and pauses the queues; true only for the call that closed the gate. */
  trip(failure: AuthFailure): Promise<boolean>;
  clear(): Promise<void>;
  failure(): Promise<AuthFailure | null>;
}

export function createAuthGate(redis: RedisConnection, key: string, queues: readonly Queue[]): AuthGate {
  return {
    async trip(failure) {
      const isFirst = (await redis.set(key, JSON.stringify(failure), 'NX')) === 'OK';
      if (isFirst) await Promise.all(queues.map((queue) => queue.pause()));
      return isFirst;
    },
    async clear() {
      await redis.del(key);
      await Promise.all(queues.map((queue) => queue.resume()));
    },
    async failure() {
      const raw = await redis.get(key);
      return raw === null ? null : (JSON.parse(raw) as AuthFailure);
    },
  };
}
