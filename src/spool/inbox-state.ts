/**
 * What the watcher knows of its inboxes: each file seen and not yet claimed (a candidate), with the
 * size and mtime last seen and since when they have stayed the same. The claim passes (claim-pass.ts)
 * read it; inbox events (inbox-events.ts) and listings (`scanInbox`) write it.
 *
 * At most `spool.inboxWindow` files of one inbox are tracked (the window): a candidate costs ~150 B
 * of heap, and a flood held back by back-pressure kept ~90,000 of them (BENCHMARKS.md, issue 23).
 * Files beyond the window wait on disk, untracked; while any do, new arrivals are not tracked either
 * (they queue behind them), and a listing takes the oldest of them, mtime then name, as the window
 * drains. So an inbox is taken in arrival order (the order its files were heard of) while its files
 * fit the window, and in mtime order (then name) for those that waited beyond it.
 *
 * A listing also keeps, beyond the window's room, the next oldest files it found (the reserve, up to
 * RESERVE_WINDOWS windows of them), and the window's next refills take from it without listing the
 * inbox again (`refillWindow`). Without it a backlog of n files beyond the window was listed, and
 * each of its files lstat'ed, at every refill: ~n²/(2·window) lstats (a backlog of 100,000 labels:
 * 2.5 million; BENCHMARKS.md, issue 46). What changed in the inbox since the listing began is what
 * its events name: a file that arrives or changes raises one, and while the inbox overflows the
 * window turns it away and notes its name (`heard`). A refill lstat's those names first: a file gone
 * (a claim's own move, a file removed) leaves the reserve; one older than the reserve's newest
 * enters it in its place in the order (a file copied in with its old mtime still goes before newer
 * ones); a newer one waits beyond it, for the next listing. More names than a window's worth, or an
 * overflowed inotify queue (inbox-events.ts), and the inbox is listed again.
 */
import { opendir } from 'node:fs/promises';
import { join } from 'node:path';
import type { SpoolKind } from '../store/keys.js';
import { isIgnoredName } from '../validate/spool-name.js';
import type { ClaimDeps } from './claim.js';
import { spoolDiskRecoveries } from './disk-state.js';
import { diskOf, fileCallsOf } from './file-calls.js';
import { byArrival, oldestFiles, type ListedFile } from './oldest-files.js';

export interface WatcherDeps extends ClaimDeps {
  /** Unfinished items of the kind fed by this inbox. */
  backlog(kind: SpoolKind): Promise<number>;
  maxQueued: number;
}

export interface Candidate {
  size: number;
  mtimeMs: number;
  stableSince: number;
  /** Claims of it that failed on a full spool disk in a row, and when it may be tried again. */
  fullFailures?: number;
  retryAt?: number;
  /** When a claim first found it may not read the file (permission denied), and how often since. */
  unreadableSince?: number;
  unreadableFailures?: number;
  /** Claims of it that a folder's permissions refused in a row (its move into .inflight/, its report in failed/). */
  deniedFailures?: number;
}

export interface InboxState {
  deps: WatcherDeps;
  /** Per kind, in arrival order (Map keeps insertion order); at most `window` of them. */
  candidates: Record<SpoolKind, Map<string, Candidate>>;
  /** Files of one inbox tracked at most (spool.inboxWindow). */
  window: number;
  /** Per kind: files wait in the inbox beyond the window, untracked; a listing finds them. */
  isOverflowing: Record<SpoolKind, boolean>;
  /** Per kind, files turned away by the window so far (a listing under way then has not seen them all). */
  turnedAway: Record<SpoolKind, number>;
  /** Kinds whose queue is full (back-pressure): one line when it starts, one when it ends. */
  throttled: Set<SpoolKind>;
  /** Files claimed since the inbox was last listed (a drained flood lists it again). */
  claimedSinceScan: Record<SpoolKind, number>;
  /** The spool disk's recoveries as last seen: a new one ends every full-disk backoff. */
  recoveriesSeen: number;
  /** Per kind, what the last listing found beyond the window's room (null: nothing kept). */
  reserves: Record<SpoolKind, Reserve | null>;
  /**
   * Per kind, the names of files the window turned away since the last listing began (null: more
   * than a window's worth; the next refill lists the inbox).
   */
  heard: Record<SpoolKind, Set<string> | null>;
}

