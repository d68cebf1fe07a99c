/**
 * What the watcher knows of its inboxes: each file seen and not yet claimed (a candidate), with the
 * size and mtime last seen and since when they have stayed the same. The claim passes (claim-pass.ts)
 * read it; inbox events (inbox-events.ts) and listings (`scanInbox`) write it.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { SpoolKind } from '../queue/keys.js';
import { isIgnoredName } from '../validate/spool-name.js';
import type { ClaimDeps } from './claim.js';
import { spoolDiskRecoveries } from './disk-state.js';

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
  /** Per kind, in arrival order (Map keeps insertion order). */
  candidates: Record<SpoolKind, Map<string, Candidate>>;
  /** Kinds whose queue is full (back-pressure): one line when it starts, one when it ends. */
  throttled: Set<SpoolKind>;
  /** Files claimed since the inbox was last listed (a drained flood lists it again). */
  claimedSinceScan: Record<SpoolKind, number>;
  /** The spool disk's recoveries as last seen: a new one ends every full-disk backoff. */
  recoveriesSeen: number;
}

export function createInboxState(deps: WatcherDeps): InboxState {
  return {
    deps,
    candidates: { labels: new Map(), cte: new Map(), events: new Map() },
    throttled: new Set(),
    claimedSinceScan: { labels: 0, cte: 0, events: 0 },
    recoveriesSeen: spoolDiskRecoveries(),
  };
}

/** A file seen with this size and mtime: a new candidate, or one whose quiet period starts again if they changed. */
export function observe(state: InboxState, kind: SpoolKind, name: string, size: number, mtimeMs: number): void {
  if (isIgnoredName(name)) return;
  const known = state.candidates[kind].get(name);
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
  const now = state.deps.clock.now();
  if (known === undefined) state.candidates[kind].set(name, { size: -1, mtimeMs: -1, stableSince: now });
  else Object.assign(known, { size: -1, mtimeMs: -1, stableSince: now });
}

/** Lists an inbox: files not yet known become candidates, oldest mtime first. */
export async function scanInbox(state: InboxState, kind: SpoolKind): Promise<void> {
  const { paths } = state.deps;
  const entries = await readdir(paths.inbox(kind));
  const found: Array<{ name: string; size: number; mtimeMs: number }> = [];
  for (const name of entries) {
    if (isIgnoredName(name) || state.candidates[kind].has(name)) continue;
    const stat = await lstat(join(paths.inbox(kind), name)).catch(() => null);
    if (stat !== null) found.push({ name, size: stat.size, mtimeMs: stat.mtimeMs });
  }
  found.sort((a, b) => a.mtimeMs - b.mtimeMs || a.name.localeCompare(b.name));
  for (const file of found) observe(state, kind, file.name, file.size, file.mtimeMs);
}
