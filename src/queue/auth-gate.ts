/**
 * The 401 gate. When the API refuses our key, the first worker to see it records why and pauses
 * every item queue (BullMQ's global pause: no process fetches new jobs). Items stay waiting; none
 * is dead-lettered for a bad key.
 *
 * The key is probed with real work, never with a request we know to be invalid: after a backoff
 * the scheduler opens the probe and resumes the queues; the push gate then lets exactly one item
 * through (the first to come, now or later) while the others wait. Any answer but a 401 clears the
 * gate; a 401 closes it again with a longer backoff, and that item spends no attempt.
 * `carrier-sync resume` clears the gate by hand.
 */
import type { Queue } from 'bullmq';
import type { RedisConnection } from './redis.js';

export interface AuthFailure {
  at: string;
  endpoint: string;
  message: string;
  /** Probes refused since the gate closed. */
  probes?: number;
  /** When the scheduler may open the next probe (ISO time). */
  nextProbeAt?: string;
}

export interface AuthGate {
  /** Records the failure and pauses the queues; true only for the call that closed the gate. */
  trip(failure: AuthFailure): Promise<boolean>;
  /** Lets the next item through as the probe: resumes the queues (the push gate admits one). */
  openProbe(): Promise<void>;
  /** True while a probe is open or in flight. */
  isProbing(): Promise<boolean>;
  /** The probe got a 401: closes the gate again; the next probe after `backoffMs(probes)`. */
  probeRefused(backoffMs: (probes: number) => number): Promise<AuthFailure | null>;
  clear(): Promise<void>;
  failure(): Promise<AuthFailure | null>;
}

export function createAuthGate(redis: RedisConnection, keys: { authFailure: string; authProbe: string }, queues: readonly Queue[]): AuthGate {
  const read = async (): Promise<AuthFailure | null> => {
    const raw = await redis.get(keys.authFailure);
    return raw === null ? null : (JSON.parse(raw) as AuthFailure);
  };
  return {
    async trip(failure) {
      const isFirst = (await redis.set(keys.authFailure, JSON.stringify(failure), 'NX')) === 'OK';
      if (isFirst) await Promise.all(queues.map((queue) => queue.pause()));
      return isFirst;
    },
    async openProbe() {
      await redis.set(keys.authProbe, 'open');
      await Promise.all(queues.map((queue) => queue.resume()));
    },
    async isProbing() {
      return (await redis.exists(keys.authProbe)) === 1;
    },
    async probeRefused(backoffMs) {
      const failure = await read();
      if (failure === null) return null;
      const probes = (failure.probes ?? 0) + 1;
      const next: AuthFailure = { ...failure, probes, nextProbeAt: new Date(Date.now() + backoffMs(probes)).toISOString() };
      const results = await redis.multi().set(keys.authFailure, JSON.stringify(next), 'XX').del(keys.authProbe).exec();
      // Cleared meanwhile (`carrier-sync resume`): leave the queues running.
      if (results?.[0]?.[1] !== 'OK') return null;
      await Promise.all(queues.map((queue) => queue.pause()));
      return next;
    },
    async clear() {
      await redis.del(keys.authFailure, keys.authProbe);
      await Promise.all(queues.map((queue) => queue.resume()));
    },
    failure: read,
  };
}
