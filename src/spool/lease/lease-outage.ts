/**
 * Redis not answering the spool lease's calls: one warning when a failing stretch has lasted
 * QUIET_MS, one line with its length when Redis answers again, nothing in between (the loop
 * retries every turn).
 *
 * A Redis that is unreachable, full or failing over is said once for the whole process by
 * redis-health.ts; the lease then says nothing of its own (issue 28: one warn line per process).
 * The lease's calls are bounded by a deadline, so they often fail before the health has seen the
 * connection go: the warning waits QUIET_MS for the health to take the stretch over. What the health
 * never tells (a Redis that hangs without dropping the connection) is still warned about, late by
 * QUIET_MS.
 */
import { isFailoverError, isWritesRefusedError } from '../../store/redis-health.js';
import type { Logger } from '../../log.js';

const QUIET_MS = 3000;

export interface LeaseOutage {
  /** A call to Redis failed or timed out (`what`: the step, as in "taking the spool lease"). */
  failed(what: string, error: unknown): void;
  /** A call to Redis answered. */
  answered(): void;
}

export function trackLeaseOutage(logger: Logger, about: Record<string, unknown>, now: () => number, isRedisTold: () => boolean = () => false): LeaseOutage {
  let failingSince: number | null = null;
  let isWarned = false;
  let isToldElsewhere = false;
  return {
    failed(what, error) {
      failingSince ??= now();
      isToldElsewhere ||= isRedisTold() || isWritesRefusedError(error) || isFailoverError(error);
      if (isWarned || isToldElsewhere || now() - failingSince < QUIET_MS) {
        logger.debug({ ...about, err: error }, `${what} failed; retrying`);
        return;
      }
      isWarned = true;
      logger.warn({ ...about, err: error }, `${what} failed (Redis unreachable?); retrying`);
    },
    answered() {
      if (failingSince !== null && isWarned) logger.info({ ...about, failedForMs: Math.round(now() - failingSince) }, 'the spool lease answers again');
      failingSince = null;
      isWarned = false;
      isToldElsewhere = false;
    },
  };
}
