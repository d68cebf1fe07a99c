/**
 * The loop that keeps the spool lease's promises (spool-lease.ts): one turn (lease-turns.ts) at a
 * time, a standby's attempt or the holder's renewal, then a wait; and the shutdown, which lets the
 * holder's work drain under a lease still renewed before giving it up.
 */
import { withDeadline } from '../deadline.js';
import { createTurnState, giveBack, lose, now, renew, tryAcquire, type TurnState } from './lease-turns.js';
import type { HeldSession, SpoolLease, SpoolLeaseDeps, SpoolLeaseState } from './spool-lease.js';

/**
 * Takes the lease if it is free and starts the holder's work, or stands by. Resolves once the first
 * attempt is done (and, if it took the lease, once the work has started); a failure to start the
 * work on that first attempt rejects, after giving the lease up.
 */
export async function holdSpoolLease<S extends HeldSession>(deps: SpoolLeaseDeps<S>): Promise<SpoolLease<S>> {
  const holder = new SpoolLeaseHolder(deps);
  await holder.begin();
  return holder;
}

class SpoolLeaseHolder<S extends HeldSession> implements SpoolLease<S> {
  private readonly turns: TurnState<S>;
  private isAcquiring = true;
  private isClosed = false;
  private running: Promise<void> = Promise.resolve();
  private wake: (() => void) | null = null;
  private closing: Promise<void> | undefined;

  constructor(private readonly deps: SpoolLeaseDeps<S>) {
    this.turns = createTurnState(deps);
  }

  /** The first attempt, then the loop; a first term whose work fails to start ends it all. */
  async begin(): Promise<void> {
    await tryAcquire(this.turns, true);
    this.running = this.loop();
    const first = this.turns.term;
    if (first === null) return;
    await first.starting;
    if (first.startError === undefined) return;
    this.isClosed = true;
    first.isEnded = true;
    this.wake?.();
    await this.running;
    await giveBack(this.turns);
    throw first.startError;
  }

  isHolder(): boolean {
    return this.turns.term?.fence.isHeld() ?? false;
  }

  session(): S | null {
    return this.turns.term?.session ?? null;
  }

  async state(): Promise<SpoolLeaseState> {
    const holder = await this.deps.lease.read();
    const { self } = this.turns;
    return {
      role: this.isClosed ? 'stopped' : this.isHolder() ? 'holder' : 'standby',
      self: { host: self.host, pid: self.pid },
      holder: holder === null ? null : { host: holder.host, pid: holder.pid, since: holder.since, ttlMs: holder.ttlMs, isSelf: holder.id === self.id },
      foreignHolder: this.turns.spoolFile.foreign(),
    };
  }

  stopAcquiring(): void {
    this.isAcquiring = false;
  }

  close(): Promise<void> {
    this.closing ??= this.giveUp();
    return this.closing;
  }

  private async loop(): Promise<void> {
    while (!this.isClosed) {
      const waitMs = await this.step().catch((error: unknown) => {
        this.deps.logger.error({ ...this.turns.about, err: error }, 'spool lease step failed');
        return this.turns.retryEveryMs;
      });
      if (this.isClosed) break;
      await this.sleep(waitMs);
    }
  }

  /** Waits `ms`, or until `close` wakes the loop. */
  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = null;
  }

  /** One turn of the loop; returns how long to wait before the next. */
  private async step(): Promise<number> {
    const turns = this.turns;
    const held = turns.term;
    if (held === null) {
      if (this.isAcquiring) await tryAcquire(turns, false);
      return turns.term === null ? turns.retryEveryMs : turns.renewEveryMs;
    }
    if (held.startError !== undefined && !held.isFirst) {
      this.deps.logger.error({ ...turns.about, err: held.startError }, 'starting the spool work failed: giving the lease up');
      await lose(turns, held, 'the spool work failed to start');
      await giveBack(turns);
      return this.deps.leaseMs;
    }
    const startedAt = now();
    await renew(turns, held);
    return Math.max(0, turns.renewEveryMs - (now() - startedAt));
  }

  /** The shutdown: no more attempts, the work drains under a renewed lease, then the lease is given up. */
  private async giveUp(): Promise<void> {
    const { lease, leaseMs, logger } = this.deps;
    this.isAcquiring = false;
    const held = this.turns.term;
    // The lease is renewed while the work drains: its last moves are still fenced.
    if (held !== null) {
      await held.starting;
      if (!held.isEnded) await held.session?.stop({ isShutdown: true });
    }
    this.isClosed = true;
    this.wake?.();
    await this.running;
    if (held === null || held.isEnded) return;
    held.isEnded = true;
    this.turns.term = null;
    // The work has stopped: the spool's record goes first, while no standby of this
    // deployment can have taken the lease (and written its own record) yet.
    await withDeadline(this.deps.spoolFile?.unmark() ?? Promise.resolve(false), leaseMs, 'no answer from the spool').catch(() => false);
    // Bounded: with Redis away the lease simply expires.
    const isReleased = await withDeadline(lease.release(this.turns.self.id), leaseMs, 'no reply').catch(() => false);
    logger.info({ ...this.turns.about, isReleased }, isReleased ? 'gave the spool lease up: a standby takes over' : 'the spool lease was no longer ours to give up');
  }
}
