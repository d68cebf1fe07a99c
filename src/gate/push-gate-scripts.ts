/**
 * The push gate's four Lua scripts (push-gate.ts calls them): enter and leave, each for documents
 * and for events. They share the 401 gate and the slot (`admit`), the count of an ended item
 * (`countEnded`), the rate window (limiter.ts), the document record (document-record.ts), the
 * minute's activity (activity.ts) and the journal of the item's journey (journey.ts).
 */
import { ACTIVITY_LUA } from '../store/activity.js';
import { CLAIM_RECORD_LUA } from './event-claims.js';
import { DOCUMENT_RECORD_LUA } from './document-record.js';
import { OWNER_LUA } from './attempt-owner.js';
import { WAKE_LUA } from './event-wake.js';
import { BATCH_MARK_DONE_LUA } from './batch-lines.js';
import { JOURNEY_LUA } from '../journey/journey.js';
import { RATE_WINDOW_LUA } from './limiter.js';
import { defineScript } from '../store/script.js';

// `chainHead(orderKey, jobPrefix, missingStem, graceMs, running)`: the head of a delivery's event chain — its
// earliest unfinished event (member and score) — or nil. Members whose job finished are dropped.
// Events are registered in the chain before their jobs are added (enqueue.ts), so a member whose
// job is not there is still being queued: it blocks, as an unfinished one does, unless its job
// stays missing for `graceMs` (the queueing process died in between, or an operator removed the
// job): then it is dropped. Dropping it at once, as this did before, let a delivery's later events
// go before (or beside) an earlier one queued in the same file but a later chunk (issue 19).
// `running` (the enter's own job, or nil) is taken as it is when it is the head: its run is this
// call's caller, so its job is there and unfinished (a finished job's leave took it out of the
// chain), and reading its job hash again would only cost two commands an event (issue 46).
const CHAIN_LUA = `
local function chainHead(orderKey, jobPrefix, missingStem, graceMs, running)
  while true do
    local head = redis.call('ZRANGE', orderKey, 0, 0, 'WITHSCORES')
    if head[1] == nil then return nil, nil end
    if head[1] == running then return head[1], head[2] end
    local jobKey = jobPrefix .. head[1]
    if redis.call('EXISTS', jobKey) == 1 then
      if redis.call('HEXISTS', jobKey, 'finishedOn') == 0 then return head[1], head[2] end
    else
      local missingKey = missingStem .. head[1]
      local now = nowMs()
      local since = redis.call('GET', missingKey)
      if not since then
        redis.call('SET', missingKey, now, 'PX', graceMs * 2)
        return head[1], head[2]
      end
      if now - tonumber(since) < graceMs then return head[1], head[2] end
      redis.call('DEL', missingKey)
    end
    redis.call('ZREM', orderKey, head[1])
  end
end
`;

// `enterReads(lockKey, authFailureKey, authEpochKey, pauseKey)`: what an enter reads of the shared
// keys, in one MGET (issue 46: one command where three were — a GET of the lock, an MGET of the 401
// failure and the auth epoch, a PTTL of the 429 pause, now read only when the pause is there):
// {lock owner, 401 failure, auth epoch, pause}, each false when absent. A script runs atomically:
// what it read stays so until it ends.
// `admit(reads, ...)`: the 401 gate, then a slot. Returns nil, isProbe and the auth epoch (the key's
// recoveries so far: a 401 answered to this request trips the gate only within it) when the item may
// go (the slot taken, the minute's request counted), else the verdict to return.
const ADMIT_LUA = `
local function enterReads(lockKey, authFailureKey, authEpochKey, pauseKey)
  return redis.call('MGET', lockKey, authFailureKey, authEpochKey, pauseKey)
end
local function admit(reads, authProbeKey, jobId, windowKey, pauseKey, windowMs, limit, member, maxRequestMs, activityStem, activityTtlSec)
  local isProbe = 0
  if reads[2] then
    local probe = redis.call('GET', authProbeKey)
    if probe ~= 'open' and probe ~= jobId then return {'auth'}, nil end
    isProbe = 1
  end
  local waitMs, now = takeSlot(windowKey, pauseKey, windowMs, limit, member, maxRequestMs, not reads[4])
  if waitMs then return {'wait', waitMs}, nil end
  countActivity(activityStem, now, 'requests', 1, activityTtlSec)
  return nil, isProbe, tonumber(reads[3] or '0')
end
`;

