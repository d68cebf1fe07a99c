/**
 * A journey step in its public form (INTERFACE.md, "History"), as journey-read.ts gives it and
 * journey-compact-record.ts folds it: a file of its own so that the two do not import each other.
 */
import type { StoredReason } from '../errors.js';
import type { JourneyKind } from './journey.js';

export interface JourneyStep {
  at: string;
  delivery_id: string;
  kind: JourneyKind;
  step: string;
  file?: string;
  sha256?: string;
  size?: number;
  mtime?: string;
  host?: string;
  pid?: number;
  generation?: string;
  /** Which request of the item this was (1, 2, …: every request counts, a 401 probe or a 429 included). */
  attempt?: number;
  /** The attempt as BullMQ counts it toward the item's maximum, when it differs (a 401 or 429 spends none). */
  countedAttempt?: number;
  /** HTTP status of the answer; absent when none came. */
  status?: number;
  code?: string;
  apiCode?: string;
  message?: string;
  /** A refusal's reason key and values (i18n/reason.ts): the message in another language. */
  reason?: StoredReason;
  durationMs?: number;
  /** The attempt's trace id (tracing on): where to find its request in the tracing tool. */
  trace_id?: string;
  /** 'none': the attempt started and no answer was recorded (the process died mid-request, or it is still on the wire). */
  answer?: 'none';
  event_at?: string;
  source?: string;
  line?: number;
  duplicateOf?: string;
  /** What `duplicateOf` says, in parts, so a reader can word it in its language: the earlier record's file and line (or source), its event_at, when it came. */
  duplicateOfRef?: { file?: string; line?: number; source?: string; eventAt: string; at: string };
  dueAt?: string;
  path?: string;
  by?: string;
  supersededBy?: string;
  /** A webhook registration: what was sent (header names only). */
  sent?: string;
  /** A label's valid step: padding bytes after %%EOF in the file that were not sent (`message` says so). */
  paddingBytes?: number;
  /**
   * Read from a compact record (journey-compact.ts: the item settled and its day is past the detail
   * window): the step keeps its time and what `folded` says, its other detail is gone.
   */
  compacted?: true;
  /** The `folded` step (one an item of a compact record): the steps whose detail was folded (their names); `attempt` then counts the requests, `status` the last answer's. */
  folded?: string[];
}
