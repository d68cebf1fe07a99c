/**
 * The push gate: one Redis round trip before an item's request (`enter`) and one after it
 * (`leave`). Each is one Lua script, so every check and every change it makes is atomic across
 * processes. Documents and events have a script each way; they share the 401 gate and the slot.
 *
 * `enter` decides, in this order:
 *  1. order — a label or CT-e may be sent only while it is its delivery's newest document (see
 *     document-record.ts); an older one is *superseded*, one the API already holds is *already
 *     accepted*, and only one document request per delivery and kind is in flight at a time (the
 *     document lock). A collecting event may be sent only when it is the head of its delivery's
 *     chain — the earliest unfinished event — and no request of the delivery is on the wire (the
 *     event lock); otherwise it *parks* until the event before it finishes, or is *busy*.
 *  2. the 401 gate — while the API refuses the key, exactly one item at a time is let through as
 *     the probe (when the scheduler opens the probe), the others wait.
 *  3. the shared rate limit — a 429 pause, then a slot of the sliding window (limiter.ts owns both).
 * Only when all three pass does it take the slot, the lock and the probe together.
 *
 * Before the three, a job whose previous attempt's owner process is alive waits for that owner's
 * answer ('owned'; attempt-owner.ts); a request that goes writes the job's attempt record naming
 * this process. With replicas, the enter is followed by WAIT in the same round trip, and a request
 * whose attempt record reached no replica does not leave ('unreplicated'; replica-wait.ts).
 *
 * `leave` stamps the slot with the time the response arrived, releases the lock, and, for an item
 * that ended, counts it (stats and the minute's activity), records the content the API now holds
 * (documents) or advances the delivery's chain and wakes the parked event next in it, putting it at
 * the front of the wait list (events; event-wake.ts).
 */
import type { ApiConfig, Config, DeliveryConfig, HistoryConfig } from '../config/schema.js';
import { ACTIVITY_TTL_SEC } from '../store/activity.js';
import { compactContentId, compactGeneration, documentField, documentPeriodSec } from './document-record.js';
import { historyTtlSec, journalArgs } from '../journey/journey.js';
import { keyIdOf, type ItemKind, type Keys } from '../store/keys.js';
import { maxRequestMsOf, sinceMs } from './limiter.js';
import type { CollectingJob, ItemJob, ItemResult, LabelJob, CteJob } from '../store/payloads.js';
import type { RedisConnection } from '../store/redis.js';
import { ENTER_DOCUMENT, ENTER_EVENT, LEAVE_DOCUMENT, LEAVE_EVENT } from './push-gate-scripts.js';
import { ATTEMPT_RECORD_TTL_MS, ownerTiming, SELF_OWNER } from './attempt-owner.js';
import { confirmAnswer, type AnswerState, type ReplicaWait } from './replica-wait.js';
import type { Script } from '../store/script.js';
import { derivedOf, goStep, leaveSteps, randomHex8, resentStep, stepBase, type AttemptAnswer, type SlotUse } from './gate-journey.js';

export { RESENT_REASON, type AttemptAnswer, type SlotUse } from './gate-journey.js';

export type GateVerdict =
  | { action: 'go'; isProbe: boolean; slot: string; authEpoch: number }
  | { action: 'superseded' }
  /** A document the API holds already; an event another run of its job finished. */
  | { action: 'already-accepted' }
  /** Events: an earlier event of the delivery is unfinished; it is due at `headDueMs` (epoch ms). */
  | { action: 'park'; headDueMs: number }
  /** Another request of the delivery (a document of its kind, or any event) is in flight; ask again within `ms`. */
  | { action: 'busy'; ms: number }
  /** The API refuses the key and another item is the probe. */
  | { action: 'auth' }
  /** A 429 pause or a full window: a slot frees in `ms`. */
  | { action: 'wait'; ms: number }
  /** The previous attempt's owner process is alive (or not yet known dead): its answer comes; ask again within `ms`. */
  | { action: 'owned'; ms: number }
  /** The attempt record reached no replica within the WAIT: the request must not leave; give `slot` back. */
  | { action: 'unreplicated'; slot: string };

