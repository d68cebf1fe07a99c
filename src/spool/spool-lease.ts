/**
 * Who owns a spool. Of every process with the watcher role on one spool (on one host or several
 * mounting one share), the one holding the spool's lease in Redis watches the inboxes, claims and
 * moves files and reconciles `.inflight/`; the others stand by and try to take the lease.
 *
 * Timing, for a lease of L ms (`spool.leaseMs`, 5 s by default):
 *  - the holder renews every L/3; a standby tries every min(1 s, L/3). After the holder stops, it
 *    gives the lease up and a standby holds it within about a second; after a `kill -9`, the lease
 *    expires at most L after the last renewal and a standby holds it within about L + 1 s.
 *  - Fencing: the holder counts its lease valid until 3/4·L after it *sent* the last renewal that
 *    Redis confirmed. Redis keeps the key at least L after that send, so the holder has stopped
 *    moving files (every move checks the fence first) at least L/4 before another process can take
 *    the lease, whatever happened to Redis or the network in between. A move already under way at
 *    that instant has those L/4 to finish.
 *
 * Deployments (optional `spoolFile`, see spool/holder-file.ts): the Redis lease only orders the
 * processes of one deployment (one Redis and prefix). The spool itself names the deployment that
 * holds it; before each attempt to take the lease and each renewal, a process reads that: while a
 * live holder of another deployment is named, it neither takes nor keeps the lease (one error line
 * naming both deployments when that holder appears). The holder writes the file after taking the
 * lease (before starting any work: if it cannot, it gives the lease back) and after each renewal.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log.js';
import type { Lease, LeaseHolder } from '../queue/lease.js';
import type { HolderFile, HolderRecord } from './holder-file.js';

/** Whether this process may still move the spool's files: checked before every move. */
export interface Fence {
  isHeld(): boolean;
  /** Throws when the lease is not (or no longer) held. */
  assertHeld(): void;
}

/** The holder's work, started on each acquisition. `stop` may be called more than once. */
export interface HeldSession {
  stop(options: { isShutdown: boolean }): Promise<void>;
}

export interface SpoolLeaseDeps<S extends HeldSession> {
  lease: Lease;
  leaseMs: number;
  logger: Logger;
  /** Starts the holder's work with a fence of its own (dead once this holding ends). */
  start(fence: Fence): Promise<S>;
  /** The spool's own record of its holder, which keeps other deployments off it. */
  spoolFile?: HolderFile;
}

export interface SpoolLeaseState {
  /** This process's part: holder, standby, or stopped (shutting down). */
  role: 'holder' | 'standby' | 'stopped';
  self: { host: string; pid: number };
  /** The holder as Redis has it, null when nobody holds the lease. */
  holder: { host: string; pid: number; since: string; ttlMs: number; isSelf: boolean } | null;
  /** The live holder of another deployment named by the spool, which keeps this process off it; null when none. */
  foreignHolder: HolderRecord | null;
}

export interface SpoolLease<S extends HeldSession> {
  isHolder(): boolean;
  /** The holder's work while this process holds the lease. */
  session(): S | null;
  state(): Promise<SpoolLeaseState>;
  /** No more attempts to take the lease (the first step of a shutdown); a holder keeps it. */
  stopAcquiring(): void;
  /** Stops the holder's work (letting it drain), then gives the lease up. */
  close(): Promise<void>;
}

/** The line a standby logs when it starts standing by, and again when the holder changes. */
export const STANDING_BY = 'standing by: another process holds the spool lease (it watches the spool and moves its files)';

interface Term<S> {
  validUntil: number;
  since: string;
  fence: Fence;
  session: S | null;
  starting: Promise<void>;
  startError?: unknown;
  isEnded: boolean;
  isFirst: boolean;
}

/**
 * Takes the lease if it is free and starts the holder's work, or stands by. Resolves once the first
 * attempt is done (and, if it took the lease, once the work has started); a failure to start the
 * work on that first attempt rejects, after giving the lease up.
 */
