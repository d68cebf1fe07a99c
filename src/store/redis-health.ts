/**
 * One log line per Redis outage, per process, not one per connection and reconnect attempt.
 *
 * Every connection, queue and worker of a process reports its errors here. States:
 *   up ──(a lost-connection error while the main connection is not ready)──▶ down
 *   down ──(the main connection is ready again)──▶ up
 * Entering `down` logs one warn with the first error; leaving it logs one info with `outageMs` and
 * how many connection errors it absorbed. While down (and for the stray errors of a worker's own
 * connection catching up after the main one is back) connection errors go to debug only. Errors
 * that are not about the connection (a script error, a bad reply) are the caller's to log.
 */
import type { Logger } from '../log.js';
import type { RedisConnection } from './redis.js';

export interface RedisHealth {
  /** True when `error` is a lost connection, covered here; false: not about the connection, log it yourself. */
  report(error: unknown, source: string): boolean;
  isDown(): boolean;
  /** Outages this process has seen since it started (the `carrier_sync_redis_outages_total` counter). */
  outages(): number;
}

/** Socket-level codes of a connection that is gone or cannot be made. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);
/**
 * ioredis and BullMQ raise these without a code (plain Errors or their own classes), so the name
 * or the fixed message is all there is to go on.
 */
const CONNECTION_NAMES = new Set(['AbortError', 'MaxRetriesPerRequestError', 'ConnectionClosedError', 'ClusterAllFailedError']);
// LOADING: a Redis just restarted answers this until it has read its AOF back: not there yet.
const CONNECTION_MESSAGES = [
  'Connection is closed',
  "Stream isn't writeable",
  'Command aborted due to connection close',
  'None of startup nodes is available',
  'LOADING',
];

export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  if (CONNECTION_NAMES.has(error.name) || CONNECTION_NAMES.has(error.constructor.name)) return true;
  if (CONNECTION_MESSAGES.some((text) => error.message.startsWith(text))) return true;
  // A connect timeout, or an error a library wrapped: the socket's error is its cause.
  return error.cause !== undefined && error.cause !== error && isConnectionError(error.cause);
}

export function trackRedisHealth(redis: RedisConnection, logger: Logger, now: () => number = () => performance.now()): RedisHealth {
  let downSince: number | null = null;
  let absorbed = 0;
  let outages = 0;
  redis.on('ready', () => {
    if (downSince === null) return;
    logger.info({ outageMs: Math.round(now() - downSince), connectionErrors: absorbed }, 'Redis reachable again');
    downSince = null;
  });
  return {
    report(error, source) {
      if (!isConnectionError(error)) return false;
      if (downSince !== null || redis.status === 'ready') {
        // Within an outage, or a worker's own connection catching up after the main one is back.
        if (downSince !== null) absorbed += 1;
        logger.debug({ source, err: error }, 'Redis connection error');
        return true;
      }
      downSince = now();
      absorbed = 1;
      outages += 1;
      logger.warn({ source, err: error }, 'Redis unreachable: waiting for it to come back (one line when it does)');
      return true;
    },
    isDown: () => downSince !== null,
    outages: () => outages,
  };
}
