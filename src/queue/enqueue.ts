/**
 * Putting items into the queues. Job ids are deterministic, so the same item seen twice
 * (restart, rescan, identical re-drop) is one job:
 *  - label / CT-e: `<kind>.<delivery id>.<content id>`; its generation (see push-gate.ts) raises
 *    the delivery's high-water mark, so an older job is superseded instead of overwriting a newer one;
 *  - collecting: `collecting.<delivery id>.<instant hash>`, after a claim in the event_at memory.
 */
import { hash } from 'node:crypto';
import type { RedisConnection } from '../store/redis.js';
import type { Clock } from '../clock.js';
import { loopTurn } from '../loop-turn.js';
import type { DedupMemory } from '../gate/event-claims.js';
import type { Keys } from '../store/keys.js';
import { claimDocuments, claimEvents, CLAIM_VERDICT } from './claim-scripts.js';
import type { CollectingJob, CteJob, LabelJob } from '../store/payloads.js';
import type { QueueSet } from './queues.js';
import { addStat, type Stats } from '../store/stats.js';
import { appendSteps, prepareJourney, type ConditionalEntry, type JourneyEntry } from '../journey/journey.js';
import { documentSteps, eventSteps, type SeenFile } from './job-steps.js';
import { activeLinks, isTracingOn, itemAttributes, markError, messagingAttributes, SpanKind, traceparentOf, tracer, type Span } from '../trace.js';

export interface EnqueueDeps {
  redis: RedisConnection;
  keys: Keys;
  queues: QueueSet;
  dedup: DedupMemory;
  stats: Stats;
  clock: Clock;
  /** How long the document order and re-drop memory outlive a delivery's last document (s). */
  retentionSec: number;
  /** How long a delivery's journey outlives its last step (s); no journey is written without it. */
  historyTtlSec?: number;
}

export type DocumentEnqueueResult = 'queued' | 'already-queued' | 'already-accepted' | 'replayed' | 'superseded';

export function documentJobId(job: Pick<LabelJob | CteJob, 'kind' | 'deliveryId'> & { origin: Pick<LabelJob['origin'], 'contentId'> }): string {
  return `${job.kind}.${job.deliveryId}.${job.origin.contentId}`;
}

export function collectingJobId(deliveryId: string, instantKey: string): string {
  return `collecting.${deliveryId}.${hash('sha256', instantKey, 'hex').slice(0, 20)}`;
}

/**
 * Queues a label or CT-e as its delivery's newest document, unless a newer one was queued already
 * ('superseded': never sent). The same bytes the API already holds are not sent again
 * ('already-accepted'); a document that was dead-lettered is replayed (dropping the same file
 * again is how an operator says "try again").
 *
 * Documents queued at about the same time share their round trips (one by one, a file cost ~25
 * Redis commands in 4 round trips; ingest bench, BENCHMARKS.md item 6). A batch leaves when it is
 * full or when the event loop next turns, whichever comes first; several may be out at once (one
 * connection: Redis runs them in the order they were sent). Per batch:
 *   1. every document's order verdict (in the batch's order), whether its job exists, and the
 *      journey's claimed steps: one script call (`claimDocuments`, claim-scripts.ts; issue 46);
 *   2. the new jobs of each kind: one addBulk (a MULTI), then one counter increment per kind.
 * A document whose job exists goes on alone (its state decides: replay, already queued…). A round
 * trip that fails rejects the documents it carried, and their callers put their files back as
 * before: since the claim is one script call, a claim that fails rejects the whole batch (one
 * document's call failing alone was as rare: the errors are the connection's or the server's).
 */