export async function holdSpoolLease<S extends HeldSession>(deps: SpoolLeaseDeps<S>): Promise<SpoolLease<S>> {
  const { lease, leaseMs, logger } = deps;
  const renewEveryMs = Math.max(50, Math.floor(leaseMs / 3));
  const retryEveryMs = Math.min(1000, renewEveryMs);
  const validForMs = Math.floor((leaseMs * 3) / 4);
  const self = { id: randomBytes(8).toString('hex'), host: hostname(), pid: process.pid };
  const now = (): number => performance.now();
  const about = { spoolLease: lease.key };

  let term: Term<S> | null = null;
  let isAcquiring = true;
  let isClosed = false;
  let wake: (() => void) | null = null;
  const wakeLoop = (): void => (wake as (() => void) | null)?.();
  /** The holder last reported while standing by (one log line per holder). */
  let standbyHolderId: string | null | undefined;
  let failingSince: number | null = null;
  /** Another deployment's live holder last seen in the spool (one log line per holder). */
  let foreign: HolderRecord | null = null;
  let isSpoolFileFailing = false;
  let isSpoolReadFailing = false;

  const onRedisError = (what: string, error: unknown): void => {
    if (failingSince === null) logger.warn({ ...about, err: error }, `${what} failed (Redis unreachable?); retrying`);
    failingSince ??= now();
  };
  const onRedisOk = (): void => {
    if (failingSince !== null) logger.info({ ...about, failedForMs: Math.round(now() - failingSince) }, 'the spool lease answers again');
    failingSince = null;
  };

  // The spool's file calls get leaseMs/3 at most: a share slower than that only keeps things as they
  // are (a holder keeps holding, a standby does not take the lease) and delays a renewal by as much.

  /** The live holder of another deployment, or null; throws when the spool cannot be read. */
  async function checkSpoolFile(): Promise<HolderRecord | null> {
    const spoolFile = deps.spoolFile;
    if (spoolFile === undefined) return null;
    const other = await withDeadline(spoolFile.foreignHolder(), renewEveryMs, `no answer from the spool within ${renewEveryMs} ms`);
    noteForeign(spoolFile, other);
    return other;
  }

  /** Remembers another deployment's live holder (or none): one line each time that changes. */
  function noteForeign(spoolFile: HolderFile, other: HolderRecord | null): void {
    if (other === null) {
      if (foreign !== null) logger.info({ ...about, spoolFile: spoolFile.path }, 'the spool is no longer held by another deployment');
    } else if (foreign?.deploymentId !== other.deploymentId || foreign.host !== other.host || foreign.pid !== other.pid) {
      logger.error({ ...about, spoolFile: spoolFile.path, theirs: other }, spoolFile.refusal(other));
    }
    foreign = other;
  }

  /**
   * Writes the spool's holder record: 'written'; 'foreign' when another deployment's live holder is
   * named there instead (logged as by a check); 'failed' (one warning per failing stretch).
   */
  async function markSpoolFile(): Promise<'written' | 'foreign' | 'failed'> {
    const spoolFile = deps.spoolFile;
    if (spoolFile === undefined) return 'written';
    try {
      const other = await withDeadline(spoolFile.mark(), renewEveryMs, `no answer from the spool within ${renewEveryMs} ms`);
      if (isSpoolFileFailing) logger.info({ ...about, spoolFile: spoolFile.path }, 'the spool holder file is written again');
      isSpoolFileFailing = false;
      if (other !== null) noteForeign(spoolFile, other);
      return other === null ? 'written' : 'foreign';
    } catch (error) {
      if (!isSpoolFileFailing) logger.warn({ ...about, spoolFile: spoolFile.path, err: error }, 'writing the spool holder file failed; retrying');
      isSpoolFileFailing = true;
      return 'failed';
    }
  }

  async function tryAcquire(isFirst: boolean): Promise<void> {
    try {
      if ((await checkSpoolFile()) !== null) return;
      isSpoolReadFailing = false;
    } catch (error) {
      if (!isSpoolReadFailing) logger.warn({ ...about, err: error }, 'reading the spool holder file failed; not taking the spool lease until it can be read');
      isSpoolReadFailing = true;
      return;
    }
    const sentAt = now();
    const since = new Date().toISOString();
    let result;
    try {
      result = await withDeadline(lease.acquire({ ...self, since }, leaseMs), retryEveryMs, `no reply within ${retryEveryMs} ms`);
      onRedisOk();
    } catch (error) {
      onRedisError('taking the spool lease', error);
      return;
    }
    if (!result.isAcquired) {
      const holderId = result.holder?.id ?? null;
      if (holderId !== standbyHolderId) {
        logger.info({ ...about, holder: publicHolder(result.holder) }, STANDING_BY);
        standbyHolderId = holderId;
      }
      return;
    }
    standbyHolderId = undefined;
    // Other deployments learn from the spool that it is held before this process moves anything.
    if ((await markSpoolFile()) !== 'written') {
      await withDeadline(lease.release(self.id), leaseMs, 'no reply').catch(() => undefined);
      return;
    }
    const fence: Fence = {
      isHeld: () => !held.isEnded && now() < held.validUntil,
      assertHeld() {
        if (!fence.isHeld()) throw new Error(`this process no longer holds the spool lease ${lease.key}`);
      },
    };
    const held: Term<S> = {
      validUntil: sentAt + validForMs,
      since: result.holder?.since ?? since,
      fence,
      session: null,
      starting: Promise.resolve(),
      isEnded: false,
      isFirst,
    };
    term = held;
    logger.info({ ...about, since: held.since, leaseMs, host: self.host }, 'holding the spool lease: this process watches the spool and moves its files');
    held.starting = deps.start(fence).then(
      (session) => {
        held.session = session;
        if (held.isEnded) void session.stop({ isShutdown: false }).catch(() => undefined);
      },
      (error: unknown) => {
        held.startError = error;
      },
    );
  }

  async function renew(held: Term<S>): Promise<void> {
    // A spool that cannot be read keeps its holder: the Redis lease still orders this deployment.
    if ((await checkSpoolFile().catch(() => null)) !== null) {
      await lose(held, 'another deployment holds the spool');
      await withDeadline(lease.release(self.id), leaseMs, 'no reply').catch(() => undefined);
      return;
    }
    const sentAt = now();
    try {
      const isStillHeld = await withDeadline(lease.renew(self.id, leaseMs), renewEveryMs, `no reply within ${renewEveryMs} ms`);
      onRedisOk();
      if (!isStillHeld) {
        await lose(held, 'the lease expired or another process took it');
        return;
      }
      if (!held.isEnded && now() < held.validUntil) held.validUntil = Math.max(held.validUntil, sentAt + validForMs);
      if (!held.isEnded && (await markSpoolFile()) === 'foreign') {
        await lose(held, 'another deployment holds the spool');
        await withDeadline(lease.release(self.id), leaseMs, 'no reply').catch(() => undefined);
        return;
      }
    } catch (error) {
      onRedisError('renewing the spool lease', error);
    }
    if (!held.isEnded && now() >= held.validUntil) await lose(held, `not renewed for ${validForMs} ms (Redis unreachable?)`);
  }

  /** Ends a holding: the fence closes at once, then the work is stopped (bounded: the fence already stops every move). */
  async function lose(held: Term<S>, reason: string): Promise<void> {
    if (held.isEnded) return;
    held.isEnded = true;
    if (term === held) term = null;
    logger.warn({ ...about, reason }, 'lost the spool lease: stopped moving files; standing by');
    await withDeadline(held.starting, leaseMs, 'start').catch(() => undefined);
    await withDeadline(held.session?.stop({ isShutdown: false }) ?? Promise.resolve(), leaseMs, `stopping took over ${leaseMs} ms`).catch((error: unknown) =>
      logger.warn({ ...about, err: error }, 'stopping the spool work after losing the lease did not finish; its files no longer move'),
    );
  }

  async function step(): Promise<number> {
    const held = term;
    if (held === null) {
      if (isAcquiring) await tryAcquire(false);
      return term === null ? retryEveryMs : renewEveryMs;
    }
    if (held.startError !== undefined && !held.isFirst) {
      logger.error({ ...about, err: held.startError }, 'starting the spool work failed: giving the lease up');
      await lose(held, 'the spool work failed to start');
      await withDeadline(lease.release(self.id), leaseMs, 'no reply').catch(() => undefined);
      return leaseMs;
    }
    const startedAt = now();
    await renew(held);
    return Math.max(0, renewEveryMs - (now() - startedAt));
  }

  async function loop(): Promise<void> {
    while (!isClosed) {
      const waitMs = await step().catch((error: unknown) => {
        logger.error({ ...about, err: error }, 'spool lease step failed');
        return retryEveryMs;
      });
      if (isClosed) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        timer.unref();
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  }

  await tryAcquire(true);
  const running = loop();
  const first = term as Term<S> | null;
  if (first !== null) {
    await first.starting;
    if (first.startError !== undefined) {
      isClosed = true;
      first.isEnded = true;
      wakeLoop();
      await running;
      await withDeadline(lease.release(self.id), leaseMs, 'no reply').catch(() => undefined);
      throw first.startError;
    }
  }

  let closing: Promise<void> | undefined;
  return {
    isHolder: () => term?.fence.isHeld() ?? false,
    session: () => term?.session ?? null,
    async state() {
      const holder = await lease.read();
      const role = isClosed ? 'stopped' : term?.fence.isHeld() === true ? 'holder' : 'standby';
      return {
        role,
        self: { host: self.host, pid: self.pid },
        holder: holder === null ? null : { host: holder.host, pid: holder.pid, since: holder.since, ttlMs: holder.ttlMs, isSelf: holder.id === self.id },
        foreignHolder: foreign,
      };
    },
    stopAcquiring() {
      isAcquiring = false;
    },
    close() {
      closing ??= (async () => {
        isAcquiring = false;
        const held = term;
        // The lease is renewed while the work drains: its last moves are still fenced.
        if (held !== null) {
          await held.starting;
          if (!held.isEnded) await held.session?.stop({ isShutdown: true });
        }
        isClosed = true;
        wakeLoop();
        await running;
        if (held !== null && !held.isEnded) {
          held.isEnded = true;
          term = null;
          // The work has stopped: the spool's record goes first, while no standby of this
          // deployment can have taken the lease (and written its own record) yet.
          await withDeadline(deps.spoolFile?.unmark() ?? Promise.resolve(false), leaseMs, 'no answer from the spool').catch(() => false);
          // Bounded: with Redis away the lease simply expires.
          const isReleased = await withDeadline(lease.release(self.id), leaseMs, 'no reply').catch(() => false);
          logger.info({ ...about, isReleased }, isReleased ? 'gave the spool lease up: a standby takes over' : 'the spool lease was no longer ours to give up');
        }
      })();
      return closing;
    },
  };
}

function publicHolder(holder: LeaseHolder | null): { host: string; pid: number; since: string } | null {
  return holder === null ? null : { host: holder.host, pid: holder.pid, since: holder.since };
}

/** Rejects with `message` when `promise` has not settled within `ms`; a late result is dropped. */
function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
    timer.unref();
  });
  promise.catch(() => {});
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
