/**
 * One error type for the whole daemon. Callers branch on `code`, never on message text.
 * `disposition` says what the pipeline does with an item that hit this error; it comes from
 * DISPOSITIONS below unless the thrower knows better (e.g. an unknown delivery on its last retry).
 */

export const ERROR_CODES = [
  // Local refusals: the file or record is wrong and is never sent.
  'LABEL_NOT_PDF',
  'LABEL_TRUNCATED',
  'LABEL_UNREADABLE',
  'LABEL_ENCRYPTED',
  'LABEL_TOO_LARGE',
  'LABEL_EMPTY',
  'LABEL_TRAILING_DATA',
  'LABEL_TOO_COMPLEX',
  'CTE_NOT_XML',
  'CTE_DOCTYPE',
  'CTE_NOT_CTE',
  'CTE_FIELD_MISSING',
  'CTE_FIELD_INVALID',
  'CTE_TOO_LARGE',
  'CTE_CANCELLED',
  'CTE_TOO_COMPLEX',
  'EVENT_BAD_RECORD',
  'EVENT_BAD_DELIVERY_ID',
  'EVENT_BAD_TIME',
  'EVENT_LINE_TOO_LONG',
  'EVENT_FILE_TOO_LARGE',
  'EVENT_FILE_TOO_COMPLEX',
  'EVENT_FILE_CHANGED',
  'SPOOL_BAD_NAME',
  'SPOOL_NOT_REGULAR_FILE',
  'SPOOL_UNREADABLE',
  // What the API (or the way to it) did to us.
  'API_REJECTED',
  'API_NOT_FOUND',
  'API_UNAUTHORIZED',
  'API_RATE_LIMITED',
  'API_UNAVAILABLE',
  'NETWORK',
  'TIMEOUT',
  // Our own configuration.
  'CONFIG_INVALID',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export type Disposition = 'retry' | 'rate-limited' | 'pause' | 'dead-letter' | 'reject-local';

export const DISPOSITIONS: Readonly<Record<ErrorCode, Disposition>> = Object.freeze({
  LABEL_NOT_PDF: 'reject-local',
  LABEL_TRUNCATED: 'reject-local',
  LABEL_UNREADABLE: 'reject-local',
  LABEL_ENCRYPTED: 'reject-local',
  LABEL_TOO_LARGE: 'reject-local',
  LABEL_EMPTY: 'reject-local',
  LABEL_TRAILING_DATA: 'reject-local',
  LABEL_TOO_COMPLEX: 'reject-local',
  CTE_NOT_XML: 'reject-local',
  CTE_DOCTYPE: 'reject-local',
  CTE_NOT_CTE: 'reject-local',
  CTE_FIELD_MISSING: 'reject-local',
  CTE_FIELD_INVALID: 'reject-local',
  CTE_TOO_LARGE: 'reject-local',
  CTE_CANCELLED: 'reject-local',
  CTE_TOO_COMPLEX: 'reject-local',
  EVENT_BAD_RECORD: 'reject-local',
  EVENT_BAD_DELIVERY_ID: 'reject-local',
  EVENT_BAD_TIME: 'reject-local',
  EVENT_LINE_TOO_LONG: 'reject-local',
  EVENT_FILE_TOO_LARGE: 'reject-local',
  EVENT_FILE_TOO_COMPLEX: 'reject-local',
  EVENT_FILE_CHANGED: 'reject-local',
  SPOOL_BAD_NAME: 'reject-local',
  SPOOL_NOT_REGULAR_FILE: 'reject-local',
  SPOOL_UNREADABLE: 'reject-local',
  API_REJECTED: 'dead-letter',
  // An unknown delivery may reach the API after its file: retried a few times, then dead-lettered.
  API_NOT_FOUND: 'retry',
  API_UNAUTHORIZED: 'pause',
  API_RATE_LIMITED: 'rate-limited',
  API_UNAVAILABLE: 'retry',
  NETWORK: 'retry',
  TIMEOUT: 'retry',
  CONFIG_INVALID: 'reject-local',
});

/**
 * Local refusals of a file some of whose records were sent first: an events file written to after
 * it was read (its records as read went out; what was written later did not). Every other local
 * refusal was never sent. What a person reads about refusals ("never sent") must not say otherwise
 * of these.
 */
const REFUSED_AFTER_SENDING: ReadonlySet<string> = new Set<ErrorCode>(['EVENT_FILE_CHANGED']);

export function isRefusedAfterSending(code: string): boolean {
  return REFUSED_AFTER_SENDING.has(code);
}

export interface SyncErrorOptions {
  disposition?: Disposition;
  status?: number;
  apiCode?: string;
  apiMessage?: string;
  apiLevel?: string;
  params?: Record<string, unknown>;
  retryAfterMs?: number;
  /** Raw response body (truncated) when the API answered something we could not read. */
  body?: string;
  /** The reason as a message key and its values (i18n/reason.ts), so a reader can show it in its own language. */
  reason?: StoredReason;
  cause?: unknown;
}

/** A reason's message key and values, kept beside the English message. */
export interface StoredReason {
  readonly key: string;
  readonly values: Readonly<Record<string, unknown>>;
}

export class SyncError extends Error {
  readonly code: ErrorCode;
  readonly disposition: Disposition;
  readonly status?: number;
  readonly apiCode?: string;
  readonly apiMessage?: string;
  readonly apiLevel?: string;
  readonly params?: Record<string, unknown>;
  readonly retryAfterMs?: number;
  readonly body?: string;
  readonly reason?: StoredReason;

  constructor(code: ErrorCode, message: string, options: SyncErrorOptions = {}) {
    // No stack frames: a SyncError is an outcome (a refused file, an API's answer), told by its
    // code and message wherever it goes, and thousands are made on a large drop. Capturing and
    // formatting their frames (BullMQ keeps `err.stack` of every failed attempt) was ~1.5 % of
    // the daemon's CPU there (BENCHMARKS.md, issue 29). An error it wraps keeps its own stack.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'SyncError';
    this.code = code;
    this.disposition = options.disposition ?? DISPOSITIONS[code];
    if (options.status !== undefined) this.status = options.status;
    if (options.apiCode !== undefined) this.apiCode = options.apiCode;
    if (options.apiMessage !== undefined) this.apiMessage = options.apiMessage;
    if (options.apiLevel !== undefined) this.apiLevel = options.apiLevel;
    if (options.params !== undefined) this.params = options.params;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    if (options.body !== undefined) this.body = options.body;
    if (options.reason !== undefined) this.reason = options.reason;
  }

  /** A plain object for logs, `.error.json` files and DLQ entries. Never holds request headers. */
  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.message,
      disposition: this.disposition,
      status: this.status,
      apiCode: this.apiCode,
      apiMessage: this.apiMessage,
      apiLevel: this.apiLevel,
      params: this.params,
      retryAfterMs: this.retryAfterMs,
      body: this.body,
      reason: this.reason,
    };
  }
}

export function isSyncError(value: unknown): value is SyncError {
  return value instanceof SyncError;
}
