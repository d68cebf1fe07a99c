/**
 * The delivery thread's heap given back once a burst of work is over (issue 46, item 5).
 *
 * V8 shrinks a heap in its "memory reducer", which a collection arms; a thread that goes idle after
 * a flood allocates too little to need a collection, so its isolate kept what the flood grew it to
 * (~29 MB committed against 13.7 at rest, for as long as the daemon stays idle: the main thread's
 * isolate, with the ops server's and watcher's timers, gives its growth back within seconds). Node
 * 20 offers no way to ask for the reducer; a full collection (`gc`) frees the flood's dead objects
 * and gives their old-space pages back, which is most of it. `gc` is taken the way test runners
 * take it (`--expose-gc` set for one fresh `vm` context, then unset): the daemon's own code never
 * sees a global `gc`.
 *
 * When: once the thread's event loop has been busy (utilization above `busyAbove` in one tick) and
 * then idle for `idleTicks` ticks in a row (each below `idleBelow`), and only if the heap has grown
 * `minGrowthBytes` past its committed size after the last collection here (or at start). One
 * collection a burst: in the memory bench's flood the thread's isolate went 29.5 → 17.5 MB committed
 * (13.7 at rest before the flood; `--trace-gc`), in 20–25 ms of a thread with nothing else to do.
 * A second one 10 s later gave nothing more (17.5 → 18.5), so there is one.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { runInNewContext } from 'node:vm';

export interface IdleHeapOptions {
  /** A tick's event-loop utilization (0–1) above which the thread counts as busy. */
  busyAbove: number;
  /** A tick's utilization below which it counts as idle. */
  idleBelow: number;
  /** Idle ticks in a row, after a busy one, before the collection. */
  idleTicks: number;
  /** Committed heap growth (bytes) since the last release below which nothing is done. */
  minGrowthBytes: number;
}

export const IDLE_HEAP_DEFAULTS: IdleHeapOptions = { busyAbove: 0.05, idleBelow: 0.02, idleTicks: 10, minGrowthBytes: 4 * 1024 * 1024 };

export interface IdleHeap {
  /** Called once a tick (the thread's one-second report): may run a collection. Returns whether it did. */
  tick(): boolean;
}

export type Collect = () => void;

/** The full collection, without a global `gc` in the daemon's own context. */
export function fullCollection(): Collect {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as Collect;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** The decision, over the thread's own loop utilization and heap; `collect` and the samplers are given for tests. */
export function watchIdleHeap(
  options: IdleHeapOptions = IDLE_HEAP_DEFAULTS,
  collect: Collect = fullCollection(),
  utilization: () => number = loopUtilizationSinceLastCall(),
  committedBytes: () => number = () => getHeapStatistics().total_heap_size,
): IdleHeap {
  let baseline = committedBytes();
  let wasBusy = false;
  let idleInARow = 0;
  return {
    tick() {
      const used = utilization();
      if (used > options.busyAbove) {
        wasBusy = true;
        idleInARow = 0;
        return false;
      }
      idleInARow = used < options.idleBelow ? idleInARow + 1 : 0;
      if (!wasBusy || idleInARow < options.idleTicks) return false;
      wasBusy = false;
      if (committedBytes() - baseline < options.minGrowthBytes) return false;
      collect();
      baseline = committedBytes();
      return true;
    },
  };
}

function loopUtilizationSinceLastCall(): () => number {
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const delta = performance.eventLoopUtilization(now, last);
    last = now;
    return delta.utilization;
  };
}