/** The next oldest untracked files a listing found, for the window's next refills. */
interface Reserve {
  /** Oldest first (mtime, then name); taken from the front. */
  files: ListedFile[];
  /** Untracked files were left out beyond the reserve, each newer than `newest`. */
  hasMoreBeyond: boolean;
  /** The newest file the listing kept: what the files beyond it are newer than. */
  newest: ListedFile;
}

/** Files listed between two turns of the event loop (a local disk's lstat is synchronous). */
const LISTED_PER_TURN = 1024;
/** A listing keeps up to this many windows of files beyond the window's room (~120 B of heap a file). */
const RESERVE_WINDOWS = 4;

export function createInboxState(deps: WatcherDeps): InboxState {
  return {
    deps,
    candidates: { labels: new Map(), cte: new Map(), events: new Map() },
    window: deps.spool.inboxWindow,
    isOverflowing: { labels: false, cte: false, events: false },
    turnedAway: { labels: 0, cte: 0, events: 0 },
    throttled: new Set(),
    claimedSinceScan: { labels: 0, cte: 0, events: 0 },
    recoveriesSeen: spoolDiskRecoveries(),
    reserves: { labels: null, cte: null, events: null },
    heard: { labels: new Set(), cte: new Set(), events: new Set() },
  };
}

/** Whether a file heard of may be tracked: the window has room and no file waits beyond it. Else it is left on disk, its name noted. */
function mayTrack(state: InboxState, kind: SpoolKind, name: string): boolean {
  if (!state.isOverflowing[kind] && state.candidates[kind].size < state.window) return true;
  state.isOverflowing[kind] = true;
  state.turnedAway[kind] += 1;
  noteHeard(state, kind, name);
  return false;
}

function noteHeard(state: InboxState, kind: SpoolKind, name: string): void {
  const heard = state.heard[kind];
  if (heard === null) return;
  heard.add(name);
  if (heard.size > state.window) state.heard[kind] = null;
}

/** A file seen with this size and mtime: a new candidate, or one whose quiet period starts again if they changed. */
export function observe(state: InboxState, kind: SpoolKind, name: string, size: number, mtimeMs: number): void {
  if (isIgnoredName(name)) return;
  const known = state.candidates[kind].get(name);
  if (known === undefined && !mayTrack(state, kind, name)) return;
  track(state, kind, name, size, mtimeMs, known);
}

function track(state: InboxState, kind: SpoolKind, name: string, size: number, mtimeMs: number, known: Candidate | undefined): void {
  const now = state.deps.clock.now();
  if (known === undefined) state.candidates[kind].set(name, { size, mtimeMs, stableSince: now });
  else if (known.size !== size || known.mtimeMs !== mtimeMs) Object.assign(known, { size, mtimeMs, stableSince: now });
}

/**
 * An inbox event (inotify, via fs.watch) only (re)starts the file's quiet period: every write to
 * a file in the inbox raises an event, so writeStableMs without one means no write in that time.
 * Its size and mtime become unknown (-1): the claim, instead of comparing them with a stat of
 * ours, then also requires the file's own mtime to be writeStableMs old (a guard against events
 * lost to an inotify queue overflow). No lstat per event: under a flood those lstats, each a
 * round trip through libuv's thread pool, were a third of the watcher's file operations.
 */
export function noteEvent(state: InboxState, kind: SpoolKind, name: string): void {
  if (isIgnoredName(name)) return;
  const known = state.candidates[kind].get(name);
  if (known === undefined && !mayTrack(state, kind, name)) return;
  const now = state.deps.clock.now();
  if (known === undefined) state.candidates[kind].set(name, { size: -1, mtimeMs: -1, stableSince: now });
  else Object.assign(known, { size: -1, mtimeMs: -1, stableSince: now });
}

/**
 * Lists an inbox: of the files not yet tracked, the oldest (mtime, then name) become candidates, as
 * many as the window has room for, and the next oldest are kept in its reserve; the rest stay on
 * disk, untracked, for a later listing. The listing is read as it comes (opendir) and holds at most
 * the window's room and the reserve, not the whole inbox; a full window reads it only until one
 * untracked file is met.
 */
