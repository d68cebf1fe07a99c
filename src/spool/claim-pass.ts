/**
 * One claim pass over an inbox: claim, in arrival order and as room in the kind's queue allows,
 * every candidate whose size and mtime were last seen to change at least writeStableMs ago. No
 * lstat here: each inbox event already stat'ed the file, and the claim compares a fresh lstat
 * (before and after its read) with what was seen — a file that changed unseen is 'changed', stat'ed
 * once more and waits again. (Stat'ing every candidate on every tick cost ~5 lstats per file at
 * writeStableMs 100, and up to room + 64 lstats a tick under a flood.) Claims run CLAIMS_AT_ONCE at
 * a time (and within CLAIM_BYTES_AT_ONCE), each starting as soon as one ends (no batch waits for
 * its slowest claim).
 */
import { isRedisUnavailable, redisRecoveries } from '../store/redis-health.js';
import { lstat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { noteClaimsMoveAgain, noteClaimsRefused } from './claims-refused.js';
import { loopTurn } from '../loop-turn.js';
import { SPOOL_KINDS, type SpoolKind } from '../store/keys.js';
import { isChecksRestart } from '../validate/pool/check-pool.js';
import { claimFile, refuseUnreadable } from './claim.js';
import { FULL_RETRY_FIRST_MS, FULL_RETRY_MAX_MS, isDiskFullError, spoolDiskRecoveries } from './disk-state.js';
import { observe, refillWindow, type Candidate, type InboxState } from './inbox-state.js';

/**
 * Claims at once, and the file bytes they may hold together (one larger file still goes through
 * alone). A claim mostly waits (file system, Redis round trips), so many overlap; each holds its
 * bytes, their base64 or parsed XML and a pdf-lib document until queued, hence the byte bound.
 * (Ingest bench, 2,000 files: 32 at once ~1,130 µs of daemon CPU a file, 8 at once ~1,300 µs; the
 * memory bench's flood peak did not differ beyond its noise. With synchronous local reads and
 * batched queueing, 20,000 files: 128 at once ~285–335 µs a file, 32 at once ~320–350 µs, within
 * the noise of a loaded machine; peak RSS the same.)
 */
const CLAIMS_AT_ONCE = 32;
const CLAIM_BYTES_AT_ONCE = 16 * 1024 * 1024;

/** The claims of one pass in progress: the next to start, and what those running hold. */
interface Slots {
  next: number;
  bytes: number;
  running: number;
  waiting: Array<() => void>;
}

export async function claimPass(state: InboxState, kind: SpoolKind): Promise<void> {
  const queue = state.candidates[kind];
  // Files wait beyond the window: once it is half drained, the oldest of them come into it (from
  // the last listing's reserve, or a new listing).
  if (state.isOverflowing[kind] && queue.size <= state.window / 2) await refillWindow(state, kind);
  if (queue.size === 0) return;
  const room = await roomIn(state, kind);
  if (room <= 0) return;
  endBackoffsAfterRecovery(state);
  const claimed = await claimAll(state, kind, readyToClaim(state, kind, room));
  // A flood can overflow the inotify queue (16,384 events by default), which drops events without
  // a word. Once a flood is drained, list the inbox again rather than wait for the periodic rescan
  // (a 20,000-file drop left ~1,000 files waiting for it). The inbox is about empty then: cheap. A
  // window drained while files still wait beyond it is refilled from the last listing's reserve
  // while that holds (an overflowed inotify queue lists the inbox anyway: inbox-events.ts).
  state.claimedSinceScan[kind] += claimed;
  if (queue.size === 0 && state.claimedSinceScan[kind] >= CLAIMS_AT_ONCE) {
    state.claimedSinceScan[kind] = 0;
    await refillWindow(state, kind);
  }
}

/** Room in the kind's queue (back-pressure: none while it holds maxQueued unfinished items). */
async function roomIn(state: InboxState, kind: SpoolKind): Promise<number> {
  const { deps, throttled } = state;
  const room = deps.maxQueued - (await deps.backlog(kind));
  if (room <= 0) {
    const waitingInInbox = state.candidates[kind].size;
    const isMoreInInbox = state.isOverflowing[kind];
    if (!throttled.has(kind)) deps.logger.warn({ kind, waitingInInbox, isMoreInInbox, maxQueued: deps.maxQueued }, 'back-pressure: queue full, files wait in the inbox');
    throttled.add(kind);
    return room;
  }
  if (throttled.delete(kind)) deps.logger.info({ kind }, 'back-pressure released');
  return room;
}

/** The disk has room again: what was backing off from it goes now, not at the end of its backoff. */
/** The spool's disk has room again, or Redis takes writes again: files backing off are claimed at once. */
function endBackoffsAfterRecovery(state: InboxState): void {
  const recoveries = spoolDiskRecoveries() + redisRecoveries();
  if (recoveries === state.recoveriesSeen) return;
  state.recoveriesSeen = recoveries;
  for (const each of SPOOL_KINDS) for (const candidate of state.candidates[each].values()) Object.assign(candidate, { retryAt: undefined, fullFailures: undefined });
}

/** Up to `room` candidates, in arrival order, quiet for writeStableMs and not backing off. */
function readyToClaim(state: InboxState, kind: SpoolKind, room: number): Array<[string, Candidate]> {
  const { deps } = state;
  const now = deps.clock.now();
  const ready: Array<[string, Candidate]> = [];
  for (const [name, candidate] of state.candidates[kind]) {
    if (ready.length >= room) break;
    if (now - candidate.stableSince >= deps.spool.writeStableMs && (candidate.retryAt ?? 0) <= now) ready.push([name, candidate]);
  }
  return ready;
}

/** Claims `ready`, CLAIMS_AT_ONCE at a time within CLAIM_BYTES_AT_ONCE; returns how many were started. */
async function claimAll(state: InboxState, kind: SpoolKind, ready: Array<[string, Candidate]>): Promise<number> {
  const slots: Slots = { next: 0, bytes: 0, running: 0, waiting: [] };
  await Promise.all(Array.from({ length: Math.min(CLAIMS_AT_ONCE, ready.length) }, () => claimNext(state, kind, ready, slots)));
  return slots.next;
}

/** One of the concurrent claimers: takes the next ready file while the byte bound allows. */
async function claimNext(state: InboxState, kind: SpoolKind, ready: Array<[string, Candidate]>, slots: Slots): Promise<void> {
  while (slots.next < ready.length) {
    const [name, candidate] = ready[slots.next]!;
    const bytes = Math.max(0, candidate.size);
    if (slots.running > 0 && slots.bytes + bytes > CLAIM_BYTES_AT_ONCE) {
      await new Promise<void>((resolve) => slots.waiting.push(resolve));
      continue;
    }
    slots.next += 1;
    slots.bytes += bytes;
    slots.running += 1;
    try {
      // A claim's read and check are synchronous for a small file on a local disk, and claims
      // resolved together run on in one chain: the loop turns between them (src/loop-turn.ts).
      await loopTurn();
      await claimOne(state, kind, name, candidate);
    } finally {
      slots.bytes -= bytes;
      slots.running -= 1;
      const woken = slots.waiting;
      slots.waiting = [];
      for (const wake of woken) wake();
    }
  }
}

/** The wait before the next look at a file a permission refused, after `failures` in a row: 1, 2, 4… s, at most 16 s. */
const permissionRetryMs = (failures: number): number => Math.min(1_000 * 2 ** (failures - 1), 16_000);

function isPermissionDenied(error: unknown): error is NodeJS.ErrnoException {
  const { code } = error as NodeJS.ErrnoException;
  return code === 'EACCES' || code === 'EPERM';
}

/** The spool's file system is mounted read-only (a volume marked so, or ext4 remounted read-only after a disk error). */
function isReadOnly(error: unknown): error is NodeJS.ErrnoException {
  return (error as NodeJS.ErrnoException).code === 'EROFS';
}

/** Permission denied on opening the file itself (not on a folder: a move that may not be made is no fault of the file). */
function isUnreadable(error: unknown, path: string): error is NodeJS.ErrnoException {
  const { syscall, path: where } = error as NodeJS.ErrnoException;
  return isPermissionDenied(error) && syscall === 'open' && where === path;
}

/**
 * A file this process may not read: its writer may still be setting its permissions (some write
 * under 0600, then chmod), so it is looked at again after 1, 2, 4… s (a warning the first time, not a
 * line every look), and refused to failed/ once `spool.unreadableRefuseMs` (a minute) passed
 * (SPOOL_UNREADABLE: the report says who owns it and who we are). True when it left the inbox.
 */
async function onUnreadable(state: InboxState, kind: SpoolKind, name: string, candidate: Candidate, error: NodeJS.ErrnoException): Promise<boolean> {
  const { deps } = state;
  const now = deps.clock.now();
  candidate.unreadableSince ??= now;
  candidate.unreadableFailures = (candidate.unreadableFailures ?? 0) + 1;
  const refuseMs = deps.spool.unreadableRefuseMs;
  if (now - candidate.unreadableSince >= refuseMs) {
    await refuseUnreadable(deps, kind, name, error);
    return true;
  }
  if (candidate.unreadableFailures === 1) {
    deps.logger.warn({ kind, file: name, code: error.code, refusedInMs: refuseMs }, 'may not read the file (permission denied); looking again, then refusing it');
  }
  candidate.retryAt = now + permissionRetryMs(candidate.unreadableFailures);
  return false;
}

/**
 * A move this process may not make (a folder of the spool it may not write in: a deployment's
 * permissions; or a file system mounted read-only: EROFS): said once a kind, until a claim of it
 * works again (claims-refused.ts keeps which kinds); each file looked at again after 1, 2, 4… s (at
 * most 16 s apart), not at every pass — before, every file of the inbox logged an error with its
 * stack twice a second.
 */
function onFolderDenied(state: InboxState, kind: SpoolKind, name: string, candidate: Candidate, error: NodeJS.ErrnoException): void {
  const { deps } = state;
  candidate.deniedFailures = (candidate.deniedFailures ?? 0) + 1;
  candidate.retryAt = deps.clock.now() + permissionRetryMs(candidate.deniedFailures);
  const isFirst = noteClaimsRefused(kind, error.code ?? 'EACCES', typeof error.path === 'string' ? dirname(error.path) : null, deps.clock.now());
  if (!isFirst) return deps.logger.debug({ kind, file: name, err: error }, 'claim refused a move (permissions, or a read-only file system); will try again');
  deps.logger.warn(
    { kind, file: name, code: error.code, syscall: error.syscall, path: error.path, dest: (error as { dest?: string }).dest, uid: process.getuid?.() },
    isReadOnly(error)
      ? "may not move files out of the inbox: the spool's file system is read-only (mounted so, or remounted so after a disk error); files wait in the inbox until it may be written again"
      : 'may not move files out of the inbox (permission denied): give carrier-sync write access to the spool folders; files wait in the inbox meanwhile',
  );
}

/** Claims one file; a file that changed meanwhile waits again, a failed claim is tried again later. */
async function claimOne(state: InboxState, kind: SpoolKind, name: string, candidate: Candidate): Promise<void> {
  const { deps } = state;
  const queue = state.candidates[kind];
  const ended = deps.claimProgress?.begin();
  try {
    const result = await claimFile(deps, kind, name, candidate);
    if (result !== 'changed' && noteClaimsMoveAgain(kind)) deps.logger.info({ kind }, 'files move out of the inbox again');
    if (result !== 'changed') queue.delete(name);
    else {
      const stat = await lstat(join(deps.paths.inbox(kind), name)).catch(() => null);
      if (stat === null) queue.delete(name);
      else observe(state, kind, name, stat.size, stat.mtimeMs);
    }
  } catch (error) {
    if (isDiskFullError(error) || isRedisUnavailable(error)) {
      // Said once by the disk state or redis-health.ts (a warning); retried with a doubling backoff, not every writeStableMs.
      candidate.fullFailures = (candidate.fullFailures ?? 0) + 1;
      const retryInMs = Math.min(FULL_RETRY_FIRST_MS * 2 ** Math.min(candidate.fullFailures - 1, 20), FULL_RETRY_MAX_MS);
      candidate.retryAt = deps.clock.now() + retryInMs;
      const why = isDiskFullError(error) ? 'the spool disk is full' : 'Redis cannot take writes';
      deps.logger.debug({ kind, file: name, err: error, retryInMs }, `claim failed: ${why}; will try again`);
    } else if (isUnreadable(error, join(deps.paths.inbox(kind), name))) {
      if (await onUnreadable(state, kind, name, candidate, error)) queue.delete(name);
    } else if (isPermissionDenied(error) || isReadOnly(error)) {
      onFolderDenied(state, kind, name, candidate, error);
    } else if (isChecksRestart(error)) {
      // The watchdog restarted the check threads (a thread stopped answering): said once by its stall line.
      deps.logger.info({ kind, file: name }, 'claim interrupted by a restart of the file checks; will try again');
      candidate.stableSince = deps.clock.now();
    } else {
      deps.logger.error({ kind, file: name, err: error }, 'claim failed; will try again');
      candidate.stableSince = deps.clock.now();
    }
  } finally {
    ended?.();
  }
}
