/**
 * What crosses between the event loop and a check thread: the task (the file's bytes and limits)
 * and its outcome, as plain data (structured clone keeps no classes). A refusal travels as its
 * code, English message, params and reason, and becomes a SyncError again on the event loop.
 */
import { SyncError, type ErrorCode } from '../../errors.js';
import type { Reason } from '../../i18n/reason.js';
import type { EventsFileResult, EventsFormat } from '../events-file.js';

export type CheckTask =
  | { kind: 'label'; bytes: Uint8Array; maxBytes: number }
  | { kind: 'cte'; bytes: Uint8Array; maxBytes: number }
  | { kind: 'events'; bytes: Uint8Array; format: EventsFormat; maxLineBytes: number; timeZone: string | null };

export type CheckKind = CheckTask['kind'];

/** A label as checked: what is sent (base64, made on the thread) and what `validate` prints. */
export interface CheckedLabel {
  pdfBase64: string;
  /** Bytes sent: the PDF cut after %%EOF's line end. */
  byteLength: number;
  paddingBytes: number;
  pdfVersion: string;
  pageCount: number;
}

export interface CheckedCte {
  xml: string;
  declaredEncoding: string | null;
}

export interface WireError {
  code: ErrorCode;
  message: string;
  params?: Record<string, unknown>;
  reason?: Reason;
}

export type CheckOutcome =
  | { ok: true; kind: 'label'; value: CheckedLabel; warnings: Reason[]; threadId: number }
  | { ok: true; kind: 'cte'; value: CheckedCte; warnings: Reason[]; threadId: number }
  | { ok: true; kind: 'events'; value: EventsFileResult; warnings: Reason[]; threadId: number }
  | { ok: false; error: WireError; threadId: number };

export function toWire(error: SyncError): WireError {
  return {
    code: error.code,
    message: error.message,
    ...(error.params === undefined ? {} : { params: error.params }),
    ...(error.reason === undefined ? {} : { reason: error.reason as Reason }),
  };
}

export function fromWire(wire: WireError): SyncError {
  return new SyncError(wire.code, wire.message, {
    ...(wire.params === undefined ? {} : { params: wire.params }),
    ...(wire.reason === undefined ? {} : { reason: wire.reason }),
  });
}