// `countEnded(statsKey, counter, kind, activityStem, activityTtlSec)`: an item that ended, in the
// stats hash (`<counter>:<kind>`) and its minute's activity (its 429 hold counter goes with the
// leave's one DEL, `leaveDelete`).
// `appendCapped(key, entry, keep, ttlSec)`: a failed attempt's record onto its job's list, which
// keeps the newest `keep` ('' appends nothing).
const ENDED_LUA = `
local function countEnded(statsKey, counter, kind, activityStem, activityTtlSec)
  redis.call('HINCRBY', statsKey, counter .. ':' .. kind, 1)
  countActivity(activityStem, nowMs(), counter, 1, activityTtlSec)
end
-- The leave's deletions in one DEL (issue 46: one command where three were), after its other
-- writes: the lock when this job holds it (lockOwner, as the leave read it), the 429 hold
-- counter of an item that ended, the attempt record with any answer or ending (last, as
-- attempt-owner.ts needs: a Redis refusing writes fails the leave before it).
local function leaveDelete(lockKey, lockOwner, jobId, heldKey, attemptKey, member, result)
  local gone = {}
  if lockOwner == jobId then gone[#gone + 1] = lockKey end
  if result ~= '' then gone[#gone + 1] = heldKey end
  if member ~= '' or result ~= '' then gone[#gone + 1] = attemptKey end
  if #gone > 0 then redis.call('DEL', unpack(gone)) end
end
local function appendCapped(key, entry, keep, ttlSec)
  if entry == '' then return end
  redis.call('RPUSH', key, entry)
  redis.call('LTRIM', key, -tonumber(keep), -1)
  redis.call('EXPIRE', key, ttlSec)
end
`;

// `lockedByOther(lockKey, owner, jobId)`: {'busy', ms} while another job holds the lock (`owner`, as
// the enter read it), else nil.
// `go(...)`: the item may go: the lock (and the probe) taken by this job, the attempt journaled.
const LOCK_LUA = `
local function lockedByOther(lockKey, owner, jobId)
  if not owner or owner == jobId then return nil end
  local left = redis.call('PTTL', lockKey)
  if left < 1 then left = 1 end
  return {'busy', left}
end
local function go(lockKey, authProbeKey, authEpoch, jobId, lockMs, isProbe, member, dayStem, deliveryId, journeyTtlSec, goStep)
  redis.call('SET', lockKey, jobId, 'PX', lockMs)
  if isProbe == 1 then redis.call('SET', authProbeKey, jobId, 'PX', lockMs) end
  journal(dayStem, deliveryId, journeyTtlSec, goStep)
  return {'go', isProbe, member, authEpoch}
end
`;

const GATE_LUA = `${RATE_WINDOW_LUA}${ACTIVITY_LUA}${ADMIT_LUA}${ENDED_LUA}${JOURNEY_LUA}${LOCK_LUA}${OWNER_LUA}`;

// resend(...): the previous attempt's owner died with its answer: the journey says so, the
// deployment's counter of requests sent again (the failover message) counts it.
const RESEND_LUA = `
local function resend(dayStem, deliveryId, journeyTtlSec, resentStep, countsKey)
  journal(dayStem, deliveryId, journeyTtlSec, resentStep)
  redis.call('HINCRBY', countsKey, 'resent', 1)
end
`;

