/**
 * Work in progress that the watchdog (runtime/watchdog/watchdog.ts) watches from outside: a file's
 * claim (read, checked on a thread, queued) and a pass of the outcome consumer (files moved, the
 * batch settled). Each run says when it began and ends; the watchdog reads the oldest run still
 * going and when the last one ended. Nothing here times anything out: a claim stuck on a check
 * thread that never answers, or a move stuck on a share that never returns, would otherwise hold
 * its inbox or the outcomes without a word (issue 44, "claimed files").
 */

export interface ProgressTrack {
  /** A run begins; call the returned function when it ends (either way). */
  begin(): () => void;
  /** When the oldest run still going began (ms since the epoch), or null when none is. */
  oldestRunningSince(): number | null;
  /** When a run last ended (ms since the epoch); the track's creation before the first. */
  lastEndedAt(): number;
}

export function createProgressTrack(now: () => number = Date.now): ProgressTrack {
  const running = new Map<number, number>();
  let nextId = 0;
  let lastEnded = now();
  return {
    begin() {
      const id = nextId++;
      running.set(id, now());
      return () => {
        if (running.delete(id)) lastEnded = now();
      };
    },
    oldestRunningSince() {
      // A Map keeps insertion order: the first entry is the oldest run still going.
      for (const since of running.values()) return since;
      return null;
    },
    lastEndedAt: () => lastEnded,
  };
}
