/**
 * goodput: a backlog of collecting events (queued through the CLI's enqueue path), the API's real
 * 60 s window, and 1 then 4 worker processes (`node dist/src/main.js start --roles worker`) sharing
 * one Redis prefix and one key against an in-process sandbox whose limit equals the daemon's.
 * Everything is read from the sandbox's own request log (`at` = receipt time):
 *  - the largest count in any sliding 60 s window (must not exceed the limit) and the 429s (none);
 *  - sustained goodput: each request slot is reused once it leaves the daemon's window (60 s plus a
 *    1 s margin), so in steady state `limit` requests go out per reuse interval. The interval is
 *    measured as t(limit + k) − t(k) over the reused slots seen in the run; goodput = 60 s / interval.
 *  - the first window's fill: requests in the 60 s from the first one, over the limit.
 * The quick variant runs 20 s at 600/min: no slot is reused, so only the partial first window is shown.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createLogger } from '../../../src/log.js';
import { openContext } from '../../../src/runtime/context.js';
import { startSandbox } from '../../../src/sandbox/server.js';
import { loadBenchConfig, spawnDaemon, type DaemonSetup, type SpawnedDaemon } from '../support/daemon.js';
import { enqueueLikeCli } from '../support/enqueue.js';
import { pastInstant } from '../support/inputs.js';
import { benchPrefix, cleanupPrefix } from '../support/redis.js';
import type { Figure, Scenario } from '../support/report.js';
import { round, sleep, waitFor } from '../support/wait.js';
import { maxInWindow, windowCounts } from '../support/window.js';

const WINDOW_MS = 60_000;
/** Issue 14: sustained goodput at least 99.5% of the limit. */
export const GOODPUT_MIN = 0.995;

interface RunFigures {
  processes: number;
  requests: number;
  status429: number;
  maxWindow: number;
  firstWindow: number;
  /** From the first request to the limit-th one (how fast the backlog fills a window). */
  fillMs: number | null;
  reuseIntervalMs: number | null;
  reusedSlots: number;
  windowMin: number | null;
  windowMean: number | null;
  errors: number;
}

async function runOnce(env: Parameters<Scenario['run']>[0], processes: number, limit: number, runMs: number): Promise<RunFigures> {
  const sandbox = await startSandbox({ ratePerMinute: limit, autoCreateDeliveries: true });
  const prefix = benchPrefix(`goodput${processes}`);
  const setup: DaemonSetup = {
    redisUrl: env.redisUrl,
    prefix,
    apiUrl: sandbox.url,
    carrierKey: Object.values(sandbox.keys.carriers)[0] ?? '',
    logFile: join(env.logDir, `goodput-${processes}.log`),
    env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(limit), CARRIER_SYNC_GRACE_MS: '2000' },
  };
  const daemons: SpawnedDaemon[] = [];
  try {
    const { config } = await loadBenchConfig(setup);
    const ctx = await openContext(config, createLogger({ level: 'silent' }), 'bench-goodput');
    try {
      const backlog = Math.ceil((limit * 3 * runMs) / WINDOW_MS) + limit;
      const rows = Array.from({ length: backlog }, (_, i) => ({ delivery_id: randomUUID(), event_at: pastInstant(i).toISOString() }));
      await enqueueLikeCli(ctx.enqueueDeps, rows);
    } finally {
      await ctx.closers.closeAll();
    }
    for (let i = 0; i < processes; i += 1) daemons.push(await spawnDaemon(setup, ['worker']));
    await Promise.all(daemons.map((d) => d.ready));
    await waitFor(() => sandbox.requests().length > 0, { timeoutMs: 30_000, what: 'the first request' });
    const firstAt = sandbox.requests()[0]!.at;
    await sleep(Math.max(0, firstAt + runMs - Date.now()));
    await Promise.all(daemons.map((d) => d.stop(10_000)));
    const log = sandbox.requests().filter((r) => r.endpoint === 'collecting');
    const inRun = log.filter((r) => r.at <= firstAt + runMs);
    const times = inRun
      .filter((r) => r.status !== 429)
      .map((r) => r.at)
      .sort((a, b) => a - b);
    const counts = windowCounts(times, WINDOW_MS, firstAt - 1, firstAt + runMs, 100);
    const reuses: number[] = [];
    for (let k = 0; k + limit < times.length; k += 1) reuses.push((times[k + limit] ?? 0) - (times[k] ?? 0));
    return {
      processes,
      requests: inRun.length,
      status429: log.filter((r) => r.status === 429).length,
      maxWindow: maxInWindow(
        log.filter((r) => r.status !== 429).map((r) => r.at),
        WINDOW_MS,
      ),
      firstWindow: times.filter((t) => t < firstAt + WINDOW_MS).length,
      fillMs: times.length >= limit ? (times[limit - 1] ?? 0) - firstAt : null,
      reuseIntervalMs: reuses.length === 0 ? null : reuses.reduce((a, b) => a + b, 0) / reuses.length,
      reusedSlots: reuses.length,
      windowMin: counts.length === 0 ? null : Math.min(...counts),
      windowMean: counts.length === 0 ? null : counts.reduce((a, b) => a + b, 0) / counts.length,
      errors: daemons.reduce((sum, d) => sum + d.errorCount(), 0),
    };
  } finally {
    await Promise.all(daemons.map((d) => d.stop(2000)));
    await sandbox.close();
    await cleanupPrefix(env.redisUrl, prefix);
  }
}