export function enqueueDocument(
  deps: EnqueueDeps,
  job: LabelJob | CteJob,
  seen?: SeenFile,
  producer?: Span,
): Promise<{ jobId: string; result: DocumentEnqueueResult }> {
  let batcher = batchers.get(deps);
  if (batcher === undefined) batchers.set(deps, (batcher = documentBatcher(deps)));
  if (!isTracingOn()) return batcher(job, seen);
  // PRODUCER: a file's root span (its claim's, ended by the claim), or one of its own, a child of
  // what is active. Its traceparent rides in the job (a job that exists keeps its own).
  const span =
    producer ??
    tracer().startSpan(`publish ${job.kind}`, { kind: SpanKind.PRODUCER, attributes: { ...messagingAttributes(job.kind, 'send'), ...itemAttributes(job) } });
  span.setAttribute('messaging.message.id', documentJobId(job));
  const trace = traceparentOf(span);
  return batcher(trace === undefined ? job : { ...job, trace }, seen).then(
    (outcome) => {
      span.setAttribute('carrier_sync.enqueue.result', outcome.result);
      if (producer === undefined) span.end();
      return outcome;
    },
    (error: unknown) => {
      markError(span, error);
      if (producer === undefined) span.end();
      throw error;
    },
  );
}

type DocumentOutcome = { jobId: string; result: DocumentEnqueueResult };
interface PendingDocument {
  job: LabelJob | CteJob;
  jobId: string;
  /** The file as claimed, for the journey (absent for a backfill or a test). */
  seen: SeenFile | undefined;
  resolve(outcome: DocumentOutcome): void;
  reject(error: unknown): void;
}

/** One batcher per set of deps (one per process and Redis connection in practice). */
const batchers = new WeakMap<EnqueueDeps, (job: LabelJob | CteJob, seen?: SeenFile) => Promise<DocumentOutcome>>();
/**
 * A batch leaves as soon as it holds this many documents: Redis works through it while this
 * process checks the next files (the socket write happens at once), instead of both taking turns.
 */
const DOCUMENTS_A_BATCH = 32;

function documentBatcher(deps: EnqueueDeps): (job: LabelJob | CteJob, seen?: SeenFile) => Promise<DocumentOutcome> {
  let pending: PendingDocument[] = [];
  let isScheduled = false;
  const send = (): void => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    void enqueueBatch(deps, batch);
  };
  return (job, seen) =>
    new Promise<DocumentOutcome>((resolve, reject) => {
      pending.push({ job, jobId: documentJobId(job), seen, resolve, reject });
      if (pending.length >= DOCUMENTS_A_BATCH) send();
      else if (!isScheduled) {
        isScheduled = true;
        setImmediate(() => {
          isScheduled = false;
          send();
        });
      }
    });
}

