/**
 * push-replica: what the replica wait costs on the push path (issue 28 item 2). With replicas, each
 * request leaves only once its attempt record is on one (the gate's enter is followed by
 * `WAIT 1 <ms>` in the same pipeline, on a connection of its own), and its answer counts as written
 * once a replica has it (a few bytes and WAIT after the leave: push/answer-write.ts). Measured on a primary of this
 * scenario's own, with and without a replica (a second redis-server, REPLICAOF), alternating
 * (off on off on …) because the machine is shared and noisy; each round queues N events and
 * spawns a worker-only daemon, whose CPU (/proc) per request and drain time are taken. Reported:
 * the medians of each mode and their ratio.
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createLogger } from '../../../src/log.js';
import { openContext } from '../../../src/runtime/context.js';
import { startSandbox } from '../../../src/sandbox/server.js';
import { loadBenchConfig, type DaemonSetup } from '../support/daemon.js';
import { benchPrefix, cleanupPrefix, commandCalls, startPrivateRedis } from '../support/redis.js';
import type { Scenario } from '../support/report.js';
import { round, waitFor } from '../support/wait.js';
import { spawnedCpuPerItem } from './push.js';

const UNLIMITED = 1_000_000_000;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function connectedReplicas(redis: Redis): Promise<number> {
  return Number(/^connected_slaves:(\d+)/m.exec(await redis.info('replication'))?.[1] ?? 0);
}

/** Attaches the replica (and waits until the primary counts it) or detaches it (until it does not). */
async function setReplica(primary: Redis, replica: Redis, primaryPort: number, isOn: boolean): Promise<void> {
  await (isOn ? replica.replicaof('127.0.0.1', primaryPort) : replica.replicaof('NO', 'ONE'));
  await waitFor(async () => (await connectedReplicas(primary)) === (isOn ? 1 : 0), {
    timeoutMs: 30_000,
    what: `replica ${isOn ? 'attached' : 'detached'}`,
    intervalMs: 50,
  });
  if (isOn)
    await waitFor(async () => /master_link_status:up/.test(await replica.info('replication')), { timeoutMs: 30_000, what: 'replica in sync', intervalMs: 50 });
}

export const pushReplicaScenario: Scenario = {
  name: 'push-replica',
  async run(env) {
    const n = env.isQuick ? 1000 : 3000;
    const pairs = env.isQuick ? 2 : 3;
    const primaryServer = await startPrivateRedis(1024);
    const replicaServer = await startPrivateRedis(1024);
    const primaryPort = Number(new URL(primaryServer.url).port);
    const primary = new Redis(primaryServer.url);
    const replica = new Redis(replicaServer.url);
    const sandbox = await startSandbox({ ratePerMinute: UNLIMITED, autoCreateDeliveries: true });
    const prefix = benchPrefix('push-replica');
    const setup: DaemonSetup = {
      redisUrl: primaryServer.url,
      prefix,
      apiUrl: sandbox.url,
      carrierKey: Object.values(sandbox.keys.carriers)[0] ?? '',
      logFile: join(env.logDir, 'push-replica.log'),
      env: { CARRIER_SYNC_RATE_LIMIT_PER_MINUTE: String(UNLIMITED) },
    };
    const runs: Record<'off' | 'on', Array<{ cpuPerItemMs: number; drainMs: number }>> = { off: [], on: [] };
    const waits: Record<'off' | 'on', number[]> = { off: [], on: [] };
    try {
      const { config } = await loadBenchConfig(setup);
      const ctx = await openContext(config, createLogger({ level: 'silent' }), 'bench-push-replica');
      try {
        for (let i = 0; i < pairs * 2; i += 1) {
          const mode = i % 2 === 0 ? 'off' : 'on';
          await setReplica(primary, replica, primaryPort, mode === 'on');
          env.progress(`push-replica: round ${i + 1} of ${pairs * 2}, replica ${mode}`);
          const before = await commandCalls(primary);
          runs[mode].push(await spawnedCpuPerItem(ctx, setup, n));
          // The WAITs the round made: one per request with the replica on, none without (checks the set-up).
          waits[mode].push(((await commandCalls(primary))['wait'] ?? 0) - (before['wait'] ?? 0));
        }
      } finally {
        await ctx.closers.closeAll();
      }
    } finally {
      primary.disconnect();
      replica.disconnect();
      await sandbox.close();
      await cleanupPrefix(primaryServer.url, prefix);
      await Promise.all([primaryServer.stop(), replicaServer.stop()]);
    }
    const us = (ms: number): string => `${Math.round(ms * 1000)} µs`;
    const cpu = { off: median(runs.off.map((r) => r.cpuPerItemMs)), on: median(runs.on.map((r) => r.cpuPerItemMs)) };
    const drain = { off: median(runs.off.map((r) => r.drainMs)), on: median(runs.on.map((r) => r.drainMs)) };
    const spread = (mode: 'off' | 'on'): string => runs[mode].map((r) => us(r.cpuPerItemMs)).join(', ');
    return {
      figures: [
        {
          metric: `daemon CPU per API request with a replica (WAIT 1 before each request and after its answer), median of ${pairs}`,
          value: Math.round(cpu.on * 1000),
          unit: `µs = ${round(cpu.on / cpu.off, 2)}× without`,
          reference: `without a replica: ${us(cpu.off)} (runs: ${spread('off')}; with: ${spread('on')})`,
        },
        {
          metric: `drain of ${n.toLocaleString('en-US')} events with a replica, median of ${pairs}`,
          value: round(drain.on / 1000, 2),
          unit: `s = ${round(drain.on / drain.off, 2)}× without`,
          reference: `without a replica: ${round(drain.off / 1000, 2)} s`,
        },
      ],
      notes: [
        'primary and replica: private redis-servers of this scenario on loopback (no AOF); rounds alternate replica off / on; a worker-only daemon process per round',
        `WAIT calls per round (${n} events each): replica off ${waits.off.join(', ')}; on ${waits.on.join(', ')}`,
      ],
      details: { n, pairs, runs, waits },
    };
  },
};
