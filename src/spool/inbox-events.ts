/**
 * Hearing about inbox files between listings. Local disks: inotify (chokidar, before, listed the whole
 * inbox again and lstat'ed each entry on every change, so under a flood its stats filled libuv's
 * thread pool and the claims' own file operations waited behind them; ingest bench: ~40% of the CPU
 * in chokidar's readdirp, 220–270 files/s). Network shares, where inotify hears nothing: a poll of
 * the inboxes' names (`watchByPolling`).
 */
import { statSync, watch as watchDir, type FSWatcher as DirWatcher, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { SPOOL_KINDS, type SpoolKind } from '../store/keys.js';
import { noteEvent, scanInbox, type InboxState } from './inbox-state.js';

/** Hearing an inbox's events; `check` makes sure each inbox watched is the folder at its path now. */
export interface InboxEvents {
  close(): Promise<void>;
  check(): Promise<void>;
}

/** Starts hearing inbox events. */
export function watchInboxes(state: InboxState): InboxEvents {
  return state.deps.spool.usePolling ? { close: watchByPolling(state), check: async () => undefined } : watchByInotify(state);
}

/**
 * A folder is told by its device, inode and birth time: a folder removed and made again often gets
 * the inode just freed (ext4, tmpfs), not the birth time (0 where the file system keeps none; then a
 * check that saw the folder missing is what tells).
 */
interface FolderIdentity {
  dev: number;
  ino: number;
  birthtimeMs: number;
}

const identityOf = ({ dev, ino, birthtimeMs }: Stats): FolderIdentity => ({ dev, ino, birthtimeMs });
const isSameFolder = (a: FolderIdentity, b: FolderIdentity): boolean => a.dev === b.dev && a.ino === b.ino && a.birthtimeMs === b.birthtimeMs;

/** When a removed inbox folder is looked for again: soon once, then every second until it is back. */
const MISSING_INBOX_FIRST_RETRY_MS = 100;
const MISSING_INBOX_RETRY_MS = 1_000;

/**
 * inotify follows a folder, not its path: an inbox moved away (`mv labels labels.old && mkdir labels`)
 * or removed and made again is heard no more, and the files dropped into the new folder would wait
 * for the periodic rescan, each. So the folder's own events (its name, from its watch) and every
 * rescan (`check`) compare the folder at the inbox's path with the one watched; another one is
 * watched in its place and listed, with a warning. A folder removed and not made again is looked for
 * every second, and said once (a second look first: a rotation is seen between its `mv` and its
 * `mkdir`); it is not made again by the daemon (on an unmounted disk that would make it on the disk
 * beneath).
 */
function watchByInotify(state: InboxState): InboxEvents {
  const { paths, logger } = state.deps;
  const watched = new Map<SpoolKind, { watcher: DirWatcher; identity: FolderIdentity }>();
  const checks = new Map<SpoolKind, Promise<void>>();
  const missing = new Map<SpoolKind, { timer: NodeJS.Timeout; looks: number }>();
  let isClosed = false;

  const arm = (kind: SpoolKind, found: Stats): void => {
    const dir = paths.inbox(kind);
    const watcher = watchDir(dir, (_event, name) => {
      if (name === basename(dir)) void check(kind);
      if (name === null) void scanInbox(state, kind).catch((error: unknown) => logger.error({ kind, err: error }, 'inbox scan failed'));
      else noteEvent(state, kind, name);
    }).on('error', (error) => {
      logger.error({ kind, err: error }, 'inbox watcher error');
      void check(kind);
    });
    watched.set(kind, { watcher, identity: identityOf(found) });
  };
  const checkNow = async (kind: SpoolKind): Promise<void> => {
    const dir = paths.inbox(kind);
    const current = watched.get(kind);
    const found = await stat(dir).catch(() => null);
    if (isClosed) return;
    if (found === null || !found.isDirectory()) {
      // A rotation (`mv` then `mkdir`) is seen between its two steps: said only when a second look finds nothing.
      const looks = (missing.get(kind)?.looks ?? 0) + 1;
      if (looks === 2) logger.warn({ kind, inbox: dir }, 'inbox folder removed: files dropped at its path are seen once it is there again');
      clearTimeout(missing.get(kind)?.timer);
      const timer = setTimeout(() => void check(kind), looks === 1 ? MISSING_INBOX_FIRST_RETRY_MS : MISSING_INBOX_RETRY_MS).unref();
      missing.set(kind, { timer, looks });
      return;
    }
    const wasMissing = missing.has(kind);
    clearTimeout(missing.get(kind)?.timer);
    missing.delete(kind);
    if (current !== undefined && !wasMissing && isSameFolder(current.identity, identityOf(found))) return;
    current?.watcher.close();
    arm(kind, found);
    if (current !== undefined) logger.warn({ kind, inbox: dir, wasMissing }, 'inbox folder replaced: watching the folder at its path now');
    await scanInbox(state, kind);
  };
  // One check an inbox at a time: two at once would watch the new folder twice.
  const check = (kind: SpoolKind): Promise<void> => {
    const next = (checks.get(kind) ?? Promise.resolve()).then(() => checkNow(kind)).catch((error: unknown) => logger.error({ kind, err: error }, 'inbox check failed'));
    checks.set(kind, next);
    return next;
  };
  for (const kind of SPOOL_KINDS) arm(kind, statSync(paths.inbox(kind)));
  return {
    check: async () => {
      await Promise.all(SPOOL_KINDS.map((kind) => check(kind)));
    },
    close: async () => {
      isClosed = true;
      for (const { timer } of missing.values()) clearTimeout(timer);
      for (const { watcher } of watched.values()) watcher.close();
      await Promise.all(checks.values());
    },
  };
}

/**
 * Polling (network shares, where inotify hears nothing): every pollIntervalMs each inbox is listed
 * as at start (`scanInbox`): the names not tracked yet are lstat'ed and tracked oldest first, as many
 * as the window has room for, the rest kept in its reserve. A tracked name is not looked at again
 * (its quiet period is not restarted at every poll): a file still being written is told by its
 * claim, which compares a fresh lstat with the one the listing took, and with another after its
 * read (claim.ts), and waits again. While an inbox overflows its poll lists nothing: the window's
 * refills list it when they need to. So an idle poll is one listing of the names, and a file is
 * lstat'ed by a poll once.
 * Before (issue 46, thirteenth session) chokidar polled: a fs.watchFile a file, every file in the
 * inbox stat'ed every interval — 20,000 files waiting cost 43 % of a core and 157 MB of RSS doing
 * nothing, and the window's bound on memory did not hold.
 */
function watchByPolling(state: InboxState): () => Promise<void> {
  const { spool, logger } = state.deps;
  let isClosed = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  // An inbox that cannot be listed (a share gone away) is said once, and again when it is back.
  const failing = new Set<SpoolKind>();
  const pollAll = async (): Promise<void> => {
    for (const kind of SPOOL_KINDS) {
      try {
        await pollInbox(state, kind);
        if (failing.delete(kind)) logger.info({ kind }, 'inbox listed again');
      } catch (error) {
        if (!failing.has(kind)) logger.warn({ kind, err: error }, 'inbox poll failed; will try again every poll');
        failing.add(kind);
      }
    }
  };
  const schedule = (): void => {
    if (isClosed) return;
    timer = setTimeout(() => {
      running = pollAll().finally(schedule);
    }, spool.pollIntervalMs);
    timer.unref();
  };
  schedule();
  return async () => {
    isClosed = true;
    clearTimeout(timer);
    await running;
  };
}

/** One poll of an inbox: a listing, unless files already wait beyond the window. */
async function pollInbox(state: InboxState, kind: SpoolKind): Promise<void> {
  if (!state.isOverflowing[kind]) await scanInbox(state, kind);
}
