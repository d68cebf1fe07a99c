/**
 * The inbox window's refills from a listing's reserve (src/spool/inbox-state.ts), against a model:
 * random interleavings of drops (mtimes in whole seconds, so ties fall to the name), claims (their
 * own moves heard late or not), touches and removals of waiting files, periodic rescans and drained
 * windows, on a real folder. After every refill or
 * listing, the files it brought into the window are the oldest untracked files on disk (mtime, then
 * name) — a prefix of what a fresh listing would order — the window never holds more than its size,
 * and in the end every file dropped is claimed exactly once. Inbox events are noted as inotify
 * reports them: after the file's write.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, lstatSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createInboxState, noteEvent, refillWindow, scanInbox, type InboxState, type WatcherDeps } from '../../src/spool/inbox-state.js';
import { spoolPaths } from '../../src/spool/paths.js';

/** A window of 2 and so a reserve of 8: a burst goes beyond both. */
const WINDOW = 2;
const KIND = 'labels';

type Op =
  | { op: 'drop'; mtimeSec: number }
  | { op: 'burst'; mtimesSec: number[] }
  | { op: 'pass'; claims: number; lateEvents: boolean }
  | { op: 'remove'; pick: number }
  | { op: 'touch'; pick: number; mtimeSec: number }
  | { op: 'rescan' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('drop' as const), mtimeSec: fc.integer({ min: 0, max: 8 }) }) },
  // A burst builds a backlog well beyond the window, and so a reserve.
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('burst' as const), mtimesSec: fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 3, maxLength: 24 }) }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('pass' as const), claims: fc.integer({ min: 0, max: WINDOW }), lateEvents: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('touch' as const), pick: fc.nat(), mtimeSec: fc.integer({ min: 0, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rescan' as const) }) },
);

interface OnDisk {
  name: string;
  mtimeMs: number;
}

const byArrival = (a: OnDisk, b: OnDisk): number => a.mtimeMs - b.mtimeMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

class Run {
  readonly inbox: string;
  readonly state: InboxState;
  readonly dropped = new Set<string>();
  readonly claimed: string[] = [];
  /** Listings that kept a reserve (each makes a new one; a refill from it keeps the same). */
  listingsWithReserve = 0;
  /** Refills and listings made while a reserve was kept. */
  refillsWithReserve = 0;
  private serial = 0;

  constructor(readonly root: string) {
    const paths = spoolPaths(root);
    this.inbox = paths.inbox(KIND);
    mkdirSync(this.inbox, { recursive: true });
    const deps = { spool: { inboxWindow: WINDOW, usePolling: false }, paths, clock: { now: () => Date.now() } } as unknown as WatcherDeps;
    this.state = createInboxState(deps);
  }

  private base = Math.floor(Date.now() / 1000) - 3600;

  untracked(): OnDisk[] {
    const known = this.state.candidates[KIND];
    return readdirSync(this.inbox)
      .filter((name) => !known.has(name))
      .map((name) => ({ name, mtimeMs: lstatSync(join(this.inbox, name)).mtimeMs }))
      .sort(byArrival);
  }

  drop(mtimeSec: number): void {
    // Names in no relation to the mtimes: ties and reversals both happen.
    const name = `${((this.serial++ * 7919) % 1000).toString().padStart(3, '0')}-${this.serial}.pdf`;
    const path = join(this.inbox, name);
    writeFileSync(path, 'x');
    utimesSync(path, this.base + mtimeSec, this.base + mtimeSec);
    this.dropped.add(name);
    noteEvent(this.state, KIND, name);
    this.checkHeardInOrder(name);
  }

  /** A file tracked as it is heard of goes after every file on disk: none may be waiting untracked. */
  private checkHeardInOrder(name: string): void {
    if (!this.state.candidates[KIND].has(name)) return;
    expect(
      this.untracked().map((f) => f.name),
      `${name} tracked as heard of while files wait beyond the window`,
    ).toEqual([]);
  }

  touch(pick: number, mtimeSec: number): void {
    const waiting = this.untracked();
    if (waiting.length === 0) return;
    const file = waiting[pick % waiting.length]!;
    utimesSync(join(this.inbox, file.name), this.base + mtimeSec, this.base + mtimeSec);
    noteEvent(this.state, KIND, file.name);
    this.checkHeardInOrder(file.name);
  }

  /** A waiting file removed by hand (its event heard). */
  remove(pick: number): void {
    const waiting = this.untracked();
    if (waiting.length === 0) return;
    const file = waiting[pick % waiting.length]!;
    rmSync(join(this.inbox, file.name));
    this.dropped.delete(file.name);
    noteEvent(this.state, KIND, file.name);
  }

  /** A refill or listing, checked: what it brought in is the oldest of what waited, in order. */
  async checked(fill: (state: InboxState, kind: typeof KIND) => Promise<void>): Promise<void> {
    const before = this.untracked();
    const knownBefore = new Set(this.state.candidates[KIND].keys());
    const reserveBefore = this.state.reserves[KIND];
    if (reserveBefore !== null) this.refillsWithReserve += 1;
    await fill(this.state, KIND);
    const reserveAfter = this.state.reserves[KIND];
    if (reserveAfter !== null && reserveAfter !== reserveBefore) this.listingsWithReserve += 1;
    const brought = [...this.state.candidates[KIND].keys()].filter((name) => !knownBefore.has(name));
    expect(brought, 'the files brought into the window are the oldest that waited').toEqual(before.slice(0, brought.length).map((f) => f.name));
    expect(this.state.candidates[KIND].size).toBeLessThanOrEqual(WINDOW);
    if (before.length > 0 && knownBefore.size < WINDOW) expect(brought.length, 'a refill with room and files waiting brings one in').toBeGreaterThan(0);
  }

  /**
   * One claim pass as claim-pass.ts makes it: the half-drained refill, `claims` claims, the drained
   * refill. With `lateEvents`, the event of each claim's own move out of the inbox is heard after
   * the claim ended (as for a file refused straight to failed/, whose move is its claim's last step).
   */
  async pass(claims: number, lateEvents = false): Promise<void> {
    const queue = this.state.candidates[KIND];
    if (this.state.isOverflowing[KIND] && queue.size <= WINDOW / 2) await this.checked(refillWindow);
    const moved: string[] = [];
    for (const name of [...queue.keys()].slice(0, claims)) {
      queue.delete(name);
      // A candidate whose file is gone (tracked by its own move's late event) is dropped, as a claim drops it.
      if (!existsSync(join(this.inbox, name))) continue;
      rmSync(join(this.inbox, name));
      this.claimed.push(name);
      moved.push(name);
    }
    if (lateEvents) for (const name of moved) noteEvent(this.state, KIND, name);
    if (queue.size === 0) await this.checked(refillWindow);
  }
}

/** Runs `work` on a fresh inbox folder, removed afterwards. */
async function inRun(work: (run: Run) => Promise<void>): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'inbox-reserve-'));
  try {
    await work(new Run(root));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

describe('the inbox window refilled from a listing’s reserve', () => {
  it('brings in the oldest waiting files after any interleaving, and every file is claimed once', async () => {
    let refillsWithReserve = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 80 }), async (ops) => {
        await inRun(async (run) => {
          await run.checked(scanInbox);
          for (const op of ops) {
            if (op.op === 'drop') run.drop(op.mtimeSec);
            else if (op.op === 'burst') for (const mtimeSec of op.mtimesSec) run.drop(mtimeSec);
            else if (op.op === 'touch') run.touch(op.pick, op.mtimeSec);
            else if (op.op === 'rescan') await run.checked(scanInbox);
            else if (op.op === 'remove') run.remove(op.pick);
            else await run.pass(op.claims, op.lateEvents);
          }
          // Drained: every file dropped is claimed, each once, with no listing but the passes' own.
          for (let passes = 0; readdirSync(run.inbox).length > 0; passes += 1) {
            expect(passes, 'the inbox drains').toBeLessThan(run.dropped.size + 10);
            await run.pass(WINDOW, true);
          }
          expect([...run.claimed].sort()).toEqual([...run.dropped].sort());
          expect(new Set(run.claimed).size).toBe(run.claimed.length);
          refillsWithReserve += run.refillsWithReserve;
        });
      }),
      { numRuns: 300 },
    );
    // The property reached the case it is about (a generator that never builds a backlog beyond
    // the window would pass it with nothing checked).
    expect(refillsWithReserve).toBeGreaterThan(100);
  });

  it('lists a backlog beyond the window once for every five windows of it while nothing new arrives', () =>
    inRun(async (run) => {
      for (let i = 0; i < 24 * WINDOW; i += 1) run.drop(i % 5);
      // Events heard while the window had room: 2 tracked, 46 turned away; a listing finds them
      // once the window has room.
      await run.checked(scanInbox);
      // Each claim's own move heard after it ended: names of files gone, not changes to list for.
      while (readdirSync(run.inbox).length > 0) await run.pass(WINDOW, true);
      expect(run.claimed).toHaveLength(24 * WINDOW);
      // The 46 files beyond the window: listed 5 times (each listing takes 2 into the window and
      // keeps 8 in its reserve: 10, 10, 10, 10, then the last 6), where listing at every refill
      // took 23 listings.
      expect(run.listingsWithReserve).toBe(5);
    }));

  it('a file heard of while files wait beyond the reserve waits for them, however the reserve runs out', () =>
    inRun(async (run) => {
      // 2 tracked, 13 waiting: a listing keeps 8 in its reserve, 3 (mtime 5) wait beyond it.
      for (let i = 0; i < 15; i += 1) run.drop(5);
      await run.pass(WINDOW);
      expect(run.state.reserves[KIND]?.hasMoreBeyond).toBe(true);
      // Two refills from the reserve, then a newer file: taken after the 3 beyond, not before them.
      await run.pass(WINDOW);
      await run.pass(WINDOW);
      run.drop(8);
      const newest = [...run.dropped].at(-1);
      while (readdirSync(run.inbox).length > 0) await run.pass(1);
      expect(run.claimed.at(-1)).toBe(newest);
    }));

  it('a reserve run out with files still beyond it: a file heard of next is not tracked ahead of them', () =>
    inRun(async (run) => {
      for (let i = 0; i < 15; i += 1) run.drop(5);
      await run.pass(WINDOW); // the listing: 2 tracked, 8 kept, 3 beyond
      for (let i = 0; i < 4; i += 1) await run.pass(WINDOW); // the reserve's 8 taken
      expect(run.state.reserves[KIND]).toBeNull();
      await run.pass(1); // room in the window
      run.drop(0); // checked in drop(): turned away, not tracked while 3 files wait
      while (readdirSync(run.inbox).length > 0) await run.pass(1);
      expect(run.claimed).toHaveLength(16);
    }));
});
