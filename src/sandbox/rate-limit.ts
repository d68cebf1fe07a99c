/**
 * Sliding-window limit per key: at most `limit` admitted requests in any `windowMs`.
 * Only admitted requests are remembered, so requests refused with 429 do not count.
 * When full, the caller may retry once the oldest admitted request leaves the window;
 * Retry-After is that wait rounded up to whole seconds (at least 1).
 */

export type RateDecision = { isAllowed: true } | { isAllowed: false; retryAfterSec: number };

export class SlidingWindowLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  /** Per key: admission times, oldest first, from index `head` on. */
  readonly #windows = new Map<string, { times: number[]; head: number }>();

  constructor(limit: number, windowMs = 60_000) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`ratePerMinute must be a positive integer, got ${limit}`);
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  take(key: string, now: number): RateDecision {
    let window = this.#windows.get(key);
    if (window === undefined) {
      window = { times: [], head: 0 };
      this.#windows.set(key, window);
    }
    const { times } = window;
    while (window.head < times.length && (times[window.head] ?? 0) <= now - this.#windowMs) window.head++;
    if (window.head > 1024 && window.head * 2 > times.length) {
      times.splice(0, window.head);
      window.head = 0;
    }
    if (times.length - window.head >= this.#limit) {
      const oldest = times[window.head] ?? now;
      const waitMs = oldest + this.#windowMs - now;
      return { isAllowed: false, retryAfterSec: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    times.push(now);
    return { isAllowed: true };
  }
}
