/**
 * Watching the inboxes. inotify (a poll of the inboxes' names on network shares) tells us a name
 * appeared or changed; we decide when its write has finished ourselves. A file is read once its
 * size and mtime have stayed the same for `writeStableMs`, whether it was there at start, arrived
 * later, or was copied slowly onto a share.
 *
 * Back-pressure: a kind whose queue already holds `maxQueued` unfinished items takes no new files;
 * they wait in the inbox, in arrival order (mtime order for files found by a scan), until room frees.
 * At most `spool.inboxWindow` of them are tracked; those beyond wait untracked and are taken oldest
 * mtime first, then by name (inbox-state.ts).
 *
 * The parts: what is known of each inbox (inbox-state.ts), hearing about its files (inbox-events.ts),
 * one claim pass over it (claim-pass.ts); this file starts them and runs the passes.
 */
import { isRedisUnavailable } from '../store/redis-health.js';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SPOOL_KINDS, type SpoolKind } from '../store/keys.js';
import type { SpoolPaths } from './paths.js';
import { claimPass } from './claim-pass.js';
import { forgetClaimsRefused } from './claims-refused.js';
import { watchInboxes } from './inbox-events.js';
import { createInboxState, scanInbox, type InboxState, type WatcherDeps } from './inbox-state.js';

export interface SpoolWatcher {
  /** Lists the inboxes again (safety net for missed watcher events). */
  rescan(): Promise<void>;
  /** Files tracked in each inbox and not yet claimed (at most the window; more may wait beyond it). */
  pending(): Record<SpoolKind, number>;
  close(): Promise<void>;
}

/** The loop of claim passes: stopped by `stop` (no new pass), the one under way finishes (`settled`). */
interface Passes {
  stop(): void;
  settled(): Promise<void>;
}

export async function startSpoolWatcher(deps: WatcherDeps): Promise<SpoolWatcher> {
  const { paths, spool, logger } = deps;
  await makeSpoolDirs(paths);
  const state = createInboxState(deps);
  const events = watchInboxes(state);
  // The folders watched are checked first: a rescan is also what notices an inbox replaced unheard.
  const rescan = async (): Promise<void> => {
    await events.check();
    // An inbox folder that is gone was said by the check (once), not at every rescan.
    await Promise.all(SPOOL_KINDS.map((kind) => scanInbox(state, kind).catch(unlessMissing)));
  };
  for (const kind of SPOOL_KINDS) await scanInbox(state, kind);
  const passes = startPasses(state);
  const rescanTimer = setInterval(() => void rescan().catch((error: unknown) => logger.error({ err: error }, 'rescan failed')), spool.rescanIntervalMs);
  rescanTimer.unref();

  logger.info({ spool: paths.root, inboxes: SPOOL_KINDS.map((kind) => paths.inbox(kind)), polling: spool.usePolling }, 'watching the spool');
  let closing: Promise<void> | undefined;
  return {
    rescan,
    pending: () => ({ labels: state.candidates.labels.size, cte: state.candidates.cte.size, events: state.candidates.events.size }),
    close() {
      closing ??= (async () => {
        passes.stop();
        clearInterval(rescanTimer);
        await events.close();
        await passes.settled();
        forgetClaimsRefused();
      })();
      return closing;
    },
  };
}

function unlessMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}

async function makeSpoolDirs(paths: SpoolPaths): Promise<void> {
  for (const kind of SPOOL_KINDS) {
    for (const dir of [paths.inbox(kind), paths.inflight(kind), paths.failed(kind), join(paths.root, 'archive', kind)]) await mkdir(dir, { recursive: true });
  }
}

/** A claim pass over every inbox each tick (writeStableMs/5, within 10–100 ms); one kind's failure does not stop the others. */
function startPasses(state: InboxState): Passes {
  const { deps } = state;
  const tickMs = Math.min(100, Math.max(10, Math.floor(deps.spool.writeStableMs / 5)));
  let isClosed = false;
  let running: Promise<void> = Promise.resolve();
  // While Redis is away every pass fails the same way: say so once, and again when it is back.
  let failingSince: number | null = null;
  const onPassError = (kind: SpoolKind, error: unknown): void => {
    if (isRedisUnavailable(error)) deps.logger.debug({ kind, err: error }, 'inbox pass failed: Redis cannot take writes now');
    else if (failingSince === null) deps.logger.error({ kind, err: error }, 'inbox pass failed; files stay in the inbox until it works again');
    failingSince ??= deps.clock.now();
  };
  const loop = async (): Promise<void> => {
    while (!isClosed) {
      let hasFailed = false;
      running = Promise.all(
        SPOOL_KINDS.map((kind) =>
          claimPass(state, kind).catch((error: unknown) => {
            hasFailed = true;
            onPassError(kind, error);
          }),
        ),
      ).then(() => undefined);
      await running;
      if (!hasFailed && failingSince !== null) {
        deps.logger.info({ failedForMs: deps.clock.now() - failingSince }, 'inbox passes work again');
        failingSince = null;
      }
      await new Promise((resolve) => setTimeout(resolve, tickMs).unref());
    }
  };
  void loop();
  return {
    stop: () => {
      isClosed = true;
    },
    settled: () => running,
  };
}
