/**
 * The watchdog on progress, not on process life (issue 44). Every few seconds (a quarter of the
 * bound, at most 5 s) it runs its checks (runtime/watchdog/stall-checks.ts), each of which reads what the
 * daemon already keeps (the delivery thread's heartbeat, the stats counters, the queue counts, the
 * in-flight index) and says whether something is stuck, since when, and how to recover it. A check
 * that sees Redis away, full or failing over, a 401 pause or a slow API says nothing: those are
 * states of their own, not stalls.
 *
 * On a stall: `/readyz` answers 503 with a reason that begins `stalled:`, one error line, the
 * `stalled` notification (notify-role.ts listens here), then the check's recovery (reconnect,
 * restart the delivery thread, reconcile the spool). When no check finds it any more, one info
 * line and the notification's `resolved`. Still stuck `stallMs` after it was seen: `onFatal`
 * (start.ts turns `/healthz` 503 and the daemon exits 1, for systemd or Kubernetes to restart it).
 * A recovery step still under way then (a new delivery thread starting on a loaded machine) gets up
 * to one bound more.
 */
import type { Logger } from '../../log.js';
import { stallReason } from '../../ops/readiness.js';

export interface Stall {
  /** What is stuck, in a few words a person reads (the log line, `/readyz`, the notification). */
  what: string;
  /** Since when (ms since the epoch): the last progress, or the last answer. */
  since: number;
  /** What brings it back: a reconnect, a new delivery thread, a reconcile. */
  recover(): Promise<void>;
}

/** One check: a stall now, or null. */
export type StallCheck = (nowMs: number) => Promise<Stall | null>;

export interface StallState {
  what: string;
  since: number;
  /** When the watchdog saw it (ms since the epoch). */
  seenAt: number;
  /** Not recovered within the bound: the process is on its way out. */
  isFatal: boolean;
}

export interface Watchdog {
  current(): StallState | null;
  /** Called when a stall is seen, turns fatal, or ends (null). */
  onChange(listener: (stall: StallState | null) => void): void;
  /** Starts the checks (the roles that give them are up by then). */
  start(checks: readonly StallCheck[]): void;
  /** One pass over the checks (the timer calls it). */
  tick(): Promise<void>;
  close(): void;
}

export interface WatchdogOptions {
  stallMs: number;
  logger: Logger;
  /** The stall was not recovered within `stallMs` of being seen. */
  onFatal(reason: string): void;
  now?: () => number;
}

/** The checks' period: a quarter of the bound, between 250 ms and 5 s. */
export function tickMsOf(stallMs: number): number {
  return Math.min(5000, Math.max(250, Math.floor(stallMs / 4)));
}

export function createWatchdog(options: WatchdogOptions): Watchdog {
  const { stallMs, logger } = options;
  const now = options.now ?? Date.now;
  const listeners: Array<(stall: StallState | null) => void> = [];
  let checks: readonly StallCheck[] = [];
  let state: StallState | null = null;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;
  let isClosed = false;
  /** A recovery step is under way (a new thread starting): it gets up to one bound more before the stall is fatal. */
  let isRecovering = false;
  // When the last recovery step ended: its result gets two checks more to show (a new thread answers
  // only once it ran; under load that came after the bound, and a recovered daemon was stopped).
  let recoveryEndedAt = -Infinity;

  const emit = (): void => {
    for (const listener of listeners) listener(state === null ? null : { ...state });
  };

  const find = async (nowMs: number): Promise<Stall | null> => {
    for (const check of checks) {
      try {
        const stall = await check(nowMs);
        if (stall !== null) return stall;
      } catch (error) {
        // A check that cannot read (Redis went away meanwhile) sees nothing: the outage is told elsewhere.
        logger.debug({ err: error }, 'watchdog: a check failed');
      }
    }
    return null;
  };

  const pass = async (): Promise<void> => {
    const nowMs = now();
    const stall = await find(nowMs);
    if (isClosed) return;
    if (stall === null) {
      if (state === null) return;
      logger.info({ stall: state.what, since: new Date(state.since).toISOString(), lastedMs: nowMs - state.since }, 'stall recovered');
      state = null;
      emit();
      return;
    }
    if (state === null) {
      state = { what: stall.what, since: stall.since, seenAt: nowMs, isFatal: false };
      logger.error({ stall: stall.what, since: new Date(stall.since).toISOString(), stallMs }, `${stallReason(stall)}: recovering`);
      emit();
      isRecovering = true;
      stall
        .recover()
        .catch((error: unknown) => logger.warn({ err: error, stall: stall.what }, 'stall recovery failed'))
        .finally(() => void ((isRecovering = false), (recoveryEndedAt = now())));
      return;
    }
    const stuckMs = nowMs - state.seenAt;
    const isInGrace = isRecovering ? stuckMs < 2 * stallMs : nowMs - recoveryEndedAt < 2 * tickMsOf(stallMs);
    if (!state.isFatal && stuckMs >= stallMs && !isInGrace) {
      state.isFatal = true;
      emit();
      options.onFatal(`${stallReason(state)}; not recovered within ${stallMs} ms`);
    }
  };

  const tick = (): Promise<void> => {
    running ??= pass().finally(() => (running = null));
    return running;
  };
  const schedule = (): void => {
    if (isClosed) return;
    timer = setTimeout(() => void tick().finally(schedule), tickMsOf(stallMs));
    timer.unref();
  };

  return {
    current: () => (state === null ? null : { ...state }),
    onChange: (listener) => void listeners.push(listener),
    start(given) {
      checks = given;
      if (checks.length > 0) schedule();
    },
    tick,
    close() {
      isClosed = true;
      clearTimeout(timer);
    },
  };
}