// KEYS: 1 the delivery's record stem, 2 the document lock, 3 auth failure, 4 auth probe, 5 limiter
//       window, 6 limiter pause, 7 auth epoch, 8 the job's attempt record, 9 the answer counters.
// ARGV: 1 job id, 2 compact content id, 3 compact generation, 4 record field, 5 record bucket
//       period s, 6 record ttl s, 7 lock (and probe) ttl ms, 8 window ms, 9 limit, 10 slot member,
//       11 longest request ms, 12 activity key stem, 13 activity ttl s, 14 journey day stem,
//       15 delivery id, 16 journey ttl s, 17 journey step on 'go' (the attempt starts; '' records
//       nothing), 18 the fields every step of the document names (`"k":…,"h":…`: the superseded
//       and already-accepted steps are made of them here, only when taken), 19 this process (the
//       attempt's owner), 20 owner liveness key stem, 21 owner grace ms, 22 attempt record ttl ms,
//       23 journey step when the previous owner died with its answer.
// A job whose previous attempt's owner is alive waits for that owner's answer (attempt-owner.ts).
// Returns {'go', isProbe, member, auth epoch} | {'superseded'} | {'already'} | {'busy', ms} |
//   {'owned', ms} | {'auth'} | {'wait', ms}.
export const ENTER_DOCUMENT = defineScript(
  'gateEnterDocument',
  `${GATE_LUA}${RESEND_LUA}${DOCUMENT_RECORD_LUA}
local stem, lockKey, authFailureKey, authProbeKey, windowKey, pauseKey, authEpochKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local attemptKey, countsKey = KEYS[8], KEYS[9]
local self, ownerStem, ownerGraceMs, attemptTtlMs, resentStep = ARGV[19], ARGV[20], tonumber(ARGV[21]), ARGV[22], ARGV[23]
local jobId, contentId, generation, field, period, recordTtlSec = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local lockMs, windowMs, limit, member, maxRequestMs = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10], tonumber(ARGV[11])
local activityStem, activityTtlSec = ARGV[12], ARGV[13]
local dayStem, deliveryId, journeyTtlSec = ARGV[14], ARGV[15], ARGV[16]
local goStep, stepBase = ARGV[17], ARGV[18]

local record, found, current = docGet(stem, field, period, recordTtlSec)
if not record then
  docPut(stem, field, generation .. contentId, nil, current, period, recordTtlSec)
elseif string.sub(record, 15, 22) ~= contentId then
  journal(dayStem, deliveryId, journeyTtlSec, '{' .. stepBase .. ',"s":"superseded"}')
  return {'superseded'}
elseif string.sub(record, 23, 30) == contentId then
  journal(dayStem, deliveryId, journeyTtlSec, '{' .. stepBase .. ',"s":"already-accepted"}')
  return {'already'}
end
local reads = enterReads(lockKey, authFailureKey, authEpochKey, pauseKey)
local busy = lockedByOther(lockKey, reads[1], jobId)
if busy then return busy end
local owned, isResend = ownerCheck(attemptKey, ownerStem, self, ownerGraceMs)
if owned then return owned end
local refused, isProbe, authEpoch = admit(reads, authProbeKey, jobId, windowKey, pauseKey, windowMs, limit, member, maxRequestMs, activityStem, activityTtlSec)
if refused then return refused end
if isResend then resend(dayStem, deliveryId, journeyTtlSec, resentStep, countsKey) end
ownerTake(attemptKey, self, member, attemptTtlMs)
return go(lockKey, authProbeKey, authEpoch, jobId, lockMs, isProbe, member, dayStem, deliveryId, journeyTtlSec, goStep)
`,
);