/** Settles every document of the batch; never throws. */
async function enqueueBatch(deps: EnqueueDeps, batch: PendingDocument[]): Promise<void> {
  try {
    prepareJourney(deps.redis);
    // The journey's claim record (seen, claimed, valid) is written by the claim's script, whatever
    // its verdicts (as it rode on the job-exists check before).
    const verdicts = await claimDocuments(
      deps.redis,
      deps.keys,
      batch.map(({ job, jobId }) => ({
        kind: job.kind,
        deliveryId: job.deliveryId,
        generation: job.generation ?? '',
        contentId: job.origin.contentId,
        jobKey: deps.queues.items[job.kind].toKey(jobId),
      })),
      deps.retentionSec,
      journeyOf(
        deps,
        batch.flatMap(({ job, seen }) => (seen === undefined ? [] : documentSteps.claimed(job, seen))),
      ),
    );
    const fresh: Record<LabelJob['kind'] | CteJob['kind'], PendingDocument[]> = { label: [], cte: [] };
    // The same job twice in one batch (the same bytes dropped under two names at once): added
    // once; the second is 'already-queued', as it would be one call later.
    const repeats = new Set<PendingDocument>();
    const freshIds = new Set<string>();
    // Decided at once (an older version, an identical re-drop): recorded before their callers move the files.
    const decided: Array<{ document: PendingDocument; result: 'superseded' | 'already-accepted' }> = [];
    batch.forEach((document, i) => {
      const verdict = verdicts[i];
      if (verdict === 'older') return void decided.push({ document, result: 'superseded' });
      if (verdict === 'accepted') return void decided.push({ document, result: 'already-accepted' });
      if (verdict === 'exists') return void queueExisting(deps, document.job, document.jobId).then(document.resolve, document.reject);
      if (freshIds.has(document.jobId)) repeats.add(document);
      freshIds.add(document.jobId);
      fresh[document.job.kind].push(document);
    });
    await Promise.all(
      Object.values(fresh).map(async (documents) => {
        const adding = documents.filter((document) => !repeats.has(document));
        const [first] = adding;
        if (first === undefined) return;
        try {
          await deps.queues.items[first.job.kind].addBulk(adding.map(({ job, jobId }) => ({ name: job.kind, data: job, opts: { jobId } })));
          // The counter and the journey's 'queued' steps: one round trip.
          const chain = addStat(deps.redis.multi(), deps.keys.stats, 'received', first.job.kind, adding.length);
          journal(
            deps,
            chain,
            adding.map(({ job, seen }) => documentSteps.decided(job, 'queued', seen !== undefined)),
          );
          await chain.exec();
          for (const document of documents) document.resolve({ jobId: document.jobId, result: repeats.has(document) ? 'already-queued' : 'queued' });
        } catch (error) {
          for (const { reject } of documents) reject(error);
        }
      }),
    );
    if (decided.length > 0) {
      const steps = decided.map(({ document, result }) => documentSteps.decided(document.job, result));
      // A journey not written does not hold the file back: the write's errors are in its replies.
      if (deps.historyTtlSec !== undefined) await journal(deps, deps.redis.pipeline(), steps).exec();
      for (const { document, result } of decided) document.resolve({ jobId: document.jobId, result });
    }
  } catch (error) {
    // Settling twice does nothing: this rejects only the documents not settled yet.
    for (const { reject } of batch) reject(error);
  }
}

/** A document in order whose job id exists: what its job's state says. */
async function queueExisting(deps: EnqueueDeps, job: LabelJob | CteJob, jobId: string): Promise<DocumentOutcome> {
  const queue = deps.queues.items[job.kind];
  prepareJourney(deps.redis);
  const state = await queue.getJobState(jobId);
  if (state === 'failed') {
    const existing = await queue.getJob(jobId);
    await existing?.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    if (deps.historyTtlSec !== undefined) await journal(deps, deps.redis.pipeline(), [documentSteps.replayed(job, 're-drop')]).exec();
    return { jobId, result: 'replayed' };
  }
  if (state !== 'unknown' && state !== 'completed') return { jobId, result: 'already-queued' };
  if (state === 'completed') await queue.remove(jobId);
  await queue.add(job.kind, job, { jobId });
  await deps.stats.add('received', job.kind);
  return { jobId, result: 'queued' };
}

export interface EventsEnqueueResult {
  /** Job ids queued (or found queued from an earlier run of the same source). */
  jobIds: string[];
  /** Records not queued: their instant was claimed by another source, or by this one and already sent. */
  duplicates: Array<{ index: number; deliveryId: string; eventAt: string }>;
  /**
   * Of `duplicates`, the records this same source took in before and whose events were sent (a
   * file re-read after a crash): their jobs were this source's, finished.
   */
  alreadySent: Array<{ index: number; jobId: string }>;
}

/**
 * Queues collecting events. An event due in the future becomes a delayed job that BullMQ releases
 * when it falls due (it survives restarts in Redis).
 *
 * Queue order: every delivery's first event (by event time), then every delivery's second, and so
 * on. The workers take jobs in that order, so an event is rarely taken while an earlier one of its
 * delivery is unfinished; one that is parks, and goes to the front of the queue when woken. (Queued
 * delivery by delivery, as before, a delivery's 4 events were taken together and 3 of them parked:
 * in the mixed drop the next event of a delivery went out 0.8 s after the answer to the one before.)
 */
