/**
 * Once across processes: the state of each condition lives in Redis, and a transition is claimed
 * by the one Lua call that makes it. Every scheduler process evaluates the conditions; when two see
 * the same change, only the first call moves the state and gets the episode back, so only it sends
 * the message. A restart reads the stored state: it neither sends "firing" again for an episode
 * already announced nor forgets to send "resolved" for it.
 *
 * A condition that must last a while before it fires (a spool without a watcher for 120 s) keeps
 * the time it was first seen bad in a pending key, shared too, cleared when it is good again.
 *
 *   (none|resolved) --bad for ≥ forMs--> firing --good--> resolved
 */
import { randomBytes } from 'node:crypto';
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';

// KEYS[1] the condition's state hash. ARGV[1] 'firing' or 'resolved', ARGV[2] a new episode id,
// ARGV[3] now (ms). Returns {episode, since} when this call made the transition, else nil: firing
// only from not-firing, resolved only from firing.
const TRANSITION = defineScript(
  'notifyTransition',
  `
local stateKey = KEYS[1]
local wanted, episode, nowMs = ARGV[1], ARGV[2], ARGV[3]
local current = redis.call('HGET', stateKey, 'state')
if wanted == 'firing' then
  if current == 'firing' then return false end
  redis.call('HSET', stateKey, 'state', 'firing', 'episode', episode, 'since', nowMs)
  return {episode, nowMs}
end
if current ~= 'firing' then return false end
redis.call('HSET', stateKey, 'state', 'resolved', 'resolvedAt', nowMs)
return {redis.call('HGET', stateKey, 'episode'), redis.call('HGET', stateKey, 'since')}
`,
);

export interface Transition {
  state: 'firing' | 'resolved';
  episode: string;
  /** When the episode began (ms). */
  sinceMs: number;
}

export interface Episodes {
  /**
   * Records what a condition looks like now and claims the transition it causes, if any: `isBad`
   * for at least `forMs` → firing; good → resolved (when it was firing).
   */
  observe(condition: string, subject: string | undefined, isBad: boolean, forMs: number, nowMs: number): Promise<Transition | null>;
}

export function createEpisodes(redis: RedisConnection, keys: Pick<Keys, 'notifyState' | 'notifyPending'>): Episodes {
  const claim = async (condition: string, subject: string | undefined, state: Transition['state'], nowMs: number): Promise<Transition | null> => {
    const result = (await TRANSITION(redis, [keys.notifyState(condition, subject)], [state, randomBytes(6).toString('hex'), nowMs])) as [string, string] | null;
    return result === null ? null : { state, episode: result[0], sinceMs: Number(result[1]) };
  };
  return {
    async observe(condition, subject, isBad, forMs, nowMs) {
      const pendingKey = keys.notifyPending(condition, subject);
      if (!isBad) {
        await redis.del(pendingKey);
        return claim(condition, subject, 'resolved', nowMs);
      }
      let badSinceMs = nowMs;
      if (forMs > 0) {
        await redis.set(pendingKey, String(nowMs), 'NX');
        badSinceMs = Number((await redis.get(pendingKey)) ?? nowMs);
      }
      return nowMs - badSinceMs >= forMs ? claim(condition, subject, 'firing', badSinceMs) : null;
    },
  };
}
