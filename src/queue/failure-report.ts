/**
 * The one format of `failed/<kind>/<file>.error.json`, whichever path writes it: a file refused
 * locally when it is claimed, a dead letter reported by its outcome, a dead letter found by the
 * in-flight reconcile after a lost outcome, an events file's invalid lines or dead-lettered events.
 * Every report holds every key of `ErrorReport`, with null where a key has no value (a local
 * refusal has no HTTP status, an events file no single delivery), so a reader never needs to know
 * which path wrote it. An events file's report adds the keys of `EventsFileDetails`; each of its
 * dead-lettered events has the keys of a single item's dead letter, plus its line.
 *
 * It lives in queue/ because both spool/ (claims, reconcile) and outcome/ build reports, and the
 * facts of a dead letter come from here (the outcome message, or the failed job and its attempt log).
 *
 * `message` is English, as it always was (scripts and logs read it); `reason` is the same for a
 * person, in CARRIER_SYNC_LANG, rendered when the report is written from the reason's key (kept in
 * `reasonSource`, never written) or, for what the API said, from the code, status and its answer.
 */
import type { StoredReason } from '../errors.js';
import { describeFailure } from '../i18n/reason.js';
import { say, type Lang } from '../i18n/translate.js';
import type { OutcomeMessage } from '../store/payloads.js';

/** Why an item failed: our code and message, and what the API said, when it said anything. */
export interface ReportBody {
  code: string;
  /** The API's message when it gave one, else ours. */
  message: string;
  status: number | null;
  apiCode: string | null;
  apiMessage: string | null;
  params: Record<string, unknown> | null;
  /** Requests made for the item; null when it was never sent. */
  attempts: number | null;
  firstFailureAt: string | null;
  lastFailureAt: string | null;
  jobId: string | null;
  deliveryId: string | null;
  /** What an operator can do about it, when we know. */
  hint: string | null;
  /** The reason's key and values, when the refusal has one: rendered as `reason`, not written itself. */
  reasonSource?: StoredReason | undefined;
}

/** A body as written: `reason` beside `message`, in the report's language. */
export type WrittenBody = Omit<ReportBody, 'reasonSource'> & { reason: string };

/** An invalid line of an events file, as the validator reported it (with its reason's key). */
export interface InvalidLine {
  line: number;
  code: string;
  message: string;
  reason?: StoredReason | undefined;
}

export interface EventsFileDetails {
  invalidLines: InvalidLine[];
  deadLettered: Array<{ line: number } & ReportBody>;
  duplicates: number;
  /** Valid records the API took (sent, or already known to it). */
  accepted: number;
  /** An events file archived with invalid lines: where the file went (from the spool root); null while it is beside its report. */
  archivedTo: string | null;
}

export type ReportContent = ReportBody | (ReportBody & EventsFileDetails);

/** Where the report stands: the file's name in failed/, its spool kind, when, and the claim it left in flight (null: refused before a claim). */
export interface ReportPlace {
  file: string;
  kind: string;
  at: string;
  claim: string | null;
}

export type ErrorReport = ReportPlace &
  WrittenBody &
  Partial<{
    invalidLines: Array<{ line: number; code: string; message: string; reason: string }>;
    deadLettered: Array<{ line: number } & WrittenBody>;
    duplicates: number;
    accepted: number;
    archivedTo: string | null;
  }>;

/** The keys of every report, in the order they are written. */
export const REPORT_KEYS = [
  'file',
  'kind',
  'at',
  'code',
  'message',
  'reason',
  'status',
  'apiCode',
  'apiMessage',
  'params',
  'attempts',
  'firstFailureAt',
  'lastFailureAt',
  'jobId',
  'deliveryId',
  'hint',
  'claim',
] as const;
/** The extra keys of an events file's report. */
export const EVENTS_REPORT_KEYS = ['invalidLines', 'deadLettered', 'duplicates', 'accepted', 'archivedTo'] as const;