export interface PushGateOptions {
  ratePerMinute: number;
  /** The API's window; 60 s. Tests shorten it. */
  windowMs?: number;
  /** Longest a request can take (connect + headers + body timeouts): a slot counts as in flight till then. */
  maxRequestMs: number;
  /** The locks' and the probe's lifetime: longer than any request. */
  lockMs: number;
  /** How long the document order and the re-drop memory are kept after a delivery's last document. */
  retentionSec: number;
  /** How long an event registered in its chain may be without its job before the chain drops it (`chainHead`). */
  missingJobGraceMs?: number;
  /** How long each journey step is kept after its UTC day ends (s); 30 days when not given. */
  historyTtlSec?: number;
  /** How long an event_at claim is kept (`dedup.retentionDays`, in s); 90 days when not given. */
  claimRetentionSec?: number;
  /** This process as an attempt's owner, and the grace before an owner whose liveness key is gone counts as dead. */
  owner?: { self: string; graceMs: number };
  /** The replica watch: with replicas, a request leaves only once its attempt record is on one. */
  replicas?: ReplicaWait;
}

/** The push gate's settings from the config: the same window as the limiter's `rateLimiterFor`. */
export function pushGateOptions(config: {
  delivery: Pick<DeliveryConfig, 'ratePerMinute' | 'rateWindowMarginMs' | 'lockMs' | 'completedRetentionSec'>;
  api?: Pick<ApiConfig, 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs'>;
  history?: Pick<HistoryConfig, 'retentionDays'>;
  dedup?: Config['dedup'];
}): PushGateOptions {
  const maxRequestMs = maxRequestMsOf(config);
  return {
    ratePerMinute: config.delivery.ratePerMinute,
    windowMs: 60_000 + config.delivery.rateWindowMarginMs,
    maxRequestMs,
    // Outlives any request, so a lock or probe is never lost while its request is in flight.
    lockMs: Math.max(config.delivery.lockMs, maxRequestMs + 5_000),
    retentionSec: config.delivery.completedRetentionSec,
    ...(config.history === undefined ? {} : { historyTtlSec: historyTtlSec(config.history.retentionDays) }),
    ...(config.dedup === undefined ? {} : { claimRetentionSec: config.dedup.retentionDays * 86_400 }),
  };
}

/** An outcome message for the spool's list, appended by `leave` in the same script (outcome-list.ts). */
export interface OutcomeWrite {
  list: string;
  entry: string;
  /**
   * An events file's line (events only): its batch's keys (queue/batches.ts: jobs set, done set,
   * batch hash), its dead letter as the batch keeps it ('' for none), and the message to append
   * instead of `entry` when this line completes the batch. `leave` marks the line done in the same
   * script (issue 46: `batchMarkDone` was a round trip of its own, the outcome consumer's).
   */
  batch?: { keys: [string, string, string]; deadLetter: string; entryIfComplete: string };
}

/** An entry for a capped list, appended by `leave` in the same script: a failed attempt's record (queue/attempts.ts). */
export interface CappedAppend {
  list: string;
  entry: string;
  /** The list keeps this many newest entries. */
  keep: number;
  ttlSec: number;
}

/** What `leave` writes besides the gate's own bookkeeping, in the same script: the answer stays one write. */
export interface AnswerWrites {
  outcome?: OutcomeWrite;
  /** A failed attempt's record; written only by the attempt's owner, as the rest of the leave. */
  failure?: CappedAppend;
}

/** A new attempt's slot member: the job id and 8 random hex digits. */
export function attemptMember(jobId: string): string {
  return `${jobId}:${randomHex8()}`;
}

export interface PushGate {
  /**
   * `attempt`: the attempt's number, for the journey's "attempt started" step. `member`: the
   * attempt's slot member (`attemptMember`), named by the attempt record a 'go' writes; the caller
   * makes it, so that an enter whose reply is lost can still be released (push/processor.ts).
   */
  enter(item: ItemJob, jobId: string, attempt?: number, member?: string): Promise<GateVerdict>;
  /**
   * After a request (`slot` set) or a decision without one. `result` is set when the item ended
   * (counted, order advanced); null while it goes on (a retry). `answer`: what the request got
   * back, recorded in the journey with the outcome. `writes`: the outcome message and the failed
   * attempt's record, written by the same script. Returns the parked event it woke (now first in
   * the wait list), or null.
   */
  leave(item: ItemJob, jobId: string, slot: SlotUse | null, result: ItemResult | null, answer?: AttemptAnswer, writes?: AnswerWrites): Promise<string | null>;
  /** Events: true while the job waits to be woken (a `leave` that woke it took it off). */
  isParked(item: ItemJob, jobId: string): Promise<boolean>;
  /** Whether an answer's write is on this primary and on a replica (replica-wait.ts). */
  confirm(jobId: string, member: string): Promise<AnswerState>;
  /** True while the deployment has replicas: an answer counts as written once one holds it. */
  hasReplicas(): boolean;
}