export async function enqueueEvents(deps: EnqueueDeps, events: readonly CollectingJob[]): Promise<EventsEnqueueResult> {
  if (!isTracingOn()) return enqueueEventsNow(deps, events);
  // Each event is an item with a trace of its own, linked to where it came from (a file's claim):
  // a file of many events is many small traces, not one that fans out without bound.
  const links = activeLinks();
  const spans = events.map((event) =>
    tracer().startSpan(`publish ${event.kind}`, {
      kind: SpanKind.PRODUCER,
      root: true,
      links,
      attributes: {
        ...messagingAttributes(event.kind, 'send'),
        'messaging.message.id': collectingJobId(event.deliveryId, event.instantKey),
        ...itemAttributes(event),
        'carrier_sync.event_at': event.eventAt,
      },
    }),
  );
  try {
    const result = await enqueueEventsNow(
      deps,
      events.map((event, i) => {
        const trace = traceparentOf(spans[i]);
        return trace === undefined ? event : { ...event, trace };
      }),
    );
    const duplicates = new Set(result.duplicates.map(({ index }) => index));
    spans.forEach((span, i) => {
      span.setAttribute('carrier_sync.enqueue.result', duplicates.has(i) ? 'duplicate' : 'queued');
      span.end();
    });
    return result;
  } catch (error) {
    for (const span of spans) {
      markError(span, error);
      span.end();
    }
    throw error;
  }
}

async function enqueueEventsNow(deps: EnqueueDeps, events: readonly CollectingJob[]): Promise<EventsEnqueueResult> {
  const order = inRankOrder(events);
  prepareJourney(deps.redis);
  const result: EventsEnqueueResult = { jobIds: [], duplicates: [], alreadySent: [] };
  let newClaims = 0;
  const now = deps.clock.now();
  const CHUNK = 500;
  for (let start = 0; start < order.length; start += CHUNK) {
    // Encoding a chunk's claims and jobs is synchronous, ~0.1 ms an event: the loop turns first (src/loop-turn.ts).
    await loopTurn();
    const slice = order.slice(start, start + CHUNK);
    // Each event's claim, the event order of those queued and the journey's received steps: one
    // script call per CLAIMS_A_CALL events (claim-scripts.ts; issue 46: a claim, then a pipeline of
    // ZADD + journey, were 2 round trips an event). The event order's ZADD happens in the script,
    // for the events claimed new or own only, before their jobs exist, so no event of this batch
    // can be taken while an earlier one of its delivery (in this chunk or the next) is not yet in
    // its chain; the push gate waits for a registered job that is not there yet (push-gate.ts,
    // chainHead). The calls leave together (one connection: Redis runs them in this order), and a
    // call that fails fails this whole enqueue, as a claim that failed did.
    const parts: Array<Array<{ event: CollectingJob; index: number }>> = [];
    for (let at = 0; at < slice.length; at += CLAIMS_A_CALL) parts.push(slice.slice(at, at + CLAIMS_A_CALL));
    const claims = (
      await Promise.all(
        parts.map((part) =>
          claimEvents(
            deps.redis,
            deps.keys,
            part.map(({ event }) => ({
              deliveryId: event.deliveryId,
              instantKey: event.instantKey,
              sourceId: event.sourceId,
              jobId: collectingJobId(event.deliveryId, event.instantKey),
              epochMs: event.epochMs,
            })),
            deps.dedup.retentionSec,
            journeyOf(
              deps,
              part.flatMap(({ event }, i) => receivedEntries(event, i + 1, now)),
            ),
          ),
        ),
      )
    ).flat();
    const toAdd: Array<{ event: CollectingJob; jobId: string }> = [];
    slice.forEach(({ event, index }, i) => {
      if (claims[i] === 'new') newClaims += 1;
      const jobId = collectingJobId(event.deliveryId, event.instantKey);
      if (claims[i] === 'sent') {
        // Taken in before and sent: its journey has it already; not queued again.
        result.duplicates.push({ index, deliveryId: event.deliveryId, eventAt: event.eventAt });
        result.alreadySent.push({ index, jobId });
        return;
      }
      if (claims[i] === 'duplicate') result.duplicates.push({ index, deliveryId: event.deliveryId, eventAt: event.eventAt });
      else toAdd.push({ event, jobId });
    });
    if (toAdd.length > 0) {
      await loopTurn();
      await deps.queues.items.collecting.addBulk(
        toAdd.map(({ event, jobId }) => ({
          name: 'collecting',
          data: event,
          opts: { jobId, delay: Math.max(0, event.epochMs - now) },
        })),
      );
      result.jobIds.push(...toAdd.map(({ jobId }) => jobId));
    }
  }
  // An OWN or SENT claim is the same source taken up again after a crash: not received twice.
  const duplicates = result.duplicates.length - result.alreadySent.length;
  await deps.stats.add('received', 'collecting', newClaims + duplicates);
  await deps.stats.add('duplicates', 'collecting', duplicates);
  return result;
}

