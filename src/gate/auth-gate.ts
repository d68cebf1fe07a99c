/**
 * The 401 gate. When the API refuses our key, the first worker to see it records why and pauses
 * every item queue (BullMQ's global pause: no process fetches new jobs). Items stay waiting; none
 * is dead-lettered for a bad key.
 *
 * The key is probed with real work, never with a request we know to be invalid: after a backoff
 * the scheduler opens the probe and resumes the queues; the push gate then lets exactly one item
 * through (the first to come, now or later) while the others wait. An answer that judged the
 * request (2xx, or a 4xx other than 401 and 429) clears the gate; a 401 closes it again with a
 * longer backoff, and that item spends no attempt; a 5xx, 429 or network failure says nothing about
 * the key and closes it again until the next probe.
 * `carrier-sync resume` clears the gate by hand. Each clear starts a new epoch: a 401 answered late
 * to a request sent before the clear does not close the gate again.
 */
import type { Queue } from 'bullmq';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';

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
  /**
   * Records the failure and pauses the queues; true only for the call that closed the gate.
   * `sentInEpoch` (see `epoch`): a 401 to a request sent before the gate was last cleared is stale
   * — the key has worked since — and closes nothing.
   */
  trip(failure: AuthFailure, sentInEpoch?: number): Promise<boolean>;
  /** Lets the next item through as the probe: resumes the queues (the push gate admits one). */
  openProbe(): Promise<void>;
  /** True while a probe is open or in flight. */
  isProbing(): Promise<boolean>;
  /**
   * The probe got a 401 (or, `isInconclusive`, no answer about the key: a 5xx, 429 or network
   * failure, which does not count as a refusal): closes the gate again; the next probe after
   * `backoffMs(probes)`.
   */
  probeRefused(backoffMs: (probes: number) => number, options?: { isInconclusive?: boolean }): Promise<AuthFailure | null>;
  clear(): Promise<void>;
  failure(): Promise<AuthFailure | null>;
}

// KEYS: 1 failure, 2 epoch. ARGV: 1 failure JSON, 2 epoch the request was sent in ('' unknown).
// Returns 1 when this closed the gate, 0 when it was closed already or cleared since the request.
const TRIP = defineScript(
  'authTrip',
  `
local failureKey, epochKey = KEYS[1], KEYS[2]
local failure, sentInEpoch = ARGV[1], ARGV[2]
if redis.call('EXISTS', failureKey) == 1 then return 0 end
if sentInEpoch ~= '' and tonumber(redis.call('GET', epochKey) or '0') ~= tonumber(sentInEpoch) then return 0 end
redis.call('SET', failureKey, failure)
return 1
`,
);

export function createAuthGate(
  redis: RedisConnection,
  keys: { authFailure: string; authProbe: string; authEpoch: string },
  queues: readonly Queue[],
): AuthGate {
  const read = async (): Promise<AuthFailure | null> => {
    const raw = await redis.get(keys.authFailure);
    return raw === null ? null : (JSON.parse(raw) as AuthFailure);
  };
  return {
    async trip(failure, sentInEpoch) {
      const isFirst = Number(await TRIP(redis, [keys.authFailure, keys.authEpoch], [JSON.stringify(failure), sentInEpoch ?? ''])) === 1;
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
    async probeRefused(backoffMs, options = {}) {
      const failure = await read();
      if (failure === null) return null;
      const probes = (failure.probes ?? 0) + (options.isInconclusive === true ? 0 : 1);
      const next: AuthFailure = { ...failure, probes, nextProbeAt: new Date(Date.now() + backoffMs(probes)).toISOString() };
      const results = await redis.multi().set(keys.authFailure, JSON.stringify(next), 'XX').del(keys.authProbe).exec();
      // Cleared meanwhile (`carrier-sync resume`): leave the queues running.
      if (results?.[0]?.[1] !== 'OK') return null;
      await Promise.all(queues.map((queue) => queue.pause()));
      return next;
    },
    async clear() {
      await redis.multi().del(keys.authFailure, keys.authProbe).incr(keys.authEpoch).exec();
      await Promise.all(queues.map((queue) => queue.resume()));
    },
    failure: read,
  };
}
