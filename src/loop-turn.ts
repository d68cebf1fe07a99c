/**
 * Turns of the event loop between pieces of work that would otherwise run back to back without one
 * (a leaf like clock.ts: anyone may use it; no I/O).
 *
 * On a local disk the spool's file calls are synchronous (spool/file-calls.ts), a small file is
 * checked on the event loop (validate/pool/check-pool.ts), and one socket read of Redis' replies
 * resolves many commands at once: so the continuations of many claims, enqueues or moves, each
 * resolved by a promise that is already settled, ran as one chain of promise callbacks, and no timer
 * or request got a turn until the chain ended. In the large drop that held the main thread for up to
 * 1.1–1.5 s at a time (its first 40 events files claimed at once, each parsed and queued: the
 * benchmark log, issue 46's tenth session), and /healthz, the lease's renewals and the watchdog
 * waited behind it.
 *
 * `await loopTurn()` right before such a piece: at once while the loop's current slice is younger
 * than SLICE_MS, otherwise on the loop's next turn (setImmediate: timers and I/O callbacks run
 * first). The slice is process-wide: it opens with the first call in a turn of the loop, and every
 * caller counts against the same one, so concurrent chains (claims, enqueues, moves) share it
 * instead of each taking its own 10 ms.
 *
 * The calls are granted one after another, in the order they were made: a call is answered only
 * after the caller before it has run its piece up to its next await. (Answered all at once — 32
 * claims starting together, each told "the slice has room" before any of them had run — every one
 * of them would run its piece in the same turn.)
 */

/** The longest a chain of pieces holds the event loop before it lets the loop turn (one piece may overrun it). */
export const SLICE_MS = 10;

let sliceStart = 0;
/** Whether a slice is open in this turn of the loop (it closes at the turn's check phase). */
let isSliceOpen = false;
/** The next turn, shared by every caller waiting for it. */
let nextTurn: Promise<void> | null = null;

function closeSlice(): void {
  isSliceOpen = false;
}

/** How long the current slice has held the loop (opening one, if none is open in this turn). */
function sliceElapsedMs(): number {
  const now = performance.now();
  if (!isSliceOpen) {
    isSliceOpen = true;
    sliceStart = now;
    setImmediate(closeSlice);
  }
  return now - sliceStart;
}

/** The last call's grant: the next call is answered after it (and after its caller's piece). */
let lastGrant: Promise<void> = Promise.resolve();

/** Nothing when the slice has room; else a promise of the loop's next turn, after which the slice is looked at again. */
function roomInSlice(): Promise<void> | undefined {
  if (sliceElapsedMs() < SLICE_MS) return undefined;
  nextTurn ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      nextTurn = null;
      resolve();
    }),
  );
  return nextTurn.then(roomInSlice);
}

/**
 * Resolves when the caller may run its piece: at once (a microtask) while the loop's slice has
 * room, else once the loop has turned and a new slice has it. Never rejects.
 */
export function loopTurn(): Promise<void> {
  // The caller's `await` is the grant's first reaction; the next call's look at the slice, chained
  // on the same grant, comes after it: after the piece's synchronous part has run.
  lastGrant = lastGrant.then(roomInSlice);
  return lastGrant;
}