/**
 * Events claimed in one script call: a call of 100 is ~800 commands inside Redis (each claim reads
 * up to 10 claim buckets; `npm run bench -- --only round-trips`). Bounded, so a large events file
 * never holds Redis (and the gate's scripts waiting behind it) in one long call; a chunk's calls
 * leave in one round trip anyway.
 */
const CLAIMS_A_CALL = 100;

/**
 * An event's received steps, each written only for the claim it tells (`item`: its place in its
 * claim call): received for any claim but SENT (taken in and sent before: its journey has it), then
 * duplicate, or held until it is due for a claim that is queued (NEW, OWN).
 */
function receivedEntries(event: CollectingJob, item: number, nowMs: number): ConditionalEntry[] {
  const [received, held] = eventSteps.received(event, false, nowMs);
  const [, duplicate] = eventSteps.received(event, true, nowMs);
  const when = (verdicts: string): ConditionalEntry['when'] => ({ item, verdicts });
  return [
    { ...received!, when: when(CLAIM_VERDICT.new + CLAIM_VERDICT.own + CLAIM_VERDICT.duplicate) },
    { ...duplicate!, when: when(CLAIM_VERDICT.duplicate) },
    ...(held === undefined ? [] : [{ ...held, when: when(CLAIM_VERDICT.new + CLAIM_VERDICT.own) }]),
  ];
}

/** Events with their input index, ordered by their rank within their delivery, then by time. */
function inRankOrder(events: readonly CollectingJob[]): Array<{ event: CollectingJob; index: number }> {
  const byDelivery = new Map<string, Array<{ event: CollectingJob; index: number }>>();
  events.forEach((event, index) => {
    const list = byDelivery.get(event.deliveryId);
    if (list === undefined) byDelivery.set(event.deliveryId, [{ event, index }]);
    else list.push({ event, index });
  });
  const ranked: Array<{ event: CollectingJob; index: number; rank: number }> = [];
  for (const list of byDelivery.values()) {
    list.sort((a, b) => a.event.epochMs - b.event.epochMs || a.index - b.index);
    list.forEach((entry, rank) => ranked.push({ ...entry, rank }));
  }
  ranked.sort((a, b) => a.rank - b.rank || a.event.epochMs - b.event.epochMs || a.index - b.index);
  return ranked;
}

/** The journey's steps for a claim script when the deployment keeps journeys. */
function journeyOf(
  deps: EnqueueDeps,
  entries: readonly ConditionalEntry[],
): { ttlSec: number; entries: readonly ConditionalEntry[]; nowMs: number } | undefined {
  if (deps.historyTtlSec === undefined || entries.length === 0) return undefined;
  return { ttlSec: deps.historyTtlSec, entries, nowMs: deps.clock.now() };
}

/** Appends the journey's steps to `chain` when the deployment keeps journeys. */
function journal<C extends Parameters<typeof appendSteps>[0]>(deps: EnqueueDeps, chain: C, entries: readonly JourneyEntry[]): C {
  if (deps.historyTtlSec !== undefined && entries.length > 0) appendSteps(chain, deps.keys, deps.historyTtlSec, entries, deps.clock.now());
  return chain;
}
