/**
 * API response or transport failure → SyncError. Nothing here throws.
 *
 * Classification uses the HTTP status and the API's code together (api-contract.md §7): the API
 * answers a bad label PDF with 400 and code UNAUTHORIZED, so only HTTP 401 means a bad key.
 *   401 → API_UNAUTHORIZED         429 → API_RATE_LIMITED (+ Retry-After)
 *   5xx → API_UNAVAILABLE          408 → TIMEOUT (the server gave up waiting; safe to resend)
 *   404, or 400 + DELIVERY_NOT_FOUND → API_NOT_FOUND
 *   other 4xx → API_REJECTED       anything else non-2xx (3xx, 1xx) → API_UNAVAILABLE
 */
import { SyncError, type ErrorCode } from '../errors.js';
import type { EndpointName } from './types.js';

/** Longest raw body kept on an error, in UTF-8 bytes. */
export const MAX_KEPT_BODY_BYTES = 2048;

/** What the five error shapes of §7 have in common, after reading. */
export interface ApiErrorBody {
  shape: 'A' | 'B' | 'C' | 'D' | 'E';
  code?: string;
  message?: string;
  level?: string;
  params?: Record<string, unknown>;
  errorId?: string;
}

export interface ErrorResponse {
  endpoint: EndpointName;
  status: number;
  body: string;
  /** The Retry-After header, as received. */
  retryAfter?: string | string[] | undefined;
  /** Wall-clock now, for Retry-After HTTP-dates. */
  nowMs: number;
}

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Reads shapes A–E; null when the body is not JSON or has neither a string code nor message. */
export function readErrorBody(text: string): ApiErrorBody | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(parsed)) return null;
  const code = str(parsed['code']);
  const message = str(parsed['message']);
  if (code === undefined && message === undefined) return null;
  const shape =
    typeof parsed['status_code'] === 'number'
      ? 'D'
      : typeof parsed['status'] === 'string'
        ? 'C'
        : code === undefined
          ? 'E'
          : typeof parsed['level'] === 'string' || 'params' in parsed
            ? 'A'
            : 'B';
  const result: ApiErrorBody = { shape };
  if (code !== undefined) result.code = code;
  if (message !== undefined) result.message = message;
  const level = str(parsed['level']);
  if (level !== undefined) result.level = level;
  if (isRecord(parsed['params'])) result.params = parsed['params'];
  const errorId = str(parsed['error_id']);
  if (errorId !== undefined) result.errorId = errorId;
  return result;
}

/** Retry-After as delta-seconds or an HTTP-date → milliseconds from now (≥ 0); undefined if absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1000);
  if (!/[a-z]/i.test(raw)) return undefined; // "-5", "1e3": not a date either
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** Cuts `text` to at most MAX_KEPT_BODY_BYTES UTF-8 bytes, never inside a character. */
export function truncateBody(text: string): string {
  if (Buffer.byteLength(text) <= MAX_KEPT_BODY_BYTES) return text;
  const marker = '…[truncated]';
  let budget = MAX_KEPT_BODY_BYTES - Buffer.byteLength(marker);
  let end = 0;
  for (const char of text) {
    budget -= Buffer.byteLength(char);
    if (budget < 0) break;
    end += char.length;
  }
  return text.slice(0, end) + marker;
}

function classify(status: number, apiCode: string | undefined): ErrorCode {
  if (status === 401) return 'API_UNAUTHORIZED';
  if (status === 429) return 'API_RATE_LIMITED';
  if (status >= 500 && status <= 599) return 'API_UNAVAILABLE';
  if (status === 408) return 'TIMEOUT';
  if (status === 404 || (status === 400 && apiCode === 'DELIVERY_NOT_FOUND')) return 'API_NOT_FOUND';
  if (status >= 400 && status <= 499) return 'API_REJECTED';
  return 'API_UNAVAILABLE';
}

const WHAT: Partial<Record<ErrorCode, string>> = {
  API_UNAUTHORIZED: 'the API refused the key',
  API_RATE_LIMITED: 'the API rate limit was hit',
  API_UNAVAILABLE: 'the API is unavailable',
  TIMEOUT: 'the API timed out the request',
  API_NOT_FOUND: 'the API does not know the resource',
  API_REJECTED: 'the API rejected the request',
};

/** A non-2xx response → SyncError, keeping everything the API said. */
export function toSyncError(response: ErrorResponse): SyncError {
  const { endpoint, status } = response;
  const read = readErrorBody(response.body);
  const code = classify(status, read?.code);
  const retryAfterMs = parseRetryAfter(response.retryAfter, response.nowMs);
  const detail = [read?.code, read?.message].filter((part) => part !== undefined && part !== '').join(': ');
  const errorId = read?.errorId === undefined ? '' : ` (error_id ${read.errorId})`;
  const message = `${endpoint}: ${WHAT[code] ?? 'unexpected response'} (HTTP ${status})${detail === '' ? '' : ` ${detail}`}${errorId}`;
  return new SyncError(code, message, {
    status,
    ...(read?.code !== undefined && { apiCode: read.code }),
    ...(read?.message !== undefined && { apiMessage: read.message }),
    ...(read?.level !== undefined && { apiLevel: read.level }),
    ...(read?.params !== undefined && { params: read.params }),
    ...(retryAfterMs !== undefined && { retryAfterMs }),
    ...(read === null && response.body !== '' && { body: truncateBody(response.body) }),
  });
}

/** A 2xx whose body we needed but could not read: the API misbehaved, so try again later. */
export function unreadableSuccess(endpoint: EndpointName, status: number, body: string): SyncError {
  return new SyncError('API_UNAVAILABLE', `${endpoint}: unreadable ${status} response body`, {
    status,
    body: truncateBody(body),
  });
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
/** The server sent something that is not HTTP, or too much of it: its fault, retry later. */
const BAD_RESPONSE_CODES = new Set(['UND_ERR_RES_EXCEEDED_MAX_SIZE', 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'UND_ERR_INFO']);

function errorCodeOf(error: unknown): string | undefined {
  if (!isRecord(error) && !(error instanceof Error)) return undefined;
  const own = (error as { code?: unknown }).code;
  if (typeof own === 'string') return own;
  const cause = (error as { cause?: unknown }).cause;
  if (cause !== undefined && cause !== error) return errorCodeOf(cause);
  const inner = (error as { errors?: unknown }).errors; // AggregateError from happy-eyeballs connect
  return Array.isArray(inner) ? errorCodeOf(inner[0]) : undefined;
}

/**
 * A request that got no HTTP response → TIMEOUT or NETWORK (both retried). The message names
 * only the endpoint and the error code: never the request, whose headers hold the keys.
 */
export function fromTransportError(endpoint: EndpointName, error: unknown): SyncError {
  if (error instanceof SyncError) return error;
  const errno = errorCodeOf(error);
  if (errno !== undefined && errno.startsWith('HPE_')) {
    return new SyncError('API_UNAVAILABLE', `${endpoint}: malformed HTTP response (${errno})`, { cause: error });
  }
  if (errno !== undefined && BAD_RESPONSE_CODES.has(errno)) {
    return new SyncError('API_UNAVAILABLE', `${endpoint}: unusable response (${errno})`, { cause: error });
  }
  if (errno !== undefined && TIMEOUT_CODES.has(errno)) {
    return new SyncError('TIMEOUT', `${endpoint}: request timed out (${errno})`, { cause: error });
  }
  return new SyncError('NETWORK', `${endpoint}: network error (${errno ?? 'unknown'})`, { cause: error });
}
