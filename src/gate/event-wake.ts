/**
 * Waking a parked event: its job moves from BullMQ's delayed set to the front of the wait list, so
 * it is the next job a worker takes. BullMQ's `promote` puts it at the back (LPUSH; workers take
 * from the right, `RPOPLPUSH wait active` in moveToActive), behind every item queued meanwhile: a
 * delivery's 4 events behind a backlog of 5,000 waited for the whole backlog 4 times (issue 23).
 * Nothing here decides order: the push gate's `enter` does, whichever job is taken first.
 *
 * The same bookkeeping as BullMQ's promote-9.lua (6.7), but RPUSH: off the delayed set, onto the
 * wait list, the marker that wakes an idle worker (unless the queue is paused or at its global
 * concurrency), the 'waiting' event, the job's delay cleared. Collecting jobs carry no priority
 * (queues.ts), so the prioritized set is never their place. The queue's keys are BullMQ's, under
 * the queue's key stem (`<bullPrefix>:collecting:`, the same stem as its job hashes): they share
 * the deployment's hash tag. `test/integration/event-wake.test.ts` checks a worker takes it next.
 */
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';

// `wakeToFront(queueStem, jobId)`: 1 when the job was in delayed and is now next in the wait list,
// else 0 (not parked in delayed yet, or no longer: it is taken or waiting already).
export const WAKE_LUA = `
local function wakeToFront(queueStem, jobId)
  if redis.call('ZREM', queueStem .. 'delayed', jobId) == 0 then return 0 end
  local waitKey = queueStem .. 'wait'
  local marker = redis.call('LINDEX', waitKey, 0)
  if marker and string.sub(marker, 1, 2) == '0:' then redis.call('LPOP', waitKey) end
  redis.call('RPUSH', waitKey, jobId)
  local meta = redis.call('HMGET', queueStem .. 'meta', 'paused', 'concurrency')
  local isPausedOrMaxed = meta[1] ~= false or (meta[2] ~= false and redis.call('LLEN', queueStem .. 'active') >= tonumber(meta[2]))
  if not isPausedOrMaxed then redis.call('ZADD', queueStem .. 'marker', 0, '0') end
  redis.call('XADD', queueStem .. 'events', '*', 'event', 'waiting', 'jobId', jobId, 'prev', 'delayed')
  redis.call('HSET', queueStem .. jobId, 'delay', 0)
  return 1
end
`;

// KEYS: 1 the queue's delayed set (names the slot; the other keys share its stem and hash tag).
// ARGV: 1 the queue's key stem (`<bullPrefix>:<queue>:`), 2 job id.
// Returns 1 when the job was woken, 0 when it was not in delayed.
const WAKE_EVENT = defineScript(
  'wakeEvent',
  `${WAKE_LUA}
local delayedKey = KEYS[1]
local queueStem, jobId = ARGV[1], ARGV[2]
return wakeToFront(queueStem, jobId)
`,
);

/** The collecting queue's key stem: its job hashes and BullMQ's keys (wait, delayed, …) follow it. */
export function collectingStemOf(keys: Keys): string {
  return `${keys.bullPrefix}:collecting:`;
}

/**
 * Wakes a parked event whose waker found it not yet in delayed (its worker was still parking it):
 * the worker, once it parked the job, wakes it itself. True when it was in delayed.
 */
export async function wakeEvent(redis: RedisConnection, keys: Keys, jobId: string): Promise<boolean> {
  const stem = collectingStemOf(keys);
  return (await WAKE_EVENT(redis, [`${stem}delayed`], [stem, jobId])) === 1;
}
