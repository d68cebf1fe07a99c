/**
 * The claim side of the enqueue in one script call (issue 46: a round trip is a top-level command
 * as Redis sees it, and an item may cost at most 6):
 *  - `claimDocuments`: a batch of labels and CT-e — each document's order verdict (the document
 *    record, gate/document-record.ts), whether its job exists, and the journey's claimed steps.
 *    Before, a pipeline of `EXISTS` + `journeyAppend` and one `queueDocument` a document: 2 round
 *    trips a document.
 *  - `claimEvents`: a run of collecting events — each event's claim (the event_at memory,
 *    gate/event-claims.ts), the delivery's event-order `ZADD` of each event queued, and the
 *    journey's received steps, each written only for the claim it tells. Before, one `dedupClaim`
 *    an event, then a pipeline of `ZADD` an event + `journeyAppend`: 2 round trips an event.
 * The scripts run the same Lua functions as the single calls (`queueDocument`, `dedupClaim`,
 * `journeyAppend`), so records, claims and journeys are the same bytes under the same keys.
 *
 * Every key is passed in KEYS; Lua builds only what the shared functions build already (a record's
 * or claim's bucket, `stem .. bucket`, as the push gate's scripts do). On Redis Cluster every key
 * of a deployment shares the prefix's hash tag (store/keys.ts), so one call may touch many
 * deliveries.
 *
 * A script that fails fails as a whole: every item of the call is rejected, and its caller puts its
 * files back (or answers the request with an error) as it did when one item's call failed. What
 * the script wrote before the error stays (Redis does not roll a script back); each write is one a
 * second claim of the same item repeats or recognises (a record at the same generation, the
 * source's own claim: OWN, an event-order member set again, one journey step more).
 */
import type { Keys } from '../store/keys.js';
import type { RedisConnection } from '../store/redis.js';
import { defineScript } from '../store/script.js';
import { CLOCK_LUA } from '../gate/limiter.js';
import {
  compactContentId,
  compactGeneration,
  documentPeriodSec,
  documentField,
  DOCUMENT_RECORD_LUA,
  QUEUE_DOCUMENT_LUA,
  type DocumentQueueVerdict,
} from '../gate/document-record.js';
import { CLAIM_RECORD_LUA, claimRecord, claimResultOf, DEDUP_CLAIM_LUA, type ClaimResult } from '../gate/event-claims.js';
import { JOURNEY_APPEND_LUA, journeyAppendCall, type ConditionalEntry } from '../journey/journey.js';
import type { ItemKind } from '../store/keys.js';

// KEYS: per document, in the batch's order, 3: its job's key, its delivery's record stem, its
// kind's document lock; then, when the batch has journey steps, `journeyAppend`'s keys.
// ARGV: 1 the number of documents, 2 the record's retention s, 3 its bucket period s; then per
// document 3: compact generation, compact content id, record field; then `journeyAppend`'s args.
// Returns per document `queueDocument`'s verdict ('older', 'accepted', 'queue'), or 'exists' for
// 'queue' when its job exists already. Two documents of one delivery meet `queueDocument` one
// after the other, as two calls did.
const CLAIM_DOCUMENTS = defineScript(
  'claimDocuments',
  `${CLOCK_LUA}${DOCUMENT_RECORD_LUA}${QUEUE_DOCUMENT_LUA}${JOURNEY_APPEND_LUA}
local count, ttlSec, period = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local verdicts = {}
for d = 1, count do
  local k, a = 3 * d - 2, 3 * d + 1
  local jobKey, stem, lockKey = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  local generation, contentId, field = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local verdict = queueDocument(stem, lockKey, generation, contentId, ttlSec, field, period)
  if verdict == 'queue' and redis.call('EXISTS', jobKey) == 1 then verdict = 'exists' end
  verdicts[d] = verdict
end
if #KEYS > 3 * count then journeyAppend(3 * count + 1, 3 * count + 4, {}) end
return verdicts
`,
);

export type DocumentClaimVerdict = DocumentQueueVerdict | 'exists';

export interface DocumentClaim {
  kind: Exclude<ItemKind, 'collecting'>;
  deliveryId: string;
  generation: string;
  contentId: string;
  /** Its job's key (BullMQ's `queue.toKey(jobId)`). */
  jobKey: string;
}

/**
 * The order verdicts of a batch of documents and whether their jobs exist, with the journey's
 * steps (`journey`: written whatever the verdicts; none without a journey TTL), in one call.
 */
