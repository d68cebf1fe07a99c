/**
 * Redis not answering the spool lease's calls: one warning when a failing stretch starts, one line
 * with its length when Redis answers again, nothing in between (the loop retries every turn).
 */
import { isFailoverError, isWritesRefusedError } from '../../store/redis-health.js';
import type { Logger } from '../../log.js';

export interface LeaseOutage {
  /** A call to Redis failed or timed out (`what`: the step, as in "taking the spool lease"). */
  failed(what: string, error: unknown): void;
  /** A call to Redis answered. */
  answered(): void;
}

export function trackLeaseOutage(logger: Logger, about: Record<string, unknown>, now: () => number): LeaseOutage {
  let failingSince: number | null = null;
  return {
    failed(what, error) {
      // A full Redis or a failover is said once for the process by redis-health.ts.
      if (failingSince === null && !isWritesRefusedError(error) && !isFailoverError(error)) logger.warn({ ...about, err: error }, `${what} failed (Redis unreachable?); retrying`);
      failingSince ??= now();
    },
    answered() {
      if (failingSince !== null) logger.info({ ...about, failedForMs: Math.round(now() - failingSince) }, 'the spool lease answers again');
      failingSince = null;
    },
  };
}
