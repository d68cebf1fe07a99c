/**
 * The delivery thread's heap given back after a burst (runtime/delivery-thread/idle-heap.ts): when
 * the collection runs, over loop utilizations the test sets, and that the collection it takes frees
 * a real heap's garbage without leaving a global `gc` behind. What it buys in the daemon is the
 * memory bench's figure (RSS after the flood), not a test's.
 */
import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { fullCollection, IDLE_HEAP_DEFAULTS, watchIdleHeap } from '../../src/runtime/delivery-thread/idle-heap.js';

const MB = 1024 * 1024;

/** A watcher over a script of utilizations and committed sizes; returns the ticks that collected. */
function drive(utilizations: number[], committed: (tick: number) => number): number[] {
  let tick = -1;
  const collected: number[] = [];
  const watcher = watchIdleHeap(
    IDLE_HEAP_DEFAULTS,
    () => collected.push(tick),
    () => utilizations[tick]!,
    () => committed(Math.max(tick, 0)),
  );
  for (tick = 0; tick < utilizations.length; tick += 1) watcher.tick();
  return collected;
}

/** Items kept while they are made (so they reach the old generation), then dropped. */
function leaveGarbage(count: number): number {
  const items: Array<{ id: number; text: string }> = [];
  for (let i = 0; i < count; i += 1) items.push({ id: i, text: `item ${i}` });
  return items.length;
}

const idle = (n: number): number[] => Array<number>(n).fill(0.001);
/** 14 MB committed when the watcher starts, 30 once the first tick's burst grew it. */
const grown = (tick: number): number => (tick >= 1 ? 30 * MB : 14 * MB);

describe('the delivery thread heap given back when idle', () => {
  it('collects once, after a busy tick and then ten idle ticks in a row', () => {
    const ticks = [...idle(15), 0.6, 0.4, ...idle(25)];
    expect(drive(ticks, (t) => (t >= 15 ? 30 * MB : 14 * MB))).toEqual([26]);
  });

  it('counts the idle ticks again after a tick that is neither idle nor busy', () => {
    const ticks = [0.5, ...idle(6), 0.03, ...idle(12)];
    expect(drive(ticks, grown)).toEqual([17]);
  });

  it('starts over with a burst that comes before the ten idle ticks', () => {
    const ticks = [0.5, ...idle(8), 0.9, ...idle(10), 0.3, ...idle(3)];
    expect(drive(ticks, grown)).toEqual([19]);
  });

  it('leaves a heap that did not grow past its last size alone, and a thread that was never busy', () => {
    expect(drive([0.5, ...idle(12)], () => 14 * MB + 1)).toEqual([]);
    expect(drive([0.04, ...idle(30)], grown)).toEqual([]);
  });

  it('collects again after the next burst, measured from the size the last collection left', () => {
    const ticks = [0.5, ...idle(10), 0.5, ...idle(10), 0.5, ...idle(10)];
    const growth = new Map([
      [0, 10 * MB], // 14 → 24 MB: collected at tick 10, down to 20
      [11, 2 * MB], // 20 → 22: 2 MB past the last collection's size, below the 4: left alone
      [22, 3 * MB], // 22 → 25: 5 MB past it: collected at tick 32
    ]);
    let size = 14 * MB;
    let tick = -1;
    const collected: number[] = [];
    const watcher = watchIdleHeap(
      IDLE_HEAP_DEFAULTS,
      () => {
        collected.push(tick);
        size = 20 * MB;
      },
      () => ticks[tick]!,
      () => size,
    );
    for (tick = 0; tick < ticks.length; tick += 1) {
      size += growth.get(tick) ?? 0;
      watcher.tick();
    }
    expect(collected).toEqual([10, 32]);
  });

  it("frees a real heap's garbage, and no global gc is left behind", () => {
    const collect = fullCollection();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    expect(leaveGarbage(300_000)).toBe(300_000);
    const before = getHeapStatistics();
    collect();
    const after = getHeapStatistics();
    expect(after.used_heap_size).toBeLessThan(before.used_heap_size - 10 * MB);
    expect(after.total_heap_size).toBeLessThan(before.total_heap_size);
  });
});
