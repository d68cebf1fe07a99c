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
 * 2.5 million; BENCHMARKS.md, issue 46). The reserve holds while no file of the inbox has been
 * turned away since its listing began: a file that arrives or changes meanwhile raises an event,
 * which the window turns away while the inbox overflows, and then the next refill lists again — so
 * a file dropped with an older mtime (copied with its times kept) still goes before newer ones.
 * Otherwise every untracked file beyond the reserve is newer than the reserve's newest: the order is
 * the listing's.
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
  /** Per kind, what the last listing found beyond the window's room (null: nothing kept). */
  reserves: Record<SpoolKind, Reserve | null>;
}

/** The next oldest untracked files a listing found, for the window's next refills. */
interface Reserve {
  /** Oldest first (mtime, then name); taken from the front. */
  files: ListedFile[];
  /** The inbox's turned-away count when the listing began: the reserve holds while it is unchanged. */
  turnedAway: number;
  /** Untracked files the listing left out beyond the reserve (newer than all of it). */
  hasMoreBeyond: boolean;
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
 * many as the window has room for, and the next oldest are kept in its reserve; the rest stay on
 * disk, untracked, for a later listing. The listing is read as it comes (opendir) and holds at most
 * the window's room and the reserve, not the whole inbox; a full window reads it only until one
 * untracked file is met.
 */
export async function scanInbox(state: InboxState, kind: SpoolKind): Promise<void> {
  const inbox = state.deps.paths.inbox(kind);
  const known = state.candidates[kind];
  const turnedAwayBefore = state.turnedAway[kind];
  const room = state.window - known.size;
  const oldest = oldestFiles(Math.max(0, room) + RESERVE_WINDOWS * state.window);
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
  if (isWindowFull) {
    // Nothing was listed: a reserve kept before still holds (or not) as it did.
    state.isOverflowing[kind] = true;
    return;
  }
  const found = oldest.inOrder();
  for (const file of found.slice(0, Math.max(0, room))) trackListed(state, kind, file);
  const reserve: Reserve = { files: found.slice(Math.max(0, room)), turnedAway: turnedAwayBefore, hasMoreBeyond: oldest.leftOut() > 0 };
  state.reserves[kind] = reserve.files.length > 0 ? reserve : null;
  state.isOverflowing[kind] = reserve.files.length > 0 || reserve.hasMoreBeyond || state.turnedAway[kind] !== turnedAwayBefore;
}

/**
 * Fills the window's room with the oldest untracked files: from the reserve of the last listing
 * while it holds (no file turned away since that listing began), else by listing the inbox again.
 */
export async function refillWindow(state: InboxState, kind: SpoolKind): Promise<void> {
  const reserve = state.reserves[kind];
  if (reserve === null || reserve.turnedAway !== state.turnedAway[kind]) {
    state.reserves[kind] = null;
    await scanInbox(state, kind);
    return;
  }
  const room = state.window - state.candidates[kind].size;
  if (room <= 0) return;
  const taken = reserve.files.slice(0, room);
  reserve.files = reserve.files.slice(taken.length);
  for (const file of taken) trackListed(state, kind, file);
  if (reserve.files.length > 0 && reserve.turnedAway === state.turnedAway[kind]) return;
  state.reserves[kind] = null;
  state.isOverflowing[kind] = reserve.files.length > 0 || reserve.hasMoreBeyond || state.turnedAway[kind] !== reserve.turnedAway;
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
