/**
 * Hearing about inbox files between listings. Local disks: inotify. chokidar is kept for polling
 * (network shares, where inotify sees nothing): on every change it lists the whole inbox again and
 * lstat's each entry, so under a flood its stats filled libuv's thread pool and the claims' own file
 * operations waited behind them (ingest bench: ~40% of the CPU in chokidar's readdirp, 220–270 files/s).
 */
import { watch as watchDir, type FSWatcher as DirWatcher } from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import { SPOOL_KINDS, type SpoolKind } from '../store/keys.js';
import { isIgnoredName } from '../validate/spool-name.js';
import { noteEvent, observe, scanInbox, type InboxState } from './inbox-state.js';

/** Starts hearing inbox events; returns what stops it. */
export async function watchInboxes(state: InboxState): Promise<() => Promise<void>> {
  return state.deps.spool.usePolling ? await watchByPolling(state) : watchByInotify(state);
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

async function watchByPolling(state: InboxState): Promise<() => Promise<void>> {
  const { paths, spool, logger } = state.deps;
  const watcher: FSWatcher = watch(
    SPOOL_KINDS.map((kind) => paths.inbox(kind)),
    { ignoreInitial: true, depth: 0, usePolling: true, interval: spool.pollIntervalMs, alwaysStat: true, ignored: (path) => isIgnoredName(path.slice(path.lastIndexOf('/') + 1)) },
  );
  const kindOf = (path: string): SpoolKind | undefined => SPOOL_KINDS.find((kind) => path.startsWith(`${paths.inbox(kind)}/`));
  const onFile = (path: string, stats?: { size: number; mtimeMs: number }): void => {
    const kind = kindOf(path);
    if (kind !== undefined) observe(state, kind, path.slice(path.lastIndexOf('/') + 1), stats?.size ?? -1, stats?.mtimeMs ?? -1);
  };
  watcher.on('add', onFile).on('change', onFile).on('addDir', onFile);
  watcher.on('unlink', (path) => {
    const kind = kindOf(path);
    if (kind !== undefined) state.candidates[kind].delete(path.slice(path.lastIndexOf('/') + 1));
  });
  watcher.on('error', (error) => logger.error({ err: error }, 'inbox watcher error'));
  // Files created while chokidar is still starting count as "initial" and raise no event: list the
  // inboxes only once it is ready, so nothing falls between the listing and the first event.
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return () => watcher.close();
}
