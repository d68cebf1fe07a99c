/**
 * The check threads' slots: at most `size` checks run at once; the others wait for a slot in the
 * order they asked. A check holds its slot from before its thread begins until its outcome is in,
 * so a deadline that starts on the thread never counts a wait behind another file.
 */
export interface ThreadSlots {
  take(): Promise<void>;
  give(): void;
}

export function createThreadSlots(size: number): ThreadSlots {
  let free = size;
  const waiting: Array<() => void> = [];
  return {
    take() {
      if (free > 0) {
        free -= 1;
        return Promise.resolve();
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
    give() {
      const next = waiting.shift();
      // The slot goes straight to the next in line, so no later take() overtakes it.
      if (next === undefined) free += 1;
      else next();
    },
  };
}
