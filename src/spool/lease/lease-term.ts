/**
 * One holding of the spool lease (a term): from taking the lease to losing or giving it up. Each
 * term has a fence of its own, dead the moment the term ends or its validity runs out, so the work
 * started in one term never moves a file after it, whatever that work is still doing.
 */
import type { Logger } from '../../log.js';
import { withDeadline } from '../deadline.js';
import type { Fence, HeldSession } from './spool-lease.js';

export interface Term<S> {
  /** performance.now() until which the lease counts as held (3/4·L after the last confirmed renewal was sent). */
  validUntil: number;
  since: string;
  fence: Fence;
  session: S | null;
  starting: Promise<void>;
  startError?: unknown;
  isEnded: boolean;
  /** Taken on the process's first attempt: a failure to start its work is the start's own failure. */
  isFirst: boolean;
}

export interface TermOpening {
  validUntil: number;
  since: string;
  isFirst: boolean;
  leaseKey: string;
  now: () => number;
}

/** A term whose fence holds until `validUntil` (renewals move it) or its end. */
export function openTerm<S>(opening: TermOpening): Term<S> {
  const fence: Fence = {
    isHeld: () => !term.isEnded && opening.now() < term.validUntil,
    assertHeld() {
      if (!fence.isHeld()) throw new Error(`this process no longer holds the spool lease ${opening.leaseKey}`);
    },
  };
  const term: Term<S> = {
    validUntil: opening.validUntil,
    since: opening.since,
    fence,
    session: null,
    starting: Promise.resolve(),
    isEnded: false,
    isFirst: opening.isFirst,
  };
  return term;
}

/**
 * Starts the term's work with its fence. A session that starts after the term ended is stopped at
 * once; a failure to start is kept on the term (the holder's loop gives the lease up for it).
 */
export function startWork<S extends HeldSession>(term: Term<S>, start: (fence: Fence) => Promise<S>): void {
  term.starting = start(term.fence).then(
    (session) => {
      term.session = session;
      if (term.isEnded) void session.stop({ isShutdown: false }).catch(() => undefined);
    },
    (error: unknown) => {
      term.startError = error;
    },
  );
}

/** Ends a term: the fence closes at once, then the work is stopped (bounded: the fence already stops every move). */
export async function endTerm<S extends HeldSession>(term: Term<S>, reason: string, deps: { leaseMs: number; logger: Logger; about: Record<string, unknown> }): Promise<void> {
  const { leaseMs, logger, about } = deps;
  term.isEnded = true;
  logger.warn({ ...about, reason }, 'lost the spool lease: stopped moving files; standing by');
  await withDeadline(term.starting, leaseMs, 'start').catch(() => undefined);
  await withDeadline(term.session?.stop({ isShutdown: false }) ?? Promise.resolve(), leaseMs, `stopping took over ${leaseMs} ms`).catch((error: unknown) =>
    logger.warn({ ...about, err: error }, 'stopping the spool work after losing the lease did not finish; its files no longer move'),
  );
}