// KEYS: 1 the delivery's chain (sorted set), 2 its parked events (set), 3 its event lock, 4 its
//       event_at claims of the earlier layout, 5 auth failure, 6 auth probe, 7 limiter window,
//       8 limiter pause, 9 auth epoch, 10 its event_at claims stem (gate/event-claims.ts), 11 the job's
//       attempt record, 12 the answer counters.
// ARGV: 1 job id, 2 event time ms, 3 instant key, 4 source id, 5 BullMQ job key stem,
//       6 missing-job marker stem, 7 missing-job grace ms, 8 parked set ttl s, 9 lock (and probe)
//       ttl ms, 10 window ms, 11 limit, 12 slot member, 13 longest request ms, 14 activity key stem,
//       15 activity ttl s, 16 journey day stem, 17 delivery id, 18 journey ttl s, 19 journey step
//       on 'go' (the attempt starts; '' records nothing), 20 claim record, 21 claim retention s,
//       22 this process (the attempt's owner), 23 owner liveness key stem, 24 owner grace ms,
//       25 attempt record ttl ms, 26 journey step when the previous owner died with its answer.
// Only the head of the chain goes, and only while no other event of the delivery holds the event
// lock (its request on the wire, or its job finished by BullMQ while the request still runs). The
// lock is the job's, as the document lock is: a run taken over after BullMQ judged the first one
// stalled (a killed process) goes on at once rather than waiting out the lock. An event not in its
// chain was finished by another run of its job (a stalled job taken over: 'already' when its claim
// is done) or replayed from the dead letters (registered again here).
// A job whose previous attempt's owner is alive waits for that owner's answer (attempt-owner.ts).
// Returns {'go', isProbe, member, auth epoch} | {'already'} | {'park', headDueMs} | {'busy', ms} |
//   {'owned', ms} | {'auth'} | {'wait', ms}.
export const ENTER_EVENT = defineScript(
  'gateEnterEvent',
  `${GATE_LUA}${RESEND_LUA}${CHAIN_LUA}${CLAIM_RECORD_LUA}
local orderKey, parkedKey, lockKey, dedupKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local authFailureKey, authProbeKey, windowKey, pauseKey, authEpochKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local jobId, eventMs, instant, source = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local jobStem, missingStem, graceMs, parkedTtlSec = ARGV[5], ARGV[6], tonumber(ARGV[7]), ARGV[8]
local lockMs, windowMs, limit, member, maxRequestMs = ARGV[9], tonumber(ARGV[10]), tonumber(ARGV[11]), ARGV[12], tonumber(ARGV[13])
local activityStem, activityTtlSec = ARGV[14], ARGV[15]
local dayStem, deliveryId, journeyTtlSec, goStep = ARGV[16], ARGV[17], ARGV[18], ARGV[19]
local claimStem, claimRecord, claimTtlSec = KEYS[10], ARGV[20], ARGV[21]
local attemptKey, countsKey = KEYS[11], KEYS[12]
local self, ownerStem, ownerGraceMs, attemptTtlMs, resentStep = ARGV[22], ARGV[23], tonumber(ARGV[24]), ARGV[25], ARGV[26]

if not redis.call('ZSCORE', orderKey, jobId) then
  if claimIsDone(claimStem, claimRecord, claimTtlSec, dedupKey, instant, source) then return {'already'} end
  redis.call('ZADD', orderKey, eventMs, jobId)
end
local head, headDue = chainHead(orderKey, jobStem, missingStem, graceMs, jobId)
if head ~= jobId then
  redis.call('SADD', parkedKey, jobId)
  redis.call('EXPIRE', parkedKey, parkedTtlSec)
  return {'park', headDue}
end
local reads = enterReads(lockKey, authFailureKey, authEpochKey, pauseKey)
local busy = lockedByOther(lockKey, reads[1], jobId)
if busy then return busy end
local owned, isResend = ownerCheck(attemptKey, ownerStem, self, ownerGraceMs)
if owned then return owned end
local refused, isProbe, authEpoch = admit(reads, authProbeKey, jobId, windowKey, pauseKey, windowMs, limit, member, maxRequestMs, activityStem, activityTtlSec)
if refused then return refused end
redis.call('SREM', parkedKey, jobId)
if isResend then resend(dayStem, deliveryId, journeyTtlSec, resentStep, countsKey) end
ownerTake(attemptKey, self, member, attemptTtlMs)
return go(lockKey, authProbeKey, authEpoch, jobId, lockMs, isProbe, member, dayStem, deliveryId, journeyTtlSec, goStep)
`,
);