/**
 * How long an event registered in its delivery's chain may be without its job before the chain
 * drops it (see `chainHead`): far longer than the one round trip between registering and adding.
 */
const MISSING_JOB_GRACE_MS = 30_000;

const COUNTER_OF: Readonly<Record<ItemResult, string>> = {
  accepted: 'sent',
  repeat: 'duplicates',
  superseded: 'superseded',
  'dead-lettered': 'dead_lettered',
};

const DEFAULT_HISTORY_TTL_SEC = historyTtlSec(30);
/** `dedup.retentionDays` by default (config/default.yaml). */
const DEFAULT_CLAIM_RETENTION_SEC = 90 * 86_400;

type RawVerdict = [string, number | string | undefined, string | undefined, number | undefined];

function verdictOf([verdict, a, b, c]: RawVerdict): GateVerdict {
  switch (verdict) {
    case 'go':
      return { action: 'go', isProbe: Number(a) === 1, slot: String(b), authEpoch: Number(c) };
    case 'superseded':
      return { action: 'superseded' };
    case 'already':
      return { action: 'already-accepted' };
    case 'park':
      return { action: 'park', headDueMs: Number(a) };
    case 'busy':
      return { action: 'busy', ms: Number(a) };
    case 'auth':
      return { action: 'auth' };
    case 'owned':
      return { action: 'owned', ms: Number(a) };
    default:
      return { action: 'wait', ms: Number(a) };
  }
}

export function createPushGate(redis: RedisConnection, keys: Keys, carrierKey: string, options: PushGateOptions): PushGate {
  return new RedisPushGate(redis, keys, keyIdOf(carrierKey), options);
}

/** The gate's calls: one script call each, its keys and arguments laid out as the script's header says. */
class RedisPushGate implements PushGate {
  readonly #windowMs: number;
  /** The deployment's document-record period, once read (`documentPeriodSec`). */
  #recordPeriodSec: number | undefined;
  readonly #graceMs: number;
  readonly #journeyTtlSec: number;
  readonly #authKeys: string[];
  readonly #activityArgs: Array<string | number>;
  /**
   * A document's record key and field, made once a run of its job (its data object) for the enter
   * and the leave: both hash the delivery id (SHA-256), and the two calls' hashes were ~1.7 % of the
   * delivery thread's samples on the large drop (BENCHMARKS.md, the seventeenth session).
   */
  readonly #documentPlaces = new WeakMap<LabelJob | CteJob, { stem: string; field: Buffer }>();

  constructor(
    private readonly redis: RedisConnection,
    private readonly keys: Keys,
    private readonly keyId: string,
    private readonly options: PushGateOptions,
  ) {
    this.#windowMs = options.windowMs ?? 60_000;
    this.#graceMs = options.missingJobGraceMs ?? MISSING_JOB_GRACE_MS;
    this.#journeyTtlSec = options.historyTtlSec ?? DEFAULT_HISTORY_TTL_SEC;
    this.#authKeys = [keys.authFailure, keys.authProbe, keys.limiter(keyId), keys.pause(keyId), keys.authEpoch];
    this.#activityArgs = [keys.activityStem, ACTIVITY_TTL_SEC];
  }

