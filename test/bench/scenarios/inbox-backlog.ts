/**
 * inbox-backlog: what the watcher's refills cost on a backlog beyond the window (src/spool/inbox-state.ts).
 * A backlog of files waits in an inbox (the bench's work folder), heard of while the window
 * (2,000, the default) was full; claims are played by taking the window's files out of the inbox,
 * and each claim's own move is heard of after it (as a refused file's is). The window is refilled
 * as claim-pass.ts refills it, two ways in the same run, alternating: a listing of the inbox at
 * every refill (what the watcher did before issue 46's thirteenth session) and `refillWindow` (a
 * listing's reserve of four windows, brought up to date with the files heard of since). The figure
 * is this process's CPU over the drain: the lstats of the listings, mostly.
 */
import { existsSync, mkdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInboxState, noteEvent, refillWindow, scanInbox, type InboxState, type WatcherDeps } from '../../../src/spool/inbox-state.js';
import { spoolPaths } from '../../../src/spool/paths.js';
import type { Figure, Scenario } from '../support/report.js';
import { round } from '../support/wait.js';

const WINDOW = 2000;

type Refill = (state: InboxState, kind: 'labels') => Promise<void>;

/** Drains a backlog of `files` through the refills; returns the CPU seconds the drain took. */
async function drain(root: string, files: number, refill: Refill): Promise<{ cpuS: number; wallS: number }> {
  rmSync(root, { recursive: true, force: true });
  const paths = spoolPaths(root);
  const inbox = paths.inbox('labels');
  mkdirSync(inbox, { recursive: true });
  const deps = { spool: { inboxWindow: WINDOW, usePolling: false }, paths, clock: { now: () => Date.now() } } as unknown as WatcherDeps;
  const state = createInboxState(deps);
  for (let i = 0; i < files; i += 1) {
    const name = `${i.toString(36).padStart(4, '0')}.pdf`;
    writeFileSync(join(inbox, name), 'x');
    noteEvent(state, 'labels', name);
  }
  const started = process.cpuUsage();
  const startedAt = performance.now();
  const queue = state.candidates.labels;
  for (let claimed = 0; ;) {
    if (state.isOverflowing.labels && queue.size <= WINDOW / 2) await refill(state, 'labels');
    const moved: string[] = [];
    for (const name of [...queue.keys()]) {
      queue.delete(name);
      // A name tracked by its own move's late event (the window had room) is gone: a claim drops it.
      if (!existsSync(join(inbox, name))) continue;
      unlinkSync(join(inbox, name));
      moved.push(name);
    }
    claimed += moved.length;
    for (const name of moved) noteEvent(state, 'labels', name);
    if (queue.size === 0) await refill(state, 'labels');
    if (queue.size === 0 && !state.isOverflowing.labels) {
      if (claimed !== files) throw new Error(`inbox-backlog: ${claimed} of ${files} files claimed`);
      break;
    }
  }
  const cpu = process.cpuUsage(started);
  return { cpuS: (cpu.user + cpu.system) / 1e6, wallS: (performance.now() - startedAt) / 1000 };
}

export const inboxBacklogScenario: Scenario = {
  name: 'inbox-backlog',
  async run(env) {
    const sizes = env.isQuick ? [20_000] : [20_000, 50_000];
    const root = join(env.workDir, 'inbox-backlog');
    const figures: Figure[] = [];
    const details: Record<string, unknown> = {};
    try {
      for (const files of sizes) {
        const listing: number[] = [];
        const reserve: number[] = [];
        for (let round = 0; round < 2; round += 1) {
          listing.push((await drain(root, files, scanInbox)).cpuS);
          reserve.push((await drain(root, files, refillWindow)).cpuS);
        }
        const [a, b] = [Math.min(...listing), Math.min(...reserve)];
        details[String(files)] = { listingCpuS: listing, reserveCpuS: reserve };
        figures.push({
          metric: `a backlog of ${files.toLocaleString('en-US')} files beyond the window (${WINDOW.toLocaleString('en-US')}): CPU of the claims' refills`,
          value: `${round(b, 2)} s`,
          unit: '',
          reference: `a listing at every refill: ${round(a, 2)} s (${round(b / a, 2)}×); each the lower of 2 runs, alternating; the claims' own unlinks included in both`,
        });
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    return {
      figures,
      notes: [
        'in the bench process, on the work folder’s file system; what a listing costs grows with the backlog, what the reserve costs with the files taken',
      ],
      details,
    };
  },
};