// KEYS: 1 the delivery's record stem, 2 the document lock, 3 limiter window, 4 stats hash, 5 the
//       job's 429 hold counter, 6 the job's attempt record, 7 the spool's outcome list (an item not
//       from a file: any key, never written), 8 the job's failure list (queue/attempts.ts; likewise).
// ARGV: 1 job id, 2 compact content id, 3 result ('' while the item goes on), 4 slot member ('' when
//       no request was made), 5 ms since the response arrived, 6 counter, 7 kind, 8 record field,
//       9 record bucket period s, 10 record ttl s, 11 activity key stem, 12 activity ttl s,
//       13 journey day stem, 14 delivery id, 15 journey ttl s, 16 journey step of the answer,
//       17 journey step of the outcome ('' records nothing), 18 the outcome message ('' for none),
//       19 the failed attempt's record ('' for none), 20 how many the failure list keeps, 21 its ttl s.
// Stamps the slot and releases the lock (if this job holds it). An item that ended is counted, and
// an accepted one becomes the content the API holds; its outcome message goes to the spool's list
// and a failed attempt's record to the job's failure list in the same call: the answer is one
// write. The attempt record goes last (attempt-owner.ts), and
// with any ending (an item that ended has no attempt on the wire: a run that found it already
// accepted clears a record an earlier run left). A leave whose attempt another run took over (this
// owner was judged dead) writes nothing.
// Returns false.
export const LEAVE_DOCUMENT = defineScript(
  'gateLeaveDocument',
  `${GATE_LUA}${DOCUMENT_RECORD_LUA}
local stem, lockKey, windowKey, statsKey, heldKey, attemptKey, outcomeKey, failureKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local outcome, failure, failureKeep, failureTtlSec = ARGV[18], ARGV[19], ARGV[20], ARGV[21]
local jobId, contentId, result, member, sinceResponseMs, counter, kind = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local field, period, recordTtlSec, activityStem, activityTtlSec = ARGV[8], tonumber(ARGV[9]), ARGV[10], ARGV[11], ARGV[12]
local dayStem, deliveryId, journeyTtlSec, answerStep, outcomeStep = ARGV[13], ARGV[14], ARGV[15], ARGV[16], ARGV[17]

local seen = redis.call('MGET', attemptKey, lockKey)
if member ~= '' and not ownerIsMine(attemptKey, member, seen[1]) then return false end
stampSlot(windowKey, member, sinceResponseMs)
journal(dayStem, deliveryId, journeyTtlSec, answerStep, outcomeStep)
appendCapped(failureKey, failure, failureKeep, failureTtlSec)
if result ~= '' then
  countEnded(statsKey, counter, kind, activityStem, activityTtlSec)
  if result == 'accepted' then
    local record, found, current = docGet(stem, field, period, recordTtlSec)
    local queued = record and string.sub(record, 1, 22) or (string.rep('\\0', 14) .. contentId)
    docPut(stem, field, queued .. contentId, found, current, period, recordTtlSec)
  end
  if outcome ~= '' then redis.call('RPUSH', outcomeKey, outcome) end
end
leaveDelete(lockKey, seen[2], jobId, heldKey, attemptKey, member, result)
return false
`,
);

