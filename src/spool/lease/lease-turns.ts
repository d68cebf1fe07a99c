/**
 * The turns of the spool lease's loop (lease-holder.ts runs them): a standby's attempt to take the
 * lease, and the holder's renewal. Each works on the small state below; a term begins when an
 * attempt takes the lease and the spool's record names this process, and ends (lose) when a
 * renewal says the lease is gone, when none came through for 3/4·L, or when another deployment
 * names itself in the spool. Every call to Redis or the spool has a deadline, so no turn outlasts
 * the lease's timing.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { AcquireResult, LeaseHolder } from '../../store/lease.js';
import { withDeadline } from '../deadline.js';
import { guardHolderFile, type HolderFileGuard } from './holder-file-guard.js';
import { trackLeaseOutage, type LeaseOutage } from './lease-outage.js';
import { endTerm, openTerm, startWork, type Term } from './lease-term.js';
import { STANDING_BY, type HeldSession, type SpoolLeaseDeps } from './spool-lease.js';

export const now = (): number => performance.now();

export interface TurnState<S extends HeldSession> {
  readonly deps: SpoolLeaseDeps<S>;
  /** Every L/3 (at least 50 ms), the holder renews; a standby tries every min(1 s, L/3). */
  readonly renewEveryMs: number;
  readonly retryEveryMs: number;
  /** 3/4·L: how long after sending a confirmed renewal the holder counts its lease valid. */
  readonly validForMs: number;
  readonly self: { id: string; host: string; pid: number };
  /** Fields every line carries. */
  readonly about: { spoolLease: string };
  readonly spoolFile: HolderFileGuard;
  readonly redis: LeaseOutage;
  /** This process's current term; null while standing by. */
  term: Term<S> | null;
  /** The holder last reported while standing by (one log line per holder). */
  standbyHolderId: string | null | undefined;
}

export function createTurnState<S extends HeldSession>(deps: SpoolLeaseDeps<S>): TurnState<S> {
  const renewEveryMs = Math.max(50, Math.floor(deps.leaseMs / 3));
  const about = { spoolLease: deps.lease.key };
  return {
    deps,
    renewEveryMs,
    retryEveryMs: Math.min(1000, renewEveryMs),
    validForMs: Math.floor((deps.leaseMs * 3) / 4),
    self: { id: randomBytes(8).toString('hex'), host: hostname(), pid: process.pid },
    about,
    spoolFile: guardHolderFile({ spoolFile: deps.spoolFile, callMs: renewEveryMs, logger: deps.logger, about }),
    redis: trackLeaseOutage(deps.logger, about, now),
    term: null,
    standbyHolderId: undefined,
  };
}

/** A standby's turn: takes the lease when the spool and Redis allow, and starts a term. */
export async function tryAcquire<S extends HeldSession>(state: TurnState<S>, isFirst: boolean): Promise<void> {
  if (!(await state.spoolFile.allowsTaking())) return;
  const sentAt = now();
  const since = new Date().toISOString();
  const result = await acquire(state, since);
  if (result === null) return;
  if (!result.isAcquired) {
    standBy(state, result.holder);
    return;
  }
  state.standbyHolderId = undefined;
  // Other deployments learn from the spool that it is held before this process moves anything.
  if ((await state.spoolFile.mark()) !== 'written') {
    await giveBack(state);
    return;
  }
  takeTerm(state, sentAt, result.holder?.since ?? since, isFirst);
}

/** Asks Redis for the lease; null when it did not answer in time. */
async function acquire<S extends HeldSession>(state: TurnState<S>, since: string): Promise<AcquireResult | null> {
  const { lease, leaseMs } = state.deps;
  try {
    const result = await withDeadline(lease.acquire({ ...state.self, since }, leaseMs), state.retryEveryMs, `no reply within ${state.retryEveryMs} ms`);
    state.redis.answered();
    return result;
  } catch (error) {
    state.redis.failed('taking the spool lease', error);
    return null;
  }
}

/** Says who holds the lease: once per holder. */
function standBy<S extends HeldSession>(state: TurnState<S>, holder: LeaseHolder | null): void {
  const holderId = holder?.id ?? null;
  if (holderId === state.standbyHolderId) return;
  const shown = holder === null ? null : { host: holder.host, pid: holder.pid, since: holder.since };
  state.deps.logger.info({ ...state.about, holder: shown }, STANDING_BY);
  state.standbyHolderId = holderId;
}

/** Starts a term, valid from when the request that took the lease was sent. */
function takeTerm<S extends HeldSession>(state: TurnState<S>, sentAt: number, since: string, isFirst: boolean): void {
  const { lease, leaseMs, logger } = state.deps;
  const held = openTerm<S>({ validUntil: sentAt + state.validForMs, since, isFirst, leaseKey: lease.key, now });
  state.term = held;
  logger.info({ ...state.about, since: held.since, leaseMs, host: state.self.host }, 'holding the spool lease: this process watches the spool and moves its files');
  startWork(held, (fence) => state.deps.start(fence));
}

/** The holder's turn: renews the lease in Redis and the spool's record, or ends the term. */
export async function renew<S extends HeldSession>(state: TurnState<S>, held: Term<S>): Promise<void> {
  const { lease, leaseMs } = state.deps;
  // A spool that cannot be read keeps its holder: the Redis lease still orders this deployment.
  if ((await state.spoolFile.foreignHolder().catch(() => null)) !== null) {
    await yieldToForeign(state, held);
    return;
  }
  const sentAt = now();
  try {
    const isStillHeld = await withDeadline(lease.renew(state.self.id, leaseMs), state.renewEveryMs, `no reply within ${state.renewEveryMs} ms`);
    state.redis.answered();
    if (!isStillHeld) {
      await lose(state, held, 'the lease expired or another process took it');
      return;
    }
    if (!held.isEnded && now() < held.validUntil) held.validUntil = Math.max(held.validUntil, sentAt + state.validForMs);
    if (!held.isEnded && (await state.spoolFile.mark()) === 'foreign') {
      await yieldToForeign(state, held);
      return;
    }
  } catch (error) {
    state.redis.failed('renewing the spool lease', error);
  }
  if (!held.isEnded && now() >= held.validUntil) await lose(state, held, `not renewed for ${state.validForMs} ms (Redis unreachable?)`);
}

async function yieldToForeign<S extends HeldSession>(state: TurnState<S>, held: Term<S>): Promise<void> {
  await lose(state, held, 'another deployment holds the spool');
  await giveBack(state);
}

/** Ends the term (once): this process stands by from now on. */
export async function lose<S extends HeldSession>(state: TurnState<S>, held: Term<S>, reason: string): Promise<void> {
  if (held.isEnded) return;
  if (state.term === held) state.term = null;
  await endTerm(held, reason, { leaseMs: state.deps.leaseMs, logger: state.deps.logger, about: state.about });
}

/** Gives the lease back in Redis, bounded: with Redis away it simply expires. */
export async function giveBack<S extends HeldSession>(state: TurnState<S>): Promise<void> {
  await withDeadline(state.deps.lease.release(state.self.id), state.deps.leaseMs, 'no reply').catch(() => undefined);
}
