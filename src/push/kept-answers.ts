/**
 * An answer the API gave is never bought again (issue 28). A request's answer is recorded by one
 * write (the gate's `leave`, with the outcome message of a file's item in the same script). When
 * Redis cannot take that write — gone (an outage, a failover under way) or refusing writes (OOM
 * under noeviction, NOREPLICAS, READONLY from a demoted primary) — the answer is kept here, in the
 * process that holds it, and written again until Redis takes it. Nothing is dropped, and the job is
 * not let run again meanwhile:
 *  - the run that holds the answer waits for the write (its worker slot stays taken);
 *  - a run of the same job in this process (BullMQ handed it back after its lock lapsed) waits for
 *    `settled(jobId)` before it asks the gate;
 *  - a run in another process finds the job's attempt record naming this process as its owner, and
 *    this process alive (gate/attempt-owner.ts): it waits too.
 * The attempt record itself outlives a failover: with replicas it is on one before the request
 * leaves (gate/replica-wait.ts); the owner's liveness key is written again at once after each
 * reconnect (gate/attempt-owner.ts), so a successor never takes a live owner for a dead one.
 *
 * Retrying is cheap and quiet: one write attempt per kept answer at most every RETRY_MAX_MS, at
 * once when the process sees Redis take writes again (`wake`); the outage or refusal itself is
 * logged once by redis-health.ts, not here. Errors that are not about Redis' availability (a
 * script's bug, a reply we cannot read) are not retried: they reach the caller.
 */
import type { Logger } from '../log.js';

/** First wait before writing a kept answer again; it doubles up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 1000;

export interface KeptAnswer {
  jobId: string;
  /** The attempt's slot member: the attempt record names it (gate/attempt-owner.ts). */
  member: string;
}

export interface KeptAnswers {
  /**
   * Runs `write` (an answer's write) until Redis takes it. Resolves once it did; rejects only with
   * an error that is not about Redis' availability, or when the process closes with it unwritten.
   */
  write(answer: KeptAnswer, write: () => Promise<void>): Promise<void>;
  /** Resolves once no answer of `jobId` is kept (at once when none is). */
  settled(jobId: string): Promise<void>;
  /** The answers being written or kept now. */
  held(): KeptAnswer[];
  /** Redis takes writes again: try every kept answer now. */
  wake(): void;
  /** Answers that were kept and written later, since the process started. */
  recordedLate(): number;
  /** Stops retrying; kept answers are given up (logged: their jobs are taken up again, and re-sent). */
  close(): void;
}

interface Held {
  answer: KeptAnswer;
  done: Promise<void>;
  wake: () => void;
}

/** Every KeptAnswers of this thread, for `isAnswerBeingWritten`. */
const everyHeld = new Set<ReadonlyMap<string, Held>>();

/** Whether an answer of `jobId` is being written or kept in this thread (its run waits on Redis, not on nothing). */
export function isAnswerBeingWritten(jobId: string): boolean {
  for (const held of everyHeld) if (held.has(jobId)) return true;
  return false;
}

/** `onLate`: an answer was written after being kept (the deployment's counter for the failover message). */
export function createKeptAnswers(isUnavailable: (error: unknown) => boolean, logger: Logger, onLate: () => void = () => {}): KeptAnswers {
  const held = new Map<string, Held>();
  everyHeld.add(held);
  let late = 0;
  let isClosed = false;

  const keep = async (answer: KeptAnswer, write: () => Promise<void>, firstError: unknown, entry: { wake: () => void }): Promise<void> => {
    logger.debug({ jobId: answer.jobId, err: firstError }, 'answer kept: Redis cannot take it now; writing it when it can');
    let waitMs = RETRY_FIRST_MS;
    for (;;) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        entry.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (isClosed) throw new Error(`answer of job ${answer.jobId} not written: the process is closing`);
      try {
        await write();
        late += 1;
        onLate();
        logger.debug({ jobId: answer.jobId }, 'kept answer written');
        return;
      } catch (error) {
        if (!isUnavailable(error)) throw error;
        waitMs = Math.min(waitMs * 2, RETRY_MAX_MS);
      }
    }
  };

  return {
    async write(answer, write) {
      // Held from the first try: a run of the same job in this process waits for it (settled).
      const entry: Held = { answer, done: Promise.resolve(), wake: () => {} };
      entry.done = (async () => {
        try {
          await write();
        } catch (error) {
          if (!isUnavailable(error)) throw error;
          await keep(answer, write, error, entry);
        }
      })().finally(() => {
        if (held.get(answer.jobId) === entry) held.delete(answer.jobId);
      });
      held.set(answer.jobId, entry);
      await entry.done;
    },
    async settled(jobId) {
      await held.get(jobId)?.done.catch(() => undefined);
    },
    held: () => [...held.values()].map((entry) => entry.answer),
    wake() {
      for (const entry of held.values()) entry.wake();
    },
    recordedLate: () => late,
    close() {
      isClosed = true;
      everyHeld.delete(held);
      if (held.size > 0) {
        logger.warn(
          { answers: held.size, jobIds: [...held.keys()].slice(0, 20) },
          'closing with answers Redis has not taken: their jobs will be sent again by another process',
        );
      }
      for (const entry of held.values()) entry.wake();
    },
  };
}
