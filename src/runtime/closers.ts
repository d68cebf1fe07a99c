/**
 * The shutdown stack: whatever opens a resource pushes its close right after opening it; closing
 * runs in reverse order, each step once, and one failing step does not stop the others. A close
 * pushed once closing has begun (a start still opening things when the stop came) runs at once.
 */
import type { Logger } from '../log.js';

export interface Closers {
  push(name: string, close: () => Promise<void> | void): void;
  closeAll(): Promise<void>;
}

export function createClosers(logger: Logger): Closers {
  const stack: Array<{ name: string; close: () => Promise<void> | void }> = [];
  let closing: Promise<void> | undefined;
  const drain = async (): Promise<void> => {
    while (stack.length > 0) {
      const step = stack.pop()!;
      try {
        await step.close();
        logger.debug({ step: step.name }, 'closed');
      } catch (error) {
        logger.error({ step: step.name, err: error }, 'close failed');
      }
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
  };
}
