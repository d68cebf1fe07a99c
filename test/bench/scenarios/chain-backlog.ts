/**
 * chain-backlog (issue 23 item 3): deliveries with 4 collecting events each, queued behind a backlog
 * of 5,000 other events (one per delivery) that is kept at 5,000 or more while they go: the bench
 * tops it up as the worker drains it. Each chain delivery is queued on its own (one small file's
 * worth: its 4 events side by side), so its later events are taken while the first is on the wire
 * and park. Measured at the sandbox: the gap between a delivery's consecutive events, from the
 * answer to event k to the request for event k+1 (how long the woken event took to be taken and
 * sent). The daemon (worker role) runs in its own process; the sandbox answers at once, limits
 * lifted on both sides. Checked: each chain delivery's events in event_at order, each sent once.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createLogger } from '../../../src/log.js';
import { openContext } from '../../../src/runtime/context.js';
import type { SandboxRequest } from '../../../src/sandbox/request-log.js';
import { startSandbox } from '../../../src/sandbox/server.js';
import { loadBenchConfig, spawnDaemon, type DaemonSetup } from '../support/daemon.js';
import { enqueueLikeCli } from '../support/enqueue.js';
import { pastInstant } from '../support/inputs.js';
import { benchPrefix, cleanupPrefix } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { percentile, round, sleep } from '../support/wait.js';

const UNLIMITED = 1_000_000_000;
const BACKLOG = 5_000;
const TOP_UP = 500;
const EVENTS_PER_DELIVERY = 4;
/** Issue 23 item 3: the gap between a delivery's consecutive events, p50, with a 5,000-item backlog. */
export const CHAIN_GAP_P50_MAX_MS = 250;

export const chainBacklogScenario: Scenario = {
  name: 'chain-backlog',
  async run(env) {
    const chainCount = env.isQuick ? 10 : 40;
    const sandbox = await startSandbox({ ratePerMinute: UNLIMITED, autoCreateDeliveries: true });
    const prefix = benchPrefix('chain-backlog');
    const setup: DaemonSetup = {
      redisUrl: env.redisUrl,
      prefix,
      apiUrl: sandbox.url,
      carrierKey: Object.values(sandbox.keys.carriers)[0] ?? '',
      logFile: join(env.logDir, 'chain-backlog.log'),
      logFileLevel: 'warn',
      env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(UNLIMITED) },
    };
    const { config } = await loadBenchConfig(setup);
    const ctx = await openContext(config, createLogger({ level: 'silent' }), 'bench-chain-backlog');
    const queue = ctx.queues.items.collecting;
    let instant = 0;
    const backlogRows = (n: number): Array<{ delivery_id: string; event_at: string }> =>
      Array.from({ length: n }, () => ({ delivery_id: randomUUID(), event_at: pastInstant(instant++).toISOString() }));
    const chainIds = Array.from({ length: chainCount }, () => randomUUID());
    const chainSet = new Set<string>(chainIds);
    const daemon = await spawnDaemon(setup, ['worker']);
    try {
      await enqueueLikeCli(ctx.enqueueDeps, backlogRows(BACKLOG));
      for (const deliveryId of chainIds) {
        const rows = Array.from({ length: EVENTS_PER_DELIVERY }, (_, k) => ({ delivery_id: deliveryId, event_at: pastInstant(1_000_000 + k).toISOString() }));
        await enqueueLikeCli(ctx.enqueueDeps, rows);
      }
      await daemon.ready;
      const started = Date.now();
      // The backlog is kept at BACKLOG or more until every chain event was sent.
      const waiting: number[] = [];
      let toppedUp = 0;
      let chainRequests: SandboxRequest[] = [];
      const isDone = (): boolean => {
        chainRequests = sandbox.requests().filter((r) => r.endpoint === 'collecting' && chainSet.has(r.deliveryId ?? ''));
        return chainRequests.filter((r) => r.status === 200).length >= chainCount * EVENTS_PER_DELIVERY;
      };
      while (!isDone()) {
        if (Date.now() - started > 600_000) throw new Error('chain events not all sent in 10 minutes');
        const count = await queue.getWaitingCount();
        waiting.push(count);
        if (count < BACKLOG) {
          await enqueueLikeCli(ctx.enqueueDeps, backlogRows(TOP_UP));
          toppedUp += TOP_UP;
        } else await sleep(50);
      }
      const runMs = Date.now() - started;
      await sleep(500); // anything sent twice would show up now
      isDone();
      const chains = chainIds.map((id) => chainRequests.filter((r) => r.deliveryId === id).sort((a, b) => a.seq - b.seq));
      const inOrder = chains.filter(
        (requests) =>
          requests.length === EVENTS_PER_DELIVERY &&
          requests.every((r, i) => i === 0 || Date.parse(r.eventAt ?? '') > Date.parse(requests[i - 1]?.eventAt ?? '')),
      ).length;
      const overlaps = chains.flatMap((requests) => requests.slice(1).filter((r, i) => r.at < requests[i]!.at + requests[i]!.durationMs)).length;
      const gaps = chains.flatMap((requests) => requests.slice(1).map((r, i) => r.at - (requests[i]!.at + requests[i]!.durationMs)));
      const p50 = percentile(gaps, 50);
      const all = sandbox.requests().filter((r) => r.endpoint === 'collecting');
      const firstAt = Math.min(...all.map((r) => r.at));
      const lastAt = Math.max(...all.map((r) => r.at));
      const perSecond = (all.length * 1000) / Math.max(1, lastAt - firstAt);
      const isPassed = inOrder === chainCount && overlaps === 0;
      return {
        figures: [
          {
            metric: `gap between a delivery's consecutive events behind a ${BACKLOG.toLocaleString('en-US')}-event backlog (${gaps.length} gaps)`,
            value: `p50 ${Math.round(p50)} / p90 ${Math.round(percentile(gaps, 90))} / max ${Math.round(Math.max(...gaps))}`,
            unit: 'ms',
            reference: `the backlog drains at ${Math.round(perSecond)} events/s: one pass over ${BACKLOG.toLocaleString('en-US')} ≈ ${round(BACKLOG / perSecond, 1)} s`,
            target: `p50 ≤ ${CHAIN_GAP_P50_MAX_MS} ms (issue 23)`,
            isMet: p50 <= CHAIN_GAP_P50_MAX_MS,
          },
          {
            metric: 'chain deliveries: events in event_at order, one at a time, each sent once',
            value: `${inOrder} of ${chainCount}`,
            unit: '',
            reference: `requests overlapping the one before: ${overlaps}`,
            target: 'all',
            isMet: isPassed,
          },
        ],
        notes: [
          `${chainCount} deliveries × ${EVENTS_PER_DELIVERY} events, each delivery queued on its own behind the backlog; backlog topped up by ${TOP_UP} whenever the wait list fell under ${BACKLOG} (${toppedUp} added; wait list p10/p50 over the run ${percentile(waiting, 10)}/${percentile(waiting, 50)}); ${all.length} collecting requests in ${round(runMs / 1000, 1)} s; daemon worker role in its own process, concurrency ${config.delivery.concurrency}; error log lines ${daemon.errorCount()}`,
        ],
        details: {
          chainCount,
          gapsMs: gaps,
          waiting: { p10: percentile(waiting, 10), p50: percentile(waiting, 50) },
          toppedUp,
          runMs,
          perSecond,
          inOrder,
          overlaps,
        },
      };
    } finally {
      await daemon.stop();
      await ctx.closers.closeAll();
      await sandbox.close();
      await cleanupPrefix(env.redisUrl, prefix);
    }
  },
};
