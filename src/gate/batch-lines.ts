/**
 * The lines of an events file in flight (its batch: queue/batches.ts holds the layout and the rest
 * of its bookkeeping): marking one done, and whether all are. Here, below the queues, because the
 * push gate's leave marks an event's line in the same script as its answer (issue 46).
 */
// `isComplete(jobsKey, doneKey)`: every job of the batch is in the done set. The counts decide
// first; the members only once they say so, since the done set may hold a job the jobs set does
// not (a job that finished before its file's batch was sealed, then not sealed into it: a file
// re-read after a crash). Counting alone, such a batch closed while its last jobs were unfinished.
export const COMPLETE_LUA = `
local function isComplete(jobsKey, doneKey)
  if redis.call('SCARD', doneKey) < redis.call('SCARD', jobsKey) then return false end
  for _, id in ipairs(redis.call('SMEMBERS', jobsKey)) do
    if redis.call('SISMEMBER', doneKey, id) == 0 then return false end
  end
  return true
end
`;

// `batchMarkDone(jobsKey, doneKey, batchKey, jobId, deadLetter)`: marks one job of the batch
// finished (its dead letter, `batchDeadLetterJson` or '', kept the first time). True when the batch
// is sealed and every job has finished. The push gate's leave of an event runs it in the same
// script as the event's answer (push-gate-scripts.ts; issue 46), the outcome's consumer and the
// reconcile through `Batches.markDone`.
export const BATCH_MARK_DONE_LUA = `${COMPLETE_LUA}
local function batchMarkDone(jobsKey, doneKey, batchKey, jobId, deadLetter)
  if redis.call('SADD', doneKey, jobId) == 1 and deadLetter ~= '' then
    redis.call('HSET', batchKey, 'dead:' .. jobId, deadLetter)
  end
  if redis.call('HGET', batchKey, 'sealed') ~= '1' then return false end
  return isComplete(jobsKey, doneKey)
end
`;
