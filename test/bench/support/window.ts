/**
 * Sliding-window counts over request times, counted the way the sandbox's limiter counts: a
 * request at `t` is in the window ending at `now` when now - windowMs < t <= now.
 */

/** The largest number of times inside any window of `windowMs` (a window ends at each time). */
export function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end += 1) {
    while ((sorted[start] ?? 0) <= (sorted[end] ?? 0) - windowMs) start += 1;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

/**
 * Counts in every window (ending at `from + windowMs`, stepping by `stepMs`, up to `to`) that lies
 * wholly inside [from, to]: the sustained rate a sender achieved, window by window.
 */
export function windowCounts(times: readonly number[], windowMs: number, from: number, to: number, stepMs: number): number[] {
  const sorted = [...times].sort((a, b) => a - b);
  const counts: number[] = [];
  let start = 0;
  let end = 0;
  for (let windowEnd = from + windowMs; windowEnd <= to; windowEnd += stepMs) {
    while (end < sorted.length && (sorted[end] ?? 0) <= windowEnd) end += 1;
    while (start < end && (sorted[start] ?? 0) <= windowEnd - windowMs) start += 1;
    counts.push(end - start);
  }
  return counts;
}
