/**
 * The parts of the check pool's budgets that need no thread: the CPU budget read on a thread's own
 * clock (here, this thread's), its wall-time fallback and ceiling, the shared board a thread notes
 * its file on, and the slots that keep checks in order.
 */
import { describe, expect, it } from 'vitest';
import { begunBy, boardOf, createSharedBoard, markBegun } from '../../src/validate/pool/check-board.js';
import { isOverBudget, ownThreadId, threadCpuMs } from '../../src/validate/pool/cpu-budget.js';
import { createThreadSlots } from '../../src/validate/pool/thread-slots.js';

describe('CPU budget', () => {
  it("counts the thread's CPU, not the wall time, when the thread's clock is there", () => {
    const tid = ownThreadId();
    expect(tid).toBe(process.pid);
    const begun = { tid, startCpuMs: threadCpuMs(tid!), startWallMs: Date.now() };
    expect(isOverBudget(begun, 60)).toBe(false);
    // Busy until this thread's own clock moved 80 ms (bounded: 10 s of wall time at most).
    const until = Date.now() + 10_000;
    while ((threadCpuMs(tid!) ?? 0) - (begun.startCpuMs ?? 0) < 80 && Date.now() < until) Math.sqrt(Math.random());
    expect(isOverBudget(begun, 60)).toBe(true);
    expect(isOverBudget(begun, 5_000)).toBe(false);
  });

  it('counts wall time without the clock, and ends any check after ten budgets of wall time', () => {
    const now = Date.now();
    expect(isOverBudget({ tid: null, startCpuMs: null, startWallMs: now - 99 }, 100, now)).toBe(false);
    expect(isOverBudget({ tid: null, startCpuMs: null, startWallMs: now - 100 }, 100, now)).toBe(true);
    // Waiting for a core (half a second of wall time, no CPU since) is not spending the budget…
    const waited = { tid: ownThreadId(), startCpuMs: threadCpuMs(ownThreadId()!), startWallMs: now - 500 };
    expect(isOverBudget(waited, 100, now)).toBe(false);
    // …until ten budgets of wall time have passed.
    expect(isOverBudget({ ...waited, startWallMs: now - 1_000 }, 100, now)).toBe(true);
  });
});

describe('check board', () => {
  it('gives the thread, its OS id and clocks for the task it began, and nothing for a task none began', () => {
    const shared = createSharedBoard();
    const [writer, reader] = [boardOf(shared), boardOf(shared)];
    markBegun(writer, 7, 41, { tid: 1234, startCpuMs: 250, startWallMs: 1_700_000_000_123 });
    markBegun(writer, 8, 42, { tid: null, startCpuMs: null, startWallMs: 1_700_000_000_456 });
    expect(begunBy(reader, 41)).toEqual({ threadId: 7, tid: 1234, startCpuMs: 250, startWallMs: 1_700_000_000_123 });
    expect(begunBy(reader, 42)).toEqual({ threadId: 8, tid: null, startCpuMs: null, startWallMs: 1_700_000_000_456 });
    expect(begunBy(reader, 43)).toBeNull();
    // The thread's next task replaces its last.
    markBegun(writer, 7, 44, { tid: 1234, startCpuMs: 260, startWallMs: 1_700_000_000_789 });
    expect(begunBy(reader, 41)).toBeNull();
    expect(begunBy(reader, 44)?.startCpuMs).toBe(260);
  });
});

describe('thread slots', () => {
  it('lets `size` checks run at once and the others in the order they asked', async () => {
    const slots = createThreadSlots(1);
    const order: number[] = [];
    await slots.take();
    const waiting = [1, 2, 3].map(async (n) => {
      await slots.take();
      order.push(n);
      slots.give();
    });
    expect(order).toEqual([]);
    slots.give();
    await Promise.all(waiting);
    expect(order).toEqual([1, 2, 3]);
  });
});