// KEYS: 1 the delivery's chain, 2 its parked events, 3 its event lock, 4 its event_at claims of
//       the earlier layout, 5 limiter window, 6 stats hash, 7 the job's 429 hold counter, 8 its
//       event_at claims stem (gate/event-claims.ts), 9 the job's attempt record, 10 the spool's outcome list
//       (an item not from a file: any key, never written), 11 the job's failure list (likewise),
//       12–14 its events file's batch: jobs set, done set, batch hash (queue/batches.ts; an event
//       not from a file: any keys, never written).
// ARGV: 1 job id, 2 result ('' while the item goes on), 3 slot member ('' when no request was
//       made), 4 ms since the response arrived, 5 counter, 6 instant key, 7 source id, 8 BullMQ job
//       key stem, 9 missing-job marker stem, 10 missing-job grace ms, 11 activity key stem,
//       12 activity ttl s, 13 journey day stem, 14 delivery id, 15 journey ttl s, 16 journey step
//       of the answer, 17 journey step of the outcome ('' records nothing), 18 claim record,
//       19 claim retention s, 20 the outcome message ('' for none), 21 the failed attempt's record
//       ('' for none), 22 how many the failure list keeps, 23 its ttl s, 24 its dead letter as its
//       batch keeps it ('' for none), 25 the outcome message to append instead of 20 when this
//       line completes its batch ('' when the event is no file's line).
// Stamps the slot and releases the event lock (if this job holds it). An event that ended is
// counted and leaves its chain; one not dead-lettered marks its event_at claim done (the same source
// taken in again — a re-pull, a file re-read after a crash — is then a duplicate, not a second send).
// The parked event it wakes (the chain's new head) goes to the front of the wait list (event-wake.ts).
// The outcome message and a failed attempt's record go in the same call (the answer is one write); the
// attempt record goes last, and with any ending (as for documents). An events file's line is
// marked done in its batch with its outcome message (`batchMarkDone`, which the outcome consumer
// ran as a call of its own before; issue 46), and the message says whether the batch is complete.
// A leave whose attempt another run took over writes nothing.
// Returns the id of that event, or false.
export const LEAVE_EVENT = defineScript(
  'gateLeaveEvent',
  `${GATE_LUA}${CHAIN_LUA}${WAKE_LUA}${CLAIM_RECORD_LUA}${BATCH_MARK_DONE_LUA}
local orderKey, parkedKey, lockKey, dedupKey, windowKey, statsKey, heldKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local jobId, result, member, sinceResponseMs, counter, instant, source = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local jobStem, missingStem, graceMs, activityStem, activityTtlSec = ARGV[8], ARGV[9], tonumber(ARGV[10]), ARGV[11], ARGV[12]
local dayStem, deliveryId, journeyTtlSec, answerStep, outcomeStep = ARGV[13], ARGV[14], ARGV[15], ARGV[16], ARGV[17]
local claimStem, claimRecord, claimTtlSec = KEYS[8], ARGV[18], ARGV[19]
local attemptKey, outcomeKey, outcome, failureKey = KEYS[9], KEYS[10], ARGV[20], KEYS[11]
local failure, failureKeep, failureTtlSec = ARGV[21], ARGV[22], ARGV[23]
local batchJobsKey, batchDoneKey, batchKey, batchDeadLetter, outcomeIfComplete = KEYS[12], KEYS[13], KEYS[14], ARGV[24], ARGV[25]

local seen = redis.call('MGET', attemptKey, lockKey)
if member ~= '' and not ownerIsMine(attemptKey, member, seen[1]) then return false end
stampSlot(windowKey, member, sinceResponseMs)
journal(dayStem, deliveryId, journeyTtlSec, answerStep, outcomeStep)
appendCapped(failureKey, failure, failureKeep, failureTtlSec)
local woken = false
if result ~= '' then
  countEnded(statsKey, counter, 'collecting', activityStem, activityTtlSec)
  if result ~= 'dead-lettered' then claimMarkDone(claimStem, claimRecord, claimTtlSec, dedupKey, instant, source) end
  if outcome ~= '' then
    if outcomeIfComplete ~= '' and batchMarkDone(batchJobsKey, batchDoneKey, batchKey, jobId, batchDeadLetter) then outcome = outcomeIfComplete end
    redis.call('RPUSH', outcomeKey, outcome)
  end
  redis.call('ZREM', orderKey, jobId)
  local head = chainHead(orderKey, jobStem, missingStem, graceMs, nil)
  if head ~= nil and redis.call('SREM', parkedKey, head) == 1 then
    wakeToFront(jobStem, head)
    woken = head
  end
end
leaveDelete(lockKey, seen[2], jobId, heldKey, attemptKey, member, result)
return woken
`,
);
