/**
 * What crosses between the main thread and the delivery thread (runtime/delivery-thread/delivery-thread.ts): the
 * thread's start data and the messages each way, all structured-clonable plain data.
 */
import type { Config } from '../../config/schema.js';
import type { RequestSample } from '../../ops/metrics.js';
import type { ApiTarget } from '../api-target.js';
import type { SpansDropped } from '../tracing.js';
import type { RedisEpisode } from '../../store/redis-health.js';

/** The thread's workerData. */
export interface DeliveryThreadData {
  /** The process's config, with `redis.url` set to the URL the main thread connected with (a managed redis-server's too). */
  config: Config;
  /** Where requests go: the real API, or the main thread's embedded sandbox (its URL and keys). */
  target: ApiTarget;
  /** Whether the main thread keeps request metrics (http role): else the thread sends no samples. */
  wantsSamples: boolean;
  /** The process's Redis-outage board (store/redis-health.ts), shared memory: one warn line per outage per process. */
  toldBoard: Int32Array;
}

/** An error as plain data: its message, its SyncError code when it has one, its stack. */
export interface WireError {
  message: string;
  code: string | null;
  stack: string | null;
}

export type FromThread =
  /** Log lines, JSON and newline-ended, in the order the thread logged them. */
  | { type: 'log'; text: string }
  /** The workers run. */
  | { type: 'ready' }
  /** The start failed (the thread then ends). */
  | { type: 'failed'; error: WireError }
  /** The API client's timing samples since the last batch. */
  | { type: 'samples'; samples: RequestSample[] }
  /** The thread's tracing dropped-span counters (totals so far). */
  | { type: 'spans'; dropped: SpansDropped }
  /** A Redis episode the thread's health tracker began (the main thread's adopts it: readiness, metrics). */
  | { type: 'redis'; episode: Pick<RedisEpisode, 'kind' | 'code' | 'message'> }
  /** The thread's heartbeat (every second): it answers; the Redis connections it needs that ended without being closed. */
  | { type: 'beat'; endedConnections: string[]; oldestRun: { jobId: string; since: number } | null }
  /** Everything the thread opened is closed: it ends now. */
  | { type: 'stopped' };

export type ToThread = { type: 'stop' };

export function toWireError(error: unknown): WireError {
  if (!(error instanceof Error)) return { message: String(error), code: null, stack: null };
  const code = (error as { code?: unknown }).code;
  return { message: error.message, code: typeof code === 'string' ? code : null, stack: error.stack ?? null };
}