  #documentPlace(item: LabelJob | CteJob): { stem: string; field: Buffer } {
    let place = this.#documentPlaces.get(item);
    if (place === undefined) {
      place = { stem: this.keys.documentRecords(item.deliveryId), field: documentField(item.kind, item.deliveryId) };
      this.#documentPlaces.set(item, place);
    }
    return place;
  }

  async enter(item: ItemJob, jobId: string, attempt?: number, member = attemptMember(jobId)): Promise<GateVerdict> {
    const call =
      item.kind === 'collecting'
        ? this.#enterEventCall(item, jobId, member, attempt)
        : this.#enterDocumentCall(item, jobId, member, attempt, this.#recordPeriodSec ?? (await this.#readRecordPeriod()));
    const replicas = this.options.replicas;
    if (replicas !== undefined && !replicas.isRead()) await replicas.firstRead;
    if (replicas === undefined || replicas.replicas() === 0) return verdictOf((await call.script(this.redis, call.keys, call.args)) as RawVerdict);
    // The enter and its WAIT in one round trip, on the connection WAIT may block (replica-wait.ts).
    const connection = replicas.connection();
    call.script.define(connection);
    const pipeline = connection.pipeline();
    call.script.queue(pipeline, call.keys, call.args);
    pipeline.wait(1, replicas.timeoutMs);
    const [[enterError, raw] = [null, null], [waitError, acks] = [null, 0]] = (await pipeline.exec()) ?? [];
    if (enterError) throw enterError;
    const verdict = verdictOf(raw as RawVerdict);
    if (verdict.action !== 'go') return verdict;
    if (waitError) throw waitError;
    return replicas.acknowledged(Number(acks)) ? verdict : { action: 'unreplicated', slot: verdict.slot };
  }

  async leave(
    item: ItemJob,
    jobId: string,
    slot: SlotUse | null,
    result: ItemResult | null,
    answer?: AttemptAnswer,
    writes: AnswerWrites = {},
  ): Promise<string | null> {
    const ending = [result ?? '', slot?.slot ?? '', sinceMs(slot?.respondedAt), result === null ? '' : COUNTER_OF[result]];
    const journey = [...journalArgs(this.keys, item.deliveryId, this.#journeyTtlSec), ...leaveSteps(item, slot, result, answer)];
    // KEYS: the attempt record, the outcome list and the failure list (an absent one is named by
    // the attempt record's key, never written: its entry is '').
    const { outcome, failure } = writes;
    const attemptKey = this.keys.attemptOwner(jobId);
    const answerKeys = [attemptKey, outcome?.list ?? attemptKey, failure?.list ?? attemptKey];
    const answerArgs = [outcome?.entry ?? '', failure?.entry ?? '', failure?.keep ?? 0, failure?.ttlSec ?? 0];
    if (item.kind === 'collecting') {
      // An events file's line: its batch's keys and args (absent: the attempt record's key, never written).
      const batch = outcome?.batch;
      return this.#leaveEvent(
        item,
        jobId,
        ending,
        journey,
        [...answerKeys, ...(batch?.keys ?? [attemptKey, attemptKey, attemptKey])],
        [...answerArgs, batch?.deadLetter ?? '', batch?.entryIfComplete ?? ''],
      );
    }
    await this.#leaveDocument(item, jobId, ending, journey, answerKeys, answerArgs);
    return null;
  }

  async #readRecordPeriod(): Promise<number> {
    this.#recordPeriodSec = await documentPeriodSec(this.redis, this.keys, this.options.retentionSec);
    return this.#recordPeriodSec;
  }

  /** The arguments every enter ends with: this owner, the liveness stem, the grace, the record's ttl, the resent step. */
  #ownerArgs(item: ItemJob): Array<string | number> {
    const owner = this.options.owner ?? { self: SELF_OWNER, graceMs: ownerTiming(this.options.lockMs).graceMs };
    const resent = resentStep(item);
    return [owner.self, this.keys.owner(''), owner.graceMs, ATTEMPT_RECORD_TTL_MS, resent];
  }

  async isParked(item: ItemJob, jobId: string): Promise<boolean> {
    return (await this.redis.sismember(this.keys.eventParked(item.deliveryId), jobId)) === 1;
  }

  confirm(jobId: string, member: string): Promise<AnswerState> {
    return confirmAnswer(this.redis, this.options.replicas, this.keys.attemptOwner(jobId), this.keys.healthProbe, member);
  }

  hasReplicas(): boolean {
    return (this.options.replicas?.replicas() ?? 0) > 0;
  }

  /** The event's claim record and how long claims are kept (gate/event-claims.ts). */
  #claimArgs(item: CollectingJob): Array<Buffer | number> {
    return [derivedOf(item).claim!, this.options.claimRetentionSec ?? DEFAULT_CLAIM_RETENTION_SEC];
  }

  #slotArgs(member: string): Array<string | number> {
    return [this.options.lockMs, this.#windowMs, this.options.ratePerMinute, member, this.options.maxRequestMs];
  }

  #enterDocumentCall(item: LabelJob | CteJob, jobId: string, member: string, attempt: number | undefined, recordPeriodSec: number): EnterCall {
    const { keys } = this;
    const base = stepBase(item);
    const place = this.#documentPlace(item);
    return {
      script: ENTER_DOCUMENT,
      keys: [place.stem, keys.documentLock(item.kind, item.deliveryId), ...this.#authKeys, keys.attemptOwner(jobId), keys.answerCounts],
      args: [
        jobId,
        compactContentId(item.origin.contentId),
        compactGeneration(item.generation ?? ''),
        place.field,
        recordPeriodSec,
        this.options.retentionSec,
        ...this.#slotArgs(member),
        ...this.#activityArgs,
        ...journalArgs(keys, item.deliveryId, this.#journeyTtlSec),
        goStep(base, member, attempt, item.trace),
        // The superseded and already-accepted steps' fields, without braces: the script makes the step it takes.
        JSON.stringify(base).slice(1, -1),
        ...this.#ownerArgs(item),
      ],
    };
  }

  #enterEventCall(item: CollectingJob, jobId: string, member: string, attempt: number | undefined): EnterCall {
    const { keys } = this;
    return {
      script: ENTER_EVENT,
      keys: [
        keys.eventOrder(item.deliveryId),
        keys.eventParked(item.deliveryId),
        keys.eventLock(item.deliveryId),
        keys.dedup(item.deliveryId),
        ...this.#authKeys,
        keys.eventClaims(item.deliveryId),
        keys.attemptOwner(jobId),
        keys.answerCounts,
      ],
      args: [
        jobId,
        item.epochMs,
        item.instantKey,
        item.sourceId,
        jobStemOf(keys, 'collecting'),
        keys.eventMissing,
        this.#graceMs,
        this.options.retentionSec,
        ...this.#slotArgs(member),
        ...this.#activityArgs,
        ...journalArgs(keys, item.deliveryId, this.#journeyTtlSec),
        goStep(stepBase(item), member, attempt, item.trace),
        ...this.#claimArgs(item),
        ...this.#ownerArgs(item),
      ],
    };
  }

  async #leaveDocument(
    item: LabelJob | CteJob,
    jobId: string,
    ending: Array<string | number>,
    journey: Array<string | number>,
    answerKeys: string[],
    answerArgs: Array<string | number>,
  ): Promise<void> {
    const { keys } = this;
    const recordPeriodSec = this.#recordPeriodSec ?? (await this.#readRecordPeriod());
    const place = this.#documentPlace(item);
    await LEAVE_DOCUMENT(
      this.redis,
      [place.stem, keys.documentLock(item.kind, item.deliveryId), keys.limiter(this.keyId), keys.stats, keys.attempts(`${jobId}:held`), ...answerKeys],
      [
        jobId,
        compactContentId(item.origin.contentId),
        ...ending,
        item.kind,
        place.field,
        recordPeriodSec,
        this.options.retentionSec,
        ...this.#activityArgs,
        ...journey,
        ...answerArgs,
      ],
    );
  }

  async #leaveEvent(
    item: CollectingJob,
    jobId: string,
    ending: Array<string | number>,
    journey: Array<string | number>,
    answerKeys: string[],
    answerArgs: Array<string | number>,
  ): Promise<string | null> {
    const { keys } = this;
    const woken = await LEAVE_EVENT(
      this.redis,
      [
        keys.eventOrder(item.deliveryId),
        keys.eventParked(item.deliveryId),
        keys.eventLock(item.deliveryId),
        keys.dedup(item.deliveryId),
        keys.limiter(this.keyId),
        keys.stats,
        keys.attempts(`${jobId}:held`),
        keys.eventClaims(item.deliveryId),
        ...answerKeys,
      ],
      [
        jobId,
        ...ending,
        item.instantKey,
        item.sourceId,
        jobStemOf(keys, 'collecting'),
        keys.eventMissing,
        this.#graceMs,
        ...this.#activityArgs,
        ...journey,
        ...this.#claimArgs(item),
        ...answerArgs,
      ],
    );
    return typeof woken === 'string' ? woken : null;
  }
}

/** An enter's script call: run at once, or queued before its WAIT in one pipeline. */
interface EnterCall {
  script: Script;
  keys: string[];
  args: Array<string | number | Buffer>;
}

/** Where BullMQ keeps a job of `kind` (the chain walk reads the job's hash). */
function jobStemOf(keys: Keys, kind: ItemKind): string {
  return `${keys.bullPrefix}:${kind}:`;
}
