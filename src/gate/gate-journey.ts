/**
 * The journey steps the push gate writes (journey/journey.ts keeps their format), and what it
 * derives from an item for them and for its event_at claim: made once per run of a job, kept with
 * the job's data object for its `enter` and `leave`.
 */
import { randomBytes } from 'node:crypto';
import { eventRef, KIND_CODE, SELF, stepJson, type StoredStep } from '../journey/journey.js';
import type { StoredReason } from '../errors.js';
import type { ItemJob, ItemResult } from '../store/payloads.js';
import { claimRecord } from './event-claims.js';
import { traceIdOf } from '../trace.js';

/** A slot whose request was made: its member, and `performance.now()` when the answer (or failure) came. */
export interface SlotUse {
  slot: string;
  respondedAt: number;
}

/** What a request got back, for the journey: the answer (status, codes, message) or the failure without one. */
export interface AttemptAnswer {
  durationMs: number;
  /** HTTP status; absent when no response came (network error, timeout). */
  status?: number;
  /** Our error code (absent on success). */
  code?: string;
  apiCode?: string;
  message?: string;
  /** The message's reason (i18n/reason.ts), when it is ours: the history words it in its reader's language. */
  reason?: StoredReason;
}

/** The journey's step when a job is sent again because its previous attempt's owner died with the answer. */
export const RESENT_REASON = 'answer unknown: owner process died; sent again';

/** The journey's step name for an item that ended after a request (superseded ends without one). */
const OUTCOME_STEP: Readonly<Record<ItemResult, string>> = {
  accepted: 'accepted',
  repeat: 'duplicate',
  superseded: 'superseded',
  'dead-lettered': 'dead-lettered',
};

/**
 * What the gate derives from an item with a hash (the event's journey ref, its claim record), kept
 * for the item's `enter` and `leave` (one job's data object): each hash made once a run.
 */
const derived = new WeakMap<ItemJob, { base: Pick<StoredStep, 'k' | 'h' | 'i'>; claim?: Buffer }>();

export function derivedOf(item: ItemJob): { base: Pick<StoredStep, 'k' | 'h' | 'i'>; claim?: Buffer } {
  let found = derived.get(item);
  if (found === undefined) {
    found =
      item.kind === 'collecting'
        ? { base: { k: 'e', i: eventRef(item.instantKey) }, claim: claimRecord(item.deliveryId, item.instantKey, item.sourceId) }
        : { base: { k: KIND_CODE[item.kind], h: item.origin.contentId.slice(0, 8) } };
    derived.set(item, found);
  }
  return found;
}

/** The fields every journey step of the item carries: kind, and its file or its event_at. */
export function stepBase(item: ItemJob): Pick<StoredStep, 'k' | 'h' | 'i'> {
  return derivedOf(item).base;
}

/**
 * Random hex for slot members, drawn from a pool filled 4 KB at a time (one `randomBytes` call a
 * request cost more than the rest of `enter`'s own work).
 */
const randomPool = { bytes: Buffer.alloc(0), at: 0 };

export function randomHex8(): string {
  if (randomPool.at + 4 > randomPool.bytes.length) {
    randomPool.bytes = randomBytes(4096);
    randomPool.at = 0;
  }
  randomPool.at += 4;
  return randomPool.bytes.toString('hex', randomPool.at - 4, randomPool.at);
}

/** An attempt's id in the journey (joins its start to its answer): the slot member's random part. */
function attemptIdOf(member: string): string {
  return member.slice(member.lastIndexOf(':') + 1, member.lastIndexOf(':') + 7);
}

/** The journey steps `leave` records: the answer to the request made, and how the item ended. */
export function leaveSteps(item: ItemJob, slot: SlotUse | null, result: ItemResult | null, answer: AttemptAnswer | undefined): [string, string] {
  if (answer === undefined) return ['', ''];
  const base = stepBase(item);
  const facts: Partial<StoredStep> = {
    ...(answer.status === undefined ? {} : { st: answer.status }),
    ...(answer.code === undefined ? {} : { c: answer.code }),
    ...(answer.apiCode === undefined ? {} : { ac: answer.apiCode }),
    ...(answer.message === undefined ? {} : { r: answer.message }),
    ...(answer.reason === undefined ? {} : { rk: answer.reason }),
  };
  // The answer names its attempt only (`a`): the reader joins it to the attempt's step.
  const answerStep = stepJson({
    k: base.k,
    s: 'answer',
    ...(slot === null ? base : { a: attemptIdOf(slot.slot) }),
    ms: Math.round(answer.durationMs),
    ...facts,
  });
  if (result === null || result === 'superseded') return [answerStep, ''];
  const outcome: StoredStep = { ...base, s: OUTCOME_STEP[result], ...(result === 'dead-lettered' ? facts : {}) };
  if (result === 'repeat') outcome.r = 'the API reported this event_at as a repeat';
  return [answerStep, stepJson(outcome)];
}

/** The journey's step of an attempt that goes: its id, its number, and this process. */
export function goStep(base: Pick<StoredStep, 'k' | 'h' | 'i'>, member: string, attempt: number | undefined, traceparent?: string): string {
  // The attempt's span is a child of the span that queued the job: its trace is the traceparent's.
  const traceId = traceIdOf(traceparent);
  return stepJson({
    ...base,
    s: 'attempt',
    a: attemptIdOf(member),
    ...(attempt === undefined ? {} : { n: attempt }),
    w: SELF,
    ...(traceId === undefined ? {} : { tr: traceId }),
  });
}

/** The journey's step of a job sent again because its previous attempt's owner died with the answer. */
export function resentStep(item: ItemJob): string {
  return stepJson({ ...stepBase(item), s: 'resent', r: RESENT_REASON });
}
