/**
 * A check thread's task (the module the pool's threads load): one file's check (check-now.ts). It
 * notes on the lane's board (check-board.ts) when it begins a file, with its OS thread id and CPU
 * clock, so that the file's CPU budget is read on this thread's clock from then on, not counting
 * the thread's start-up.
 */
import { threadId, workerData } from 'node:worker_threads';
import { boardOf, markBegun, type SharedBoard } from './check-board.js';
import { checkNow } from './check-now.js';
import { ownThreadId, threadCpuMs } from './cpu-budget.js';
import type { CheckOutcome, CheckTask } from './wire.js';

const board = boardOf((workerData as { board: SharedBoard }).board);
const tid = ownThreadId();

export default async function runCheck(task: CheckTask & { id: number; freeze?: true }): Promise<CheckOutcome> {
  // CARRIER_SYNC_FAILPOINTS=check-thread-freeze (tests only): the thread stops answering for good,
  // before it begins the file, as a thread caught in a deadlock would (the watchdog's claims check).
  if (task.freeze === true) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  markBegun(board, threadId, task.id, { tid, startCpuMs: tid === null ? null : threadCpuMs(tid), startWallMs: Date.now() });
  return checkNow(task);
}
