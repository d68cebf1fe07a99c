/** Time comes through here so tests can reason about it; no I/O. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
