/**
 * push: N collecting events already queued, the limits lifted (sandbox 10^9/min, daemon
 * CARRIER_SYNC_RATE_LIMIT_PER_MINUTE 10^9), the daemon started with the worker role only. Per-item
 * cost = wall time from the first request to the last item finished, divided by N. References in
 * the same process and run, at the same concurrency: a raw BullMQ worker with a no-op processor
 * over N jobs of the same payload and job options, and a raw undici request loop to the sandbox.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { createLogger } from '../../../src/log.js';
import { itemJobOptions } from '../../../src/queue/queues.js';
import { collectingJobOf } from '../../../src/store/payloads.js';
import { openContext } from '../../../src/runtime/context.js';
import { startSandbox } from '../../../src/sandbox/server.js';
import { checkEventRecord } from '../../../src/validate/event-record.js';
import { cpuSeconds } from '../support/cpu.js';
import { loadBenchConfig, spawnDaemon, startInProcess, type DaemonSetup } from '../support/daemon.js';
import { enqueueLikeCli } from '../support/enqueue.js';
import { pastInstant } from '../support/inputs.js';
import { benchPrefix, cleanupPrefix } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { round, waitFor } from '../support/wait.js';

const UNLIMITED = 1_000_000_000;
/** Issue 14: the push cost of an item at most 1.5× a raw BullMQ no-op job. */
export const PUSH_COST_MAX_RATIO = 1.5;

/** Per-item wall time of a raw BullMQ worker with a no-op processor (the floor's first part). */
export async function bullmqNoop(redisUrl: string, n: number, concurrency: number, delivery: Parameters<typeof itemJobOptions>[0]): Promise<number> {
  const prefix = benchPrefix('push-ref');
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('collecting', { connection: redis, prefix, defaultJobOptions: itemJobOptions(delivery) });
  const receivedAt = new Date().toISOString();
  const jobs = Array.from({ length: n }, (_, i) => {
    const verdict = checkEventRecord({ delivery_id: randomUUID(), event_at: pastInstant(i).toISOString() });
    if (!verdict.ok) throw verdict.error;
    return {
      name: 'collecting',
      data: collectingJobOf(verdict.value, `cli:${randomUUID()}`, { source: 'cli' }, receivedAt),
      opts: { jobId: `collecting.ref.${i}` },
    };
  });
  for (let i = 0; i < jobs.length; i += 500) await queue.addBulk(jobs.slice(i, i + 500));
  let done = 0;
  let first = 0;
  let last = 0;
  const finished = new Promise<void>((resolve) => {
    const worker = new Worker(
      'collecting',
      async () => {
        if (first === 0) first = performance.now();
        return 'accepted';
      },
      { connection: redis, prefix, concurrency, autorun: false },
    );
    worker.on('completed', () => {
      done += 1;
      if (done === n) {
        last = performance.now();
        void worker.close().then(() => resolve());
      }
    });
    void worker.run();
  });
  await finished;
  await queue.close();
  redis.disconnect();
  await cleanupPrefix(redisUrl, prefix);
  return (last - first) / n;
}

/** Per-item wall time of a raw undici request loop to the sandbox (the floor's second part). */
export async function undiciLoop(url: string, key: string, n: number, concurrency: number): Promise<number> {
  const pool = new Pool(url, { connections: 16, connect: { keepAlive: true } });
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const response = await pool.request({
          path: '/v1/delivery/collecting',
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', 'x-service-carrier-key': key },
          body: JSON.stringify({ delivery_id: randomUUID(), event_at: pastInstant(i).toISOString() }),
        });
        await response.body.text();
        if (response.statusCode !== 200) failures += 1;
      }
    }),
  );
  const perItem = (performance.now() - started) / n;
  await pool.close();
  if (failures > 0) throw new Error(`undici reference: ${failures} requests did not get 200`);
  return perItem;
}

/**
 * The push path's CPU alone: `n` more events queued, a daemon with the worker role spawned as a
 * process of its own, its CPU (/proc) from the first request to the last event sent, per event.
 */
export async function spawnedCpuPerItem(
  ctx: Awaited<ReturnType<typeof openContext>>,
  setup: DaemonSetup,
  n: number,
): Promise<{ cpuPerItemMs: number; drainMs: number }> {
  const before = (await ctx.stats.read()).sent.collecting;
  const rows = Array.from({ length: n }, (_, i) => ({ delivery_id: randomUUID(), event_at: pastInstant(n + i).toISOString() }));
  const { queued } = await enqueueLikeCli(ctx.enqueueDeps, rows);
  if (queued !== n) throw new Error(`queued ${queued} of ${n}`);
  const daemon = await spawnDaemon({ ...setup, logFile: setup.logFile.replace(/\.log$/, '-spawned.log') }, ['worker']);
  try {
    await daemon.ready;
    const cpuBefore = await cpuSeconds(daemon.pid);
    const started = performance.now();
    await waitFor(async () => (await ctx.stats.read()).sent.collecting >= before + n, { timeoutMs: 300_000, what: `${n} more events sent`, intervalMs: 20 });
    const drainMs = performance.now() - started;
    return { cpuPerItemMs: (((await cpuSeconds(daemon.pid)) - cpuBefore) * 1000) / n, drainMs };
  } finally {
    await daemon.stop();
  }
}

