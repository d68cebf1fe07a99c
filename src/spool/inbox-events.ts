/**
 * Hearing about inbox files between listings. Local disks: inotify (chokidar, before, listed the whole
 * inbox again and lstat'ed each entry on every change, so under a flood its stats filled libuv's
 * thread pool and the claims' own file operations waited behind them; ingest bench: ~40% of the CPU
 * in chokidar's readdirp, 220–270 files/s). Network shares, where inotify hears nothing: a poll of
 * the inboxes' names (`watchByPolling`).
 */
import { watch as watchDir, type FSWatcher as DirWatcher } from 'node:fs';
import { SPOOL_KINDS, type SpoolKind } from '../store/keys.js';
import { noteEvent, scanInbox, type InboxState } from './inbox-state.js';

/** Starts hearing inbox events; returns what stops it. */
export function watchInboxes(state: InboxState): () => Promise<void> {
  return state.deps.spool.usePolling ? watchByPolling(state) : watchByInotify(state);
}

function watchByInotify(state: InboxState): () => Promise<void> {
  const { paths, logger } = state.deps;
  const watchers: DirWatcher[] = SPOOL_KINDS.map((kind) =>
    watchDir(paths.inbox(kind), (_event, name) => {
      if (name === null) void scanInbox(state, kind).catch((error: unknown) => logger.error({ kind, err: error }, 'inbox scan failed'));
      else noteEvent(state, kind, name);
    }).on('error', (error) => logger.error({ kind, err: error }, 'inbox watcher error')),
  );
  return async () => {
    for (const dirWatcher of watchers) dirWatcher.close();
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
