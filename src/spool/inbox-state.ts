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
 */
import { opendir } from 'node:fs/promises';
import { join } from 'node:path';
import type { SpoolKind } from '../store/keys.js';
import { isIgnoredName } from '../validate/spool-name.js';
import type { ClaimDeps } from './claim.js';
import { spoolDiskRecoveries } from './disk-state.js';
import { diskOf, fileCallsOf } from './file-calls.js';
import { oldestFiles, type ListedFile } from './oldest-files.js';

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
}

/** Files listed between two turns of the event loop (a local disk's lstat is synchronous). */
const LISTED_PER_TURN = 1024;

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
  };
}

/** Whether a file heard of may be tracked: the window has room and no file waits beyond it. Else it is left on disk. */
function mayTrack(state: InboxState, kind: SpoolKind): boolean {
  if (!state.isOverflowing[kind] && state.candidates[kind].size < state.window) return true;
  state.isOverflowing[kind] = true;
  state.turnedAway[kind] += 1;
  return false;
}

/** A file seen with this size and mtime: a new candidate, or one whose quiet period starts again if they changed. */
export function observe(state: InboxState, kind: SpoolKind, name: string, size: number, mtimeMs: number): void {
  if (isIgnoredName(name)) return;
  const known = state.candidates[kind].get(name);
  if (known === undefined && !mayTrack(state, kind)) return;
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
  if (known === undefined && !mayTrack(state, kind)) return;
  const now = state.deps.clock.now();
  if (known === undefined) state.candidates[kind].set(name, { size: -1, mtimeMs: -1, stableSince: now });
  else Object.assign(known, { size: -1, mtimeMs: -1, stableSince: now });
}

/**
 * Lists an inbox: of the files not yet tracked, the oldest (mtime, then name) become candidates, as
 * many as the window has room for; the rest stay on disk, untracked, for a later listing. The listing
 * is read as it comes (opendir) and holds at most the window's room of files, not the whole inbox; a
 * full window reads it only until one untracked file is met.
 */
export async function scanInbox(state: InboxState, kind: SpoolKind): Promise<void> {
  const inbox = state.deps.paths.inbox(kind);
  const known = state.candidates[kind];
  const turnedAwayBefore = state.turnedAway[kind];
  const room = state.window - known.size;
  const oldest = oldestFiles(Math.max(0, room));
  const lstatOf = fileCallsOf(diskOf(state.deps.spool)).lstat;
  let listed = 0;
  let isWindowFull = false;
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
  for (const file of oldest.inOrder()) trackListed(state, kind, file);
  state.isOverflowing[kind] = isWindowFull || oldest.leftOut() > 0 || state.turnedAway[kind] !== turnedAwayBefore;
}

/** A file a listing picked: tracked if the window still has room (events may have filled it meanwhile). */
function trackListed(state: InboxState, kind: SpoolKind, file: ListedFile): void {
  const known = state.candidates[kind].get(file.name);
  if (known === undefined && state.candidates[kind].size >= state.window) {
    state.turnedAway[kind] += 1;
    return;
  }
  track(state, kind, file.name, file.size, file.mtimeMs, known);
}
