/**
 * The shutdown stack: whatever opens a resource pushes its close right after opening it; closing
 * runs in reverse order, each step once, and one failing step does not stop the others. A close
 * pushed once closing has begun (a start still opening things when the stop came) runs at once.
 */
import type { Logger } from '../log.js';

export interface Closers {
  push(name: string, close: () => Promise<void> | void): void;
  closeAll(): Promise<void>;
  /** The step closing now, or null. */
  current(): string | null;
}

export function createClosers(logger: Logger): Closers {
  const stack: Array<{ name: string; close: () => Promise<void> | void }> = [];
  let closing: Promise<void> | undefined;
  let current: string | null = null;
  const drain = async (): Promise<void> => {
    while (stack.length > 0) {
      const step = stack.pop()!;
      current = step.name;
      try {
        await step.close();
        logger.debug({ step: step.name }, 'closed');
      } catch (error) {
        logger.error({ step: step.name, err: error }, 'close failed');
      }
      current = null;
    }
  };
  return {
    push(name, close) {
      stack.push({ name, close });
      if (closing !== undefined) closing = closing.then(drain);
    },
    closeAll() {
      closing ??= drain();
      return closing;
    },
    current: () => current,
  };
}

/**
 * The part of the grace period the workers get to finish what is in flight: the rest (a third, at
 * most 3 s) is kept for the steps after them (the outcome moves, the lease, Redis, the managed
 * redis-server), so that a clean stop fits in the grace period with a request that never answers.
 */
export function inFlightGraceMs(graceMs: number): number {
  return graceMs - Math.min(3000, Math.round(graceMs / 3));
}
