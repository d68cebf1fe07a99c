/**
 * The board the check threads write on and the event loop reads, in shared memory (one per lane,
 * handed to its threads as workerData): each thread's slot says which task it began last, its OS
 * thread id, and its CPU and wall clocks then. Writing it costs the thread one read of its clock a
 * file; the event loop reads it only for a file that has run past its budget's wall time, so the
 * common file costs the event loop nothing (a message a file from each thread cost ~30 µs of it).
 * A slot is the thread's JS threadId modulo SLOTS: a lane never has SLOTS threads at once.
 */
import type { Begun } from './cpu-budget.js';

const SLOTS = 64;
/** Int32 fields of a slot: the JS threadId, the task id, the OS thread id (-1: none). */
const INTS = 3;
/** Float64 fields of a slot: CPU ms at the beginning (-1: no clock), wall ms (epoch) at the beginning. */
const TIMES = 2;

export interface SharedBoard {
  ints: SharedArrayBuffer;
  times: SharedArrayBuffer;
}

export interface CheckBoard {
  ints: Int32Array;
  times: Float64Array;
}

export function createSharedBoard(): SharedBoard {
  return { ints: new SharedArrayBuffer(SLOTS * INTS * 4), times: new SharedArrayBuffer(SLOTS * TIMES * 8) };
}

export function boardOf(shared: SharedBoard): CheckBoard {
  return { ints: new Int32Array(shared.ints), times: new Float64Array(shared.times) };
}

/** Thread side: this thread began task `taskId`. The task id is written last, so a reader that finds it finds the rest. */
export function markBegun(board: CheckBoard, threadId: number, taskId: number, begun: Begun): void {
  const slot = threadId % SLOTS;
  board.times[slot * TIMES] = begun.startCpuMs ?? -1;
  board.times[slot * TIMES + 1] = begun.startWallMs;
  Atomics.store(board.ints, slot * INTS, threadId);
  Atomics.store(board.ints, slot * INTS + 2, begun.tid ?? -1);
  Atomics.store(board.ints, slot * INTS + 1, taskId);
}

/** Event loop side: the thread that began task `taskId` and how, or null while none has. */
export function begunBy(board: CheckBoard, taskId: number): (Begun & { threadId: number }) | null {
  for (let slot = 0; slot < SLOTS; slot += 1) {
    if (Atomics.load(board.ints, slot * INTS + 1) !== taskId) continue;
    const tid = Atomics.load(board.ints, slot * INTS + 2);
    const startCpuMs = board.times[slot * TIMES] ?? -1;
    return {
      threadId: Atomics.load(board.ints, slot * INTS),
      tid: tid < 0 ? null : tid,
      startCpuMs: startCpuMs < 0 ? null : startCpuMs,
      startWallMs: board.times[slot * TIMES + 1] ?? 0,
    };
  }
  return null;
}