export const goodputScenario: Scenario = {
  name: 'goodput',
  async run(env) {
    const limit = env.isQuick ? 600 : 1200;
    const runMs = env.isQuick ? 20_000 : 70_000;
    const runs: RunFigures[] = [];
    for (const processes of [1, 4]) runs.push(await runOnce(env, processes, limit, runMs));
    const figures: Figure[] = [];
    for (const run of runs) {
      const label = `${run.processes} worker process${run.processes === 1 ? '' : 'es'}`;
      if (run.reuseIntervalMs !== null) {
        const goodput = WINDOW_MS / run.reuseIntervalMs;
        figures.push({
          metric: `${label}: sustained goodput`,
          value: round(goodput * 100, 1),
          unit: `% of ${limit}/min`,
          reference: `${Math.round(goodput * limit)} req/min; slot reuse every ${round(run.reuseIntervalMs / 1000, 2)} s over ${run.reusedSlots} reused slots`,
          target: `≥ ${GOODPUT_MIN * 100}% (issue 14)`,
          isMet: goodput >= GOODPUT_MIN,
        });
      }
      figures.push({
        metric: `${label}: first 60 s window${run.reuseIntervalMs === null ? ` (partial: ${runMs / 1000} s run)` : ''}`,
        value: run.firstWindow,
        unit: `requests (${round((run.firstWindow / limit) * 100, 1)}% of ${limit})`,
        reference: run.fillMs === null ? 'limit not reached' : `the ${limit} requests went out in ${round(run.fillMs / 1000, 2)} s`,
      });
      figures.push({
        metric: `${label}: max in any 60 s window / 429s`,
        value: `${run.maxWindow} / ${run.status429}`,
        unit: '',
        target: `≤ ${limit} / 0`,
        isMet: run.maxWindow <= limit && run.status429 === 0,
      });
    }
    return {
      figures,
      notes: [
        `limit ${limit}/min at the sandbox and in the daemon (CARRIER_SYNC_RATE_LIMIT_PER_MINUTE); real 60 s window; run ${runMs / 1000} s from the first request; backlog queued beforehand through the CLI's enqueue path, one event per delivery`,
        'the daemon counts its window as 61 s (rateWindowMarginMs 1000), so its steady state is at most 60/61 = 98.4% of the limit; the first window can be filled completely because the backlog is sent as fast as the limiter allows; a 60 s window that starts just after a burst can hold almost nothing (the slots come back 61 s after they were taken), which is why goodput is measured on slot reuse rather than on single windows',
        ...runs.map((r) => `${r.processes} process(es): ${r.requests} requests in the run, ${r.errors} error log lines`),
      ],
      details: { limit, runMs, runs },
    };
  },
};