export async function scanInbox(state: InboxState, kind: SpoolKind): Promise<void> {
  const inbox = state.deps.paths.inbox(kind);
  const known = state.candidates[kind];
  const turnedAwayBefore = state.turnedAway[kind];
  // Files turned away from here on are looked at again by the next refill (the listing may miss them).
  const heardBefore = state.heard[kind];
  state.heard[kind] = new Set();
  const room = state.window - known.size;
  const oldest = oldestFiles(Math.max(0, room) + RESERVE_WINDOWS * state.window);
  const lstatOf = fileCallsOf(diskOf(state.deps.spool)).lstat;
  let listed = 0;
  let isWindowFull = false;
  try {
    for await (const entry of await opendir(inbox, { bufferSize: 256 })) {
      if (isIgnoredName(entry.name) || known.has(entry.name)) continue;
      if (room <= 0) {
        isWindowFull = true;
        break;
      }
      const stat = await lstatOf(join(inbox, entry.name)).catch(() => null);
      if (stat !== null) oldest.offer({ name: entry.name, size: stat.size, mtimeMs: stat.mtimeMs });
      if (++listed % LISTED_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  } catch (error) {
    // A listing that failed (a share gone away) lost the names heard of before it: the next refill lists.
    state.heard[kind] = null;
    throw error;
  }
  if (isWindowFull) {
    // Nothing was listed: a reserve kept before stays, with every name heard of since its listing.
    const heardSince = state.heard[kind];
    state.heard[kind] = heardBefore;
    if (heardSince === null) state.heard[kind] = null;
    else for (const name of heardSince) noteHeard(state, kind, name);
    state.isOverflowing[kind] = true;
    return;
  }
  const kept = oldest.inOrder();
  for (const file of kept.splice(0, Math.max(0, room))) trackListed(state, kind, file);
  const newest = kept.at(-1);
  state.reserves[kind] = newest === undefined ? null : { files: kept, hasMoreBeyond: oldest.leftOut() > 0, newest };
  state.isOverflowing[kind] = kept.length > 0 || oldest.leftOut() > 0 || state.turnedAway[kind] !== turnedAwayBefore;
}

/**
 * Fills the window's room with the oldest untracked files: from the reserve of the last listing,
 * brought up to date with the files heard of since (lstat'ed by name), or else by listing the inbox again.
 */
export async function refillWindow(state: InboxState, kind: SpoolKind): Promise<void> {
  const reserve = state.reserves[kind];
  const heard = state.heard[kind];
  if (reserve === null || heard === null) {
    await scanInbox(state, kind);
    return;
  }
  const room = state.window - state.candidates[kind].size;
  if (room <= 0) return;
  if (heard.size > 0) await takeHeard(state, kind, reserve, heard);
  for (const file of reserve.files.splice(0, room)) trackListed(state, kind, file);
  // Still kept, or replaced by a listing that ran meanwhile (a periodic rescan): that one stands.
  if (reserve.files.length > 0 || state.reserves[kind] !== reserve) return;
  state.reserves[kind] = null;
  // Files heard of while their names were being looked at wait for the next refill: a listing.
  state.isOverflowing[kind] = reserve.hasMoreBeyond || state.heard[kind]?.size !== 0;
}

/** Brings the reserve up to date with the files turned away since its listing began. */
async function takeHeard(state: InboxState, kind: SpoolKind, reserve: Reserve, heard: Set<string>): Promise<void> {
  const names = new Set(heard);
  heard.clear();
  const files = reserve.files.filter((file) => !names.has(file.name));
  const inbox = state.deps.paths.inbox(kind);
  const lstatOf = fileCallsOf(diskOf(state.deps.spool)).lstat;
  for (const name of names) {
    if (state.candidates[kind].has(name)) continue;
    const stat = await lstatOf(join(inbox, name)).catch(() => null);
    // Gone (a claim's own move out of the inbox, a file removed), or not a file's name any more.
    if (stat === null) continue;
    const file = { name, size: stat.size, mtimeMs: stat.mtimeMs };
    // Newer than every file the listing kept, while files it left out wait beyond: one of them.
    if (!reserve.hasMoreBeyond || byArrival(file, reserve.newest) < 0) files.push(file);
  }
  files.sort(byArrival);
  const limit = RESERVE_WINDOWS * state.window;
  if (files.length > limit) {
    reserve.hasMoreBeyond = true;
    reserve.newest = files[limit - 1]!;
    files.length = limit;
  }
  reserve.files = files;
}

/** A file a listing picked: tracked if the window still has room (events may have filled it meanwhile). */
function trackListed(state: InboxState, kind: SpoolKind, file: ListedFile): void {
  const known = state.candidates[kind].get(file.name);
  if (known === undefined && state.candidates[kind].size >= state.window) {
    state.turnedAway[kind] += 1;
    noteHeard(state, kind, file.name);
    return;
  }
  track(state, kind, file.name, file.size, file.mtimeMs, known);
}