export async function claimDocuments(
  redis: RedisConnection,
  keys: Keys,
  documents: readonly DocumentClaim[],
  retentionSec: number,
  journey?: { ttlSec: number; entries: readonly ConditionalEntry[]; nowMs: number },
): Promise<DocumentClaimVerdict[]> {
  if (documents.length === 0) return [];
  const steps = journey === undefined ? { keys: [], args: [] } : journeyAppendCall(keys, journey.ttlSec, journey.entries, journey.nowMs);
  const period = await documentPeriodSec(redis, keys, retentionSec);
  const reply = await CLAIM_DOCUMENTS(
    redis,
    [...documents.flatMap((d) => [d.jobKey, keys.documentRecords(d.deliveryId), keys.documentLock(d.kind, d.deliveryId)]), ...steps.keys],
    [
      documents.length,
      retentionSec,
      period,
      ...documents.flatMap((d) => [compactGeneration(d.generation), compactContentId(d.contentId), documentField(d.kind, d.deliveryId)]),
      ...steps.args,
    ],
  );
  return replyList(reply, documents.length) as DocumentClaimVerdict[];
}

/** The verdict characters of an event's claim, for the journey's conditions (`EventClaimEntry`). */
export const CLAIM_VERDICT = { new: 'n', own: 'o', sent: 's', duplicate: 'd' } as const satisfies Record<ClaimResult, string>;

// KEYS: per event, in the given order, 3: its delivery's claims stem, its claims of the earlier
// layout, its delivery's event order; then, when there are journey steps, `journeyAppend`'s keys.
// ARGV: 1 the number of events, 2 the claims' retention s; then per event 5: claim record, instant
// key, source id, job id, event time (epoch ms: its score in the event order); then
// `journeyAppend`'s args, whose conditions name an event (1 the first) and its claim's verdicts
// (n new, o own, s sent, d duplicate). Returns per event `dedupClaim`'s reply (1 new, 2 own, 3
// sent, 0 duplicate). An event claimed new or own is queued: its job id joins the event order here,
// before its job exists (the push gate waits for a registered job not there yet: push-gate.ts).
const CLAIM_EVENTS = defineScript(
  'claimEvents',
  `${CLOCK_LUA}${CLAIM_RECORD_LUA}${DEDUP_CLAIM_LUA}${JOURNEY_APPEND_LUA}
local count, ttlSec = tonumber(ARGV[1]), tonumber(ARGV[2])
local verdictOf = { [1] = 'n', [2] = 'o', [3] = 's', [0] = 'd' }
local replies, verdicts = {}, {}
for e = 1, count do
  local k, a = 3 * e - 2, 5 * e - 2
  local stem, legacyKey, orderKey = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  local record, instant, source, jobId, score = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local reply = dedupClaim(stem, legacyKey, record, ttlSec, instant, source)
  if reply == 1 or reply == 2 then redis.call('ZADD', orderKey, score, jobId) end
  replies[e] = reply
  verdicts[e] = verdictOf[reply]
end
if #KEYS > 3 * count then journeyAppend(3 * count + 1, 5 * count + 3, verdicts) end
return replies
`,
);

export interface EventClaim {
  deliveryId: string;
  instantKey: string;
  sourceId: string;
  jobId: string;
  epochMs: number;
}

/**
 * Claims events in one call, each in the given order (two of one instant meet `dedupClaim` one
 * after the other, as two calls did), adds each event claimed new or own to its delivery's event
 * order, and writes the journey's entries whose conditions hold (`when.item`: the event's place
 * here, from 1). `retentionSec`: the claims' (`DedupMemory.retentionSec`).
 */
export async function claimEvents(
  redis: RedisConnection,
  keys: Keys,
  events: readonly EventClaim[],
  retentionSec: number,
  journey?: { ttlSec: number; entries: readonly ConditionalEntry[]; nowMs: number },
): Promise<ClaimResult[]> {
  if (events.length === 0) return [];
  const steps = journey === undefined ? { keys: [], args: [] } : journeyAppendCall(keys, journey.ttlSec, journey.entries, journey.nowMs);
  const reply = await CLAIM_EVENTS(
    redis,
    [...events.flatMap((e) => [keys.eventClaims(e.deliveryId), keys.dedup(e.deliveryId), keys.eventOrder(e.deliveryId)]), ...steps.keys],
    [
      events.length,
      retentionSec,
      ...events.flatMap((e) => [claimRecord(e.deliveryId, e.instantKey, e.sourceId), e.instantKey, e.sourceId, e.jobId, e.epochMs]),
      ...steps.args,
    ],
  );
  return replyList(reply, events.length).map(claimResultOf);
}

function replyList(reply: unknown, length: number): unknown[] {
  if (!Array.isArray(reply) || reply.length !== length) throw new Error(`claim script: ${length} replies expected`);
  return reply;
}
