/**
 * Watching the inboxes. inotify (chokidar's polling on network shares) tells us a name appeared or
 * changed; we decide when its write has finished ourselves, because chokidar's awaitWriteFinish
 * compares only sizes and is skipped for files found by the initial scan. A file is read once its
 * size and mtime have stayed the same for `writeStableMs`, whether it was there at start, arrived
 * later, or was copied slowly onto a share.
 *
 * Back-pressure: a kind whose queue already holds `maxQueued` unfinished items takes no new files;
 * they wait in the inbox, in arrival order (mtime order for files found by a scan), until room frees.
 */
import { watch as watchDir, type FSWatcher as DirWatcher } from 'node:fs';
import { mkdir, readdir, lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { SPOOL_KINDS, type SpoolKind } from '../queue/keys.js';
import { isIgnoredName } from '../validate/spool-name.js';
import { claimFile, type ClaimDeps } from './claim.js';
import { FULL_RETRY_FIRST_MS, FULL_RETRY_MAX_MS, isDiskFullError, spoolDiskRecoveries } from './disk-state.js';

export interface WatcherDeps extends ClaimDeps {
  /** Unfinished items of the kind fed by this inbox. */
  backlog(kind: SpoolKind): Promise<number>;
  maxQueued: number;
}

export interface SpoolWatcher {
  /** Lists the inboxes again (safety net for missed watcher events). */
  rescan(): Promise<void>;
  /** Files seen in each inbox and not yet claimed. */
  pending(): Record<SpoolKind, number>;
  close(): Promise<void>;
}

interface Candidate {
  size: number;
  mtimeMs: number;
  stableSince: number;
  /** Claims of it that failed on a full spool disk in a row, and when it may be tried again. */
  fullFailures?: number;
  retryAt?: number;
}

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

export async function startSpoolWatcher(deps: WatcherDeps): Promise<SpoolWatcher> {
  const { paths, spool, logger } = deps;
  for (const kind of SPOOL_KINDS) {
    for (const dir of [paths.inbox(kind), paths.inflight(kind), paths.failed(kind), join(paths.root, 'archive', kind)]) await mkdir(dir, { recursive: true });
  }
  const candidates: Record<SpoolKind, Map<string, Candidate>> = { labels: new Map(), cte: new Map(), events: new Map() };
  const throttled = new Set<SpoolKind>();
  const claimedSinceScan: Record<SpoolKind, number> = { labels: 0, cte: 0, events: 0 };
  let recoveriesSeen = spoolDiskRecoveries();
  let isClosed = false;

  const observe = (kind: SpoolKind, name: string, size: number, mtimeMs: number): void => {
    if (isIgnoredName(name)) return;
    const known = candidates[kind].get(name);
    const now = deps.clock.now();
    if (known === undefined) candidates[kind].set(name, { size, mtimeMs, stableSince: now });
    else if (known.size !== size || known.mtimeMs !== mtimeMs) Object.assign(known, { size, mtimeMs, stableSince: now });
  };

  async function scan(kind: SpoolKind): Promise<void> {
    const entries = await readdir(paths.inbox(kind));
    const found: Array<{ name: string; size: number; mtimeMs: number }> = [];
    for (const name of entries) {
      if (isIgnoredName(name) || candidates[kind].has(name)) continue;
      const stat = await lstat(join(paths.inbox(kind), name)).catch(() => null);
      if (stat !== null) found.push({ name, size: stat.size, mtimeMs: stat.mtimeMs });
    }
    found.sort((a, b) => a.mtimeMs - b.mtimeMs || a.name.localeCompare(b.name));
    for (const file of found) observe(kind, file.name, file.size, file.mtimeMs);
  }

  /**
   * One pass over a kind: claim, in arrival order and as room allows, every candidate whose size
   * and mtime were last seen to change at least writeStableMs ago. No lstat here: each inbox event
   * already stat'ed the file, and the claim compares a fresh lstat (before and after its read) with
   * what was seen — a file that changed unseen is 'changed', stat'ed once more and waits again.
   * (Stat'ing every candidate on every tick cost ~5 lstats per file at writeStableMs 100, and up to
   * room + 64 lstats a tick under a flood.) Claims run CLAIMS_AT_ONCE at a time (and within
   * CLAIM_BYTES_AT_ONCE), each starting as soon as one ends (no batch waits for its slowest claim).
   */
  async function pump(kind: SpoolKind): Promise<void> {
    const queue = candidates[kind];
    if (queue.size === 0) return;
    const room = deps.maxQueued - (await deps.backlog(kind));
    if (room <= 0) {
      if (!throttled.has(kind)) logger.warn({ kind, waitingInInbox: queue.size, maxQueued: deps.maxQueued }, 'back-pressure: queue full, files wait in the inbox');
      throttled.add(kind);
      return;
    }
    if (throttled.delete(kind)) logger.info({ kind }, 'back-pressure released');
    // The disk has room again: what was backing off from it goes now, not at the end of its backoff.
    if (spoolDiskRecoveries() !== recoveriesSeen) {
      recoveriesSeen = spoolDiskRecoveries();
      for (const each of SPOOL_KINDS) for (const candidate of candidates[each].values()) Object.assign(candidate, { retryAt: undefined, fullFailures: undefined });
    }
    const now = deps.clock.now();
    const ready: Array<[string, Candidate]> = [];
    for (const [name, candidate] of queue) {
      if (ready.length >= room) break;
      if (now - candidate.stableSince >= spool.writeStableMs && (candidate.retryAt ?? 0) <= now) ready.push([name, candidate]);
    }
    let next = 0;
    let bytesInClaims = 0;
    let running = 0;
    let waiting: Array<() => void> = [];
    const claimNext = async (): Promise<void> => {
      while (next < ready.length) {
        const [name, candidate] = ready[next]!;
        const bytes = Math.max(0, candidate.size);
        if (running > 0 && bytesInClaims + bytes > CLAIM_BYTES_AT_ONCE) {
          await new Promise<void>((resolve) => waiting.push(resolve));
          continue;
        }
        next += 1;
        bytesInClaims += bytes;
        running += 1;
        try {
          const result = await claimFile(deps, kind, name, candidate);
          if (result !== 'changed') queue.delete(name);
          else {
            const stat = await lstat(join(paths.inbox(kind), name)).catch(() => null);
            if (stat === null) queue.delete(name);
            else observe(kind, name, stat.size, stat.mtimeMs);
          }
        } catch (error) {
          if (isDiskFullError(error)) {
            // Said once by the disk state (a warning); retried with a doubling backoff, not every writeStableMs.
            candidate.fullFailures = (candidate.fullFailures ?? 0) + 1;
            const retryInMs = Math.min(FULL_RETRY_FIRST_MS * 2 ** Math.min(candidate.fullFailures - 1, 20), FULL_RETRY_MAX_MS);
            candidate.retryAt = deps.clock.now() + retryInMs;
            logger.debug({ kind, file: name, err: error, retryInMs }, 'claim failed: the spool disk is full; will try again');
          } else {
            logger.error({ kind, file: name, err: error }, 'claim failed; will try again');
            candidate.stableSince = deps.clock.now();
          }
        } finally {
          bytesInClaims -= bytes;
          running -= 1;
          const woken = waiting;
          waiting = [];
          for (const wake of woken) wake();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CLAIMS_AT_ONCE, ready.length) }, claimNext));
    // A flood can overflow the inotify queue (16,384 events by default), which drops events without
    // a word. Once a flood is drained, list the inbox again rather than wait for the periodic rescan
    // (a 20,000-file drop left ~1,000 files waiting for it). The inbox is about empty then: cheap.
    claimedSinceScan[kind] += next;
    if (queue.size === 0 && claimedSinceScan[kind] >= CLAIMS_AT_ONCE) {
      claimedSinceScan[kind] = 0;
      await scan(kind);
    }
  }

  /**
   * An inbox event (inotify, via fs.watch) only (re)starts the file's quiet period: every write to
   * a file in the inbox raises an event, so writeStableMs without one means no write in that time.
   * Its size and mtime become unknown (-1): the claim, instead of comparing them with a stat of
   * ours, then also requires the file's own mtime to be writeStableMs old (a guard against events
   * lost to an inotify queue overflow). No lstat per event: under a flood those lstats, each a
   * round trip through libuv's thread pool, were a third of the watcher's file operations.
   */
  const onEvent = (kind: SpoolKind, name: string): void => {
    if (isIgnoredName(name)) return;
    const known = candidates[kind].get(name);
    const now = deps.clock.now();
    if (known === undefined) candidates[kind].set(name, { size: -1, mtimeMs: -1, stableSince: now });
    else Object.assign(known, { size: -1, mtimeMs: -1, stableSince: now });
  };

  // Local disks: inotify. chokidar is kept for polling (network shares, where inotify sees nothing):
  // on every change it lists the whole inbox again and lstat's each entry, so under a flood its stats
  // filled libuv's thread pool and the claims' own file operations waited behind them (ingest bench:
  // ~40% of the CPU in chokidar's readdirp, 220–270 files/s).
  const closeEvents = spool.usePolling ? await watchByPolling() : watchByInotify();

  function watchByInotify(): () => Promise<void> {
    const watchers: DirWatcher[] = SPOOL_KINDS.map((kind) =>
      watchDir(paths.inbox(kind), (_event, name) => {
        if (name === null) void scan(kind).catch((error: unknown) => logger.error({ kind, err: error }, 'inbox scan failed'));
        else onEvent(kind, name);
      }).on('error', (error) => logger.error({ kind, err: error }, 'inbox watcher error')),
    );
    return async () => {
      for (const dirWatcher of watchers) dirWatcher.close();
    };
  }

  async function watchByPolling(): Promise<() => Promise<void>> {
    const watcher: FSWatcher = watch(
      SPOOL_KINDS.map((kind) => paths.inbox(kind)),
      { ignoreInitial: true, depth: 0, usePolling: true, interval: spool.pollIntervalMs, alwaysStat: true, ignored: (path) => isIgnoredName(path.slice(path.lastIndexOf('/') + 1)) },
    );
    const kindOf = (path: string): SpoolKind | undefined => SPOOL_KINDS.find((kind) => path.startsWith(`${paths.inbox(kind)}/`));
    const onFile = (path: string, stats?: { size: number; mtimeMs: number }): void => {
      const kind = kindOf(path);
      if (kind !== undefined) observe(kind, path.slice(path.lastIndexOf('/') + 1), stats?.size ?? -1, stats?.mtimeMs ?? -1);
    };
    watcher.on('add', onFile).on('change', onFile).on('addDir', onFile);
    watcher.on('unlink', (path) => {
      const kind = kindOf(path);
      if (kind !== undefined) candidates[kind].delete(path.slice(path.lastIndexOf('/') + 1));
    });
    watcher.on('error', (error) => logger.error({ err: error }, 'inbox watcher error'));
    // Files created while chokidar is still starting count as "initial" and raise no event: list the
    // inboxes only once it is ready, so nothing falls between the listing and the first event.
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    return () => watcher.close();
  }
  for (const kind of SPOOL_KINDS) await scan(kind);

  const tickMs = Math.min(100, Math.max(10, Math.floor(spool.writeStableMs / 5)));
  let running: Promise<void> = Promise.resolve();
  // While Redis is away every pass fails the same way: say so once, and again when it is back.
  let failingSince: number | null = null;
  const onPassError = (kind: SpoolKind, error: unknown): void => {
    if (failingSince === null) logger.error({ kind, err: error }, 'inbox pass failed; files stay in the inbox until it works again');
    failingSince ??= deps.clock.now();
  };
  const loop = async (): Promise<void> => {
    while (!isClosed) {
      let hasFailed = false;
      running = Promise.all(
        SPOOL_KINDS.map((kind) =>
          pump(kind).catch((error: unknown) => {
            hasFailed = true;
            onPassError(kind, error);
          }),
        ),
      ).then(() => undefined);
      await running;
      if (!hasFailed && failingSince !== null) {
        logger.info({ failedForMs: deps.clock.now() - failingSince }, 'inbox passes work again');
        failingSince = null;
      }
      await new Promise((resolve) => setTimeout(resolve, tickMs).unref());
    }
  };
  void loop();
  const rescanTimer = setInterval(() => void Promise.all(SPOOL_KINDS.map(scan)).catch((error: unknown) => logger.error({ err: error }, 'rescan failed')), spool.rescanIntervalMs);
  rescanTimer.unref();

  logger.info({ spool: paths.root, inboxes: SPOOL_KINDS.map((kind) => paths.inbox(kind)), polling: spool.usePolling }, 'watching the spool');
  let closing: Promise<void> | undefined;
  return {
    async rescan() {
      await Promise.all(SPOOL_KINDS.map(scan));
    },
    pending: () => ({ labels: candidates.labels.size, cte: candidates.cte.size, events: candidates.events.size }),
    close() {
      closing ??= (async () => {
        isClosed = true;
        clearInterval(rescanTimer);
        await closeEvents();
        await running;
      })();
      return closing;
    },
  };
}