/** The report as written: every key present, in one order, `reason` and `hint` in `lang`. The only place a report is assembled. */
export function errorReport(place: ReportPlace, content: ReportContent, lang: Lang = 'en'): ErrorReport {
  const report: ErrorReport = {
    file: place.file,
    kind: place.kind,
    at: place.at,
    ...bodyOf(content, lang),
    claim: place.claim,
  };
  if ('invalidLines' in content) {
    const { invalidLines, deadLettered, duplicates, accepted, archivedTo } = content;
    return {
      ...report,
      invalidLines: invalidLines.map(({ line, code, message, reason }) => ({ line, code, message, reason: describeFailure(lang, { code, message, reason }) })),
      deadLettered: deadLettered.map((entry) => ({ line: entry.line, ...bodyOf(entry, lang) })),
      duplicates,
      accepted,
      archivedTo,
    };
  }
  return report;
}

function bodyOf(body: ReportBody, lang: Lang): WrittenBody {
  const { code, message, status, apiCode, apiMessage, params, attempts, firstFailureAt, lastFailureAt, jobId, deliveryId, hint } = body;
  const reason = describeFailure(lang, { code, message, reason: body.reasonSource, status, apiCode, apiMessage });
  const shownHint = hint === NOT_FOUND_HINT ? say(lang, 'reason.notFoundHint') : hint;
  return { code, message, reason, status, apiCode, apiMessage, params, attempts, firstFailureAt, lastFailureAt, jobId, deliveryId, hint: shownHint };
}

const NOTHING_FROM_THE_API = {
  status: null,
  apiCode: null,
  apiMessage: null,
  params: null,
  attempts: null,
  firstFailureAt: null,
  lastFailureAt: null,
  jobId: null,
  hint: null,
} as const;

/** A file refused before anything was sent: a validator's verdict, a bad name, a size limit. */
export function refusalReport(error: { code: string; message: string; reason?: StoredReason | undefined }, deliveryId: string | null = null): ReportBody {
  return { code: error.code, message: error.message, ...NOTHING_FROM_THE_API, deliveryId, reasonSource: error.reason };
}

/** An events file's report: its invalid lines and dead-lettered events, each event in the dead-letter format. */
export function eventsFileReport(error: { code: string; message: string; reason: StoredReason }, details: EventsFileDetails): ReportBody & EventsFileDetails {
  return { code: error.code, message: error.message, ...NOTHING_FROM_THE_API, deliveryId: null, reasonSource: error.reason, ...details };
}

/** What is known of a dead letter, wherever it was read from. */
export interface DeadLetterFacts {
  /** The last attempt's error: our code and message, and the API's answer. */
  error: Record<string, unknown>;
  attempts: number | null;
  firstFailureAt: string | null;
  lastFailureAt: string | null;
  jobId: string;
  deliveryId: string | null;
}

const NOT_FOUND_HINT = say('en', 'reason.notFoundHint');

/**
 * An item the API refused for good, or whose retries ran out. A dead letter whose error has no code
 * (an earlier version's failed reason that was not ours) is UNKNOWN: an API_* code comes only from
 * an answer the API gave.
 */
export function deadLetterReport(facts: DeadLetterFacts): ReportBody {
  const { error } = facts;
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  const apiCode = text(error['apiCode']);
  const apiMessage = text(error['apiMessage']);
  const params = error['params'];
  return {
    code: text(error['code']) ?? 'UNKNOWN',
    message: apiMessage ?? text(error['message']) ?? 'dead-lettered',
    status: typeof error['status'] === 'number' ? error['status'] : null,
    apiCode,
    apiMessage,
    params: typeof params === 'object' && params !== null && !Array.isArray(params) ? (params as Record<string, unknown>) : null,
    attempts: facts.attempts,
    firstFailureAt: facts.firstFailureAt,
    lastFailureAt: facts.lastFailureAt,
    jobId: facts.jobId,
    deliveryId: facts.deliveryId,
    hint: apiCode === 'DELIVERY_NOT_FOUND' ? NOT_FOUND_HINT : null,
    reasonSource: error['reason'] as StoredReason | undefined,
  };
}

/** The facts a worker sent with a dead-lettered item's outcome. */
export function deadLetterFactsOfOutcome(message: OutcomeMessage): DeadLetterFacts {
  return {
    error: message.error ?? {},
    attempts: message.attempts,
    firstFailureAt: message.firstFailureAt ?? null,
    lastFailureAt: message.lastFailureAt ?? message.at,
    jobId: message.jobId,
    deliveryId: message.deliveryId,
  };
}