export const pushScenario: Scenario = {
  name: 'push',
  // Under --compare only the worker process's figures (`measures`) are the other build's; the
  // in-process per-item cost is this tree's on both sides.
  isComparable: true,
  async run(env) {
    const n = env.isQuick ? 2000 : 5000;
    const sandbox = await startSandbox({ ratePerMinute: UNLIMITED, autoCreateDeliveries: true });
    const prefix = benchPrefix('push');
    const setup: DaemonSetup = {
      redisUrl: env.redisUrl,
      prefix,
      apiUrl: sandbox.url,
      carrierKey: Object.values(sandbox.keys.carriers)[0] ?? '',
      logFile: join(env.logDir, 'push.log'),
      env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(UNLIMITED) },
    };
    try {
      const { config } = await loadBenchConfig(setup);
      const concurrency = config.delivery.concurrency;
      const bullPerItemMs = await bullmqNoop(env.redisUrl, n, concurrency, config.delivery);
      const undiciPerItemMs = await undiciLoop(sandbox.url, setup.carrierKey, n, concurrency);

      const ctx = await openContext(config, createLogger({ level: 'silent' }), 'bench-push');
      try {
        const rows = Array.from({ length: n }, (_, i) => ({ delivery_id: randomUUID(), event_at: pastInstant(i).toISOString() }));
        const { queued } = await enqueueLikeCli(ctx.enqueueDeps, rows);
        if (queued !== n) throw new Error(`queued ${queued} of ${n}`);
        sandbox.clearRequests();
        const daemon = await startInProcess(setup, ['worker']);
        let sent = 0;
        let endedAt = 0;
        try {
          await waitFor(async () => (sent = (await ctx.stats.read()).sent.collecting) >= n, { timeoutMs: 300_000, what: `${n} events sent`, intervalMs: 20 });
          endedAt = Date.now();
        } finally {
          await daemon.stop();
        }
        const requests = sandbox.requests().filter((r) => r.endpoint === 'collecting');
        const firstAt = Math.min(...requests.map((r) => r.at));
        const daemonPerItemMs = (endedAt - firstAt) / n;
        const non200 = requests.filter((r) => r.status !== 200).length;
        const ratio = daemonPerItemMs / bullPerItemMs;
        const us = (ms: number): string => `${Math.round(ms * 1000)} µs`;
        const spawned = await spawnedCpuPerItem(ctx, setup, n);
        const floorMs = bullPerItemMs + undiciPerItemMs;
        return {
          figures: [
            {
              metric: `per-item cost, ${n.toLocaleString('en-US')} events, concurrency ${concurrency}`,
              value: Math.round(daemonPerItemMs * 1000),
              unit: `µs (${Math.round(1000 / daemonPerItemMs).toLocaleString('en-US')} items/s)`,
              reference: `raw BullMQ no-op job: ${us(bullPerItemMs)} → ${round(ratio, 2)}×`,
              target: `≤ ${PUSH_COST_MAX_RATIO}× the no-op job (issue 14)`,
              isMet: ratio <= PUSH_COST_MAX_RATIO,
            },
            {
              metric: 'own work beyond a no-op job + a raw request',
              value: Math.round((daemonPerItemMs - bullPerItemMs - undiciPerItemMs) * 1000),
              unit: `µs = ${round((daemonPerItemMs - bullPerItemMs - undiciPerItemMs) / bullPerItemMs, 2)}× the no-op job`,
              reference: `floor = no-op job ${us(bullPerItemMs)} + raw undici request to the sandbox ${us(undiciPerItemMs)} = ${us(bullPerItemMs + undiciPerItemMs)}; ours ${round(daemonPerItemMs / (bullPerItemMs + undiciPerItemMs), 2)}× the floor`,
            },
            {
              metric: `daemon CPU per API request, push path only (worker process, ${n.toLocaleString('en-US')} events)`,
              value: Math.round(spawned.cpuPerItemMs * 1000),
              unit: `µs = ${round(spawned.cpuPerItemMs / floorMs, 2)}× the floor`,
              reference: `floor, same run: ${us(floorMs)}; drained in ${round(spawned.drainMs / 1000, 2)} s`,
              target: '≤ 1.7× the floor (issue 23 item 4, on the mixed drop)',
              isMet: spawned.cpuPerItemMs / floorMs <= 1.7,
            },
          ],
          notes: [
            `all in one process on one event loop: daemon (worker role), sandbox, references; Redis in its own process; ${requests.length} requests at the sandbox, ${non200} not 200; sent counter ${sent}`,
            'each event has its own delivery (the event chain never makes one wait); the daemon does per item two Redis round trips beyond BullMQ’s own: the push gate before the request (event chain, 401 gate, 429 pause, limiter slot: one script) and its finish after it (slot stamp, counters, chain, event_at claim: one script)',
          ],
          measures: {
            'push path: worker process CPU a request (µs)': spawned.cpuPerItemMs * 1000,
            'push path: that ÷ the floor measured in the run': spawned.cpuPerItemMs / floorMs,
          },
          details: { n, concurrency, daemonPerItemMs, bullPerItemMs, undiciPerItemMs, requests: requests.length, non200 },
        };
      } finally {
        await ctx.closers.closeAll();
      }
    } finally {
      await sandbox.close();
      await cleanupPrefix(env.redisUrl, prefix);
    }
  },
};
