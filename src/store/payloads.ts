/**
 * What travels in the queues. A job carries everything its push needs, so workers need no
 * access to the spool; `origin` says where the item came from so the outcome can find its file.
 */
import type { ItemKind } from './keys.js';

export interface FileOrigin {
  /** 'backfill': a file enqueued in place by `carrier-sync backfill`; it is not moved afterwards. */
  source: 'spool' | 'backfill';
  /** Which spool (host + folder) the file sits in: its outcome goes to that spool's owner. */
  spoolId: string;
  /** The file's name as dropped. */
  fileName: string;
  /** Content hash prefix shared by the job id and the in-flight file name. */
  contentId: string;
}

export interface BatchOrigin {
  source: 'spool';
  spoolId: string;
  fileName: string;
  /** The events file this record came from. */
  batchId: string;
  line: number;
}

export interface DirectOrigin {
  source: 'http' | 'cli' | 'pull' | 'backfill';
  /** Array index or line number when the record came in a batch. */
  index?: number;
}

export interface LabelJob {
  kind: 'label';
  deliveryId: string;
  externalId: string | null;
  /** Base64 PDF without a data-URI prefix. */
  pdfBase64: string;
  /** Length of the PDF sent (after a data URI is decoded and padding after %%EOF cut). */
  byteLength: number;
  /** Padding bytes after %%EOF that the file has and the request does not (absent when none). */
  paddingBytes?: number;
  origin: FileOrigin;
  receivedAt: string;
  /** Document order: later mtime, then later claim, is newer (see `documentGeneration`). */
  generation?: string;
  /** W3C traceparent of the span that queued it (tracing on only): each attempt's span joins that trace. */
  trace?: string;
}

export interface CteJob {
  kind: 'cte';
  deliveryId: string;
  xml: string;
  byteLength: number;
  origin: FileOrigin;
  receivedAt: string;
  /** Document order: later mtime, then later claim, is newer (see `documentGeneration`). */
  generation?: string;
  /** W3C traceparent of the span that queued it (tracing on only): each attempt's span joins that trace. */
  trace?: string;
}

export interface CollectingJob {
  kind: 'collecting';
  deliveryId: string;
  /** event_at as received. */
  eventAt: string;
  /** What is sent on the wire (UTC ISO 8601). */
  wire: string;
  /** The dedup key: the normalised instant. */
  instantKey: string;
  epochMs: number;
  /** Who claimed the instant in the dedup memory. */
  sourceId: string;
  origin: BatchOrigin | DirectOrigin;
  receivedAt: string;
  /** W3C traceparent of the span that queued it (tracing on only): each attempt's span joins that trace. */
  trace?: string;
}

export type ItemJob = LabelJob | CteJob | CollectingJob;
export type JobOfKind<K extends ItemKind> = Extract<ItemJob, { kind: K }>;

/** How an item ended. */
export type ItemResult = 'accepted' | 'repeat' | 'superseded' | 'dead-lettered';

/** A final result on its way back to the spool owner (a message of the spool's outcome list). */
export interface OutcomeMessage {
  kind: ItemKind;
  jobId: string;
  deliveryId: string;
  result: ItemResult;
  origin: ItemJob['origin'];
  attempts: number;
  at: string;
  error?: Record<string, unknown>;
  firstFailureAt?: string;
  lastFailureAt?: string;
  /** The item's traceparent (tracing on): the file's move is a span of the item's trace. */
  trace?: string;
  /**
   * An events file's line: the push gate's leave marked it done in its batch in the same script
   * that appended this message ('marked'), and found the batch complete with it ('complete': the
   * file may leave). Absent (messages of earlier versions, and lines marked by no gate): the
   * outcome's consumer marks the line itself.
   */
  batch?: 'marked' | 'complete';
}

/** The fields of a checked collecting event record (validate/ produces them). */
export interface CheckedEvent {
  deliveryId: string;
  eventAt: string;
  instantKey: string;
  epochMs: number;
  wire: string;
}

export function collectingJobOf(event: CheckedEvent, sourceId: string, origin: CollectingJob['origin'], receivedAt: string): CollectingJob {
  return {
    kind: 'collecting',
    deliveryId: event.deliveryId,
    eventAt: event.eventAt,
    wire: event.wire,
    instantKey: event.instantKey,
    epochMs: event.epochMs,
    sourceId,
    origin,
    receivedAt,
  };
}
