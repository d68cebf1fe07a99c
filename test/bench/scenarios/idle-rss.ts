/**
 * idle-rss (issue 29 item 5): the resident memory of a daemon that has nothing to do, for a full
 * process (every role: watcher, worker, scheduler, http) and a worker-only one. Each is spawned on
 * its own (empty spool and queues, the sandbox as its API), left alone IDLE_AFTER_READY_MS after it
 * said it started (start-up's garbage collected, timers settled), then its RSS read every 250 ms
 * for 4 s: the figure is the median of those readings; the same again at rest, once V8's
 * memory reducer has run (support/rss.ts `AT_REST_AFTER_READY_MS`). The daemon runs with the bin's
 * shebang flags, as users launch it. Comparable (`--compare`): only the spawned daemon is measured.
 */
import { join } from 'node:path';
import { startSandbox } from '../../../src/sandbox/server.js';
import type { Role } from '../../../src/runtime/start.js';
import { spawnDaemon, type DaemonSetup } from '../support/daemon.js';
import { benchPrefix, cleanupPrefix } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { AT_REST_AFTER_READY_MS, windowRssMb } from '../support/rss.js';
import { round } from '../support/wait.js';

export const IDLE_RSS_TARGETS_MB = { full: 80, workerOnly: 65 } as const;
const IDLE_AFTER_READY_MS = 10_000;

async function idleRssMb(setup: DaemonSetup, roles: readonly Role[]): Promise<{ early: number; settled: number }> {
  const daemon = await spawnDaemon(setup, roles);
  try {
    await daemon.ready;
    const readyAt = Date.now();
    const early = await windowRssMb(daemon.pid, IDLE_AFTER_READY_MS, readyAt);
    const settled = await windowRssMb(daemon.pid, AT_REST_AFTER_READY_MS, readyAt);
    return { early, settled };
  } finally {
    await daemon.stop();
  }
}

export const idleRssScenario: Scenario = {
  name: 'idle-rss',
  isComparable: true,
  async run(env) {
    const sandbox = await startSandbox({});
    const prefix = benchPrefix('idle');
    const setup = (name: string): DaemonSetup => ({
      redisUrl: env.redisUrl,
      prefix,
      apiUrl: sandbox.url,
      carrierKey: Object.values(sandbox.keys.carriers)[0] ?? '',
      logFile: join(env.logDir, `idle-rss-${name}.log`),
    });
    try {
      const full = await idleRssMb(setup('full'), ['watcher', 'worker', 'scheduler', 'http']);
      const workerOnly = await idleRssMb(setup('worker'), ['worker']);
      return {
        figures: [
          {
            metric: 'idle RSS, full process (watcher, worker, scheduler, http)',
            value: round(full.early),
            unit: 'MB',
            reference: `median of 4 s of readings, ${IDLE_AFTER_READY_MS / 1000} s after it started; at rest (${AT_REST_AFTER_READY_MS / 1000} s after): ${round(full.settled)} MB`,
            target: `≤ ${IDLE_RSS_TARGETS_MB.full} MB (issue 29)`,
            isMet: full.early <= IDLE_RSS_TARGETS_MB.full,
          },
          {
            metric: 'idle RSS, worker-only process',
            value: round(workerOnly.early),
            unit: 'MB',
            reference: `at rest: ${round(workerOnly.settled)} MB`,
            target: `≤ ${IDLE_RSS_TARGETS_MB.workerOnly} MB (issue 29)`,
            isMet: workerOnly.early <= IDLE_RSS_TARGETS_MB.workerOnly,
          },
        ],
        notes: ['each process spawned alone on an empty spool and queues, the sandbox as its API; RSS from /proc/<pid>/status'],
        measures: {
          'idle RSS, full (MB)': full.early,
          'idle RSS, worker-only (MB)': workerOnly.early,
          'idle RSS at rest, full (MB)': full.settled,
          'idle RSS at rest, worker-only (MB)': workerOnly.settled,
        },
      };
    } finally {
      await sandbox.close();
      await cleanupPrefix(env.redisUrl, prefix);
    }
  },
};
