/**
 * src/loop-turn.ts: chains of pieces whose promises resolve at once (a claim's synchronous read and
 * check, a move's file calls) let the event loop turn every SLICE_MS, so timers and I/O are not held
 * behind the whole chain; and a young slice costs no turn.
 */
import { expect, it } from 'vitest';
import { loopTurn, SLICE_MS } from '../../src/loop-turn.js';

/** Holds the thread for `ms` of wall time, as a synchronous check or file call does. */
function burn(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Counts the loop's turns (one setImmediate a turn) until stopped. */
function turnCounter(): { now(): number; stop(): void } {
  let turns = 0;
  let isOn = true;
  const tick = (): void => {
    turns += 1;
    if (isOn) setImmediate(tick);
  };
  setImmediate(tick);
  return { now: () => turns, stop: () => void (isOn = false) };
}

/** `runners` chains of `pieces` pieces of `pieceMs` each, started together; `between` runs before each piece. */
async function chains(runners: number, pieces: number, pieceMs: number, between: () => Promise<void>, onPiece: () => void): Promise<void> {
  const chain = async (): Promise<void> => {
    for (let i = 0; i < pieces; i += 1) {
      await between();
      burn(pieceMs);
      onPiece();
    }
  };
  await Promise.all(Array.from({ length: runners }, chain));
}

it('a timer due while chains of pieces run gets its turn before they end, and each turn holds the loop about SLICE_MS', async () => {
  const total = 16 * 10;
  let done = 0;
  let doneWhenTimerRan: number | null = null;
  const timer = setTimeout(() => (doneWhenTimerRan = done), 0);
  const turns = turnCounter();
  const piecesByTurn = new Map<number, number>();
  await chains(16, 10, 2, loopTurn, () => {
    done += 1;
    piecesByTurn.set(turns.now(), (piecesByTurn.get(turns.now()) ?? 0) + 1);
  });
  turns.stop();
  clearTimeout(timer);

  expect(doneWhenTimerRan).not.toBeNull();
  expect(doneWhenTimerRan!).toBeLessThan(total);
  // A slice takes pieces until SLICE_MS is used up; the piece that crosses the line is the last.
  expect(Math.max(...piecesByTurn.values())).toBeLessThanOrEqual(Math.ceil(SLICE_MS / 2) + 1);
});

it('without the turns, the same chains hold the timer until they end (what the first test could catch)', async () => {
  const total = 16 * 10;
  let done = 0;
  let doneWhenTimerRan: number | null = null;
  const timer = setTimeout(() => (doneWhenTimerRan = done), 0);
  await chains(
    16,
    10,
    0.2,
    () => Promise.resolve(),
    () => (done += 1),
  );
  await new Promise((resolve) => setTimeout(resolve, 5));
  clearTimeout(timer);
  expect(doneWhenTimerRan).toBe(total);
});

it('pieces that fit in the slice take no turn of the loop', async () => {
  const turns = turnCounter();
  // Let the counter's first tick pass, so the pieces start in a turn of their own.
  await new Promise((resolve) => setImmediate(resolve));
  const first = turns.now();
  for (let i = 0; i < 20; i += 1) await loopTurn();
  const spanned = turns.now() - first;
  turns.stop();
  // 20 calls in well under SLICE_MS: one turn at most (two on a machine that preempted this thread past it).
  expect(spanned).toBeLessThanOrEqual(2);
});
