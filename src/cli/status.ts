import type { Command } from 'commander';
import { join, resolve } from 'node:path';
import { ITEM_KINDS } from '../store/keys.js';
import { createLease } from '../store/lease.js';
import { readDeploymentId } from '../store/deployment.js';
import { describeDeployment, HOLDER_FILE, isLive, readHolderFile } from '../spool/lease/holder-file.js';
import { rateLimiterFor } from '../gate/limiter.js';
import { carrierKeyOf } from '../runtime/api-target.js';
import { describeTopology, readTopology } from '../store/topology.js';
import { localTimeText } from './local-time.js';
import type { Context } from '../runtime/context.js';
import { print, withContext } from './shared.js';

/** `carrier-sync status [--json]`: what the deployment is doing, read from Redis and the spool. */
export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'per queue: waiting, delayed, active, completed, failed, dead-lettered; paused state; rate limiter; Redis (topology, primary, replicas, last failover); who holds each spool; schedulers',
    )
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const report = await withContext(command, readStatus);
      if (options.json === true) print(JSON.stringify(report, null, 2));
      else printStatus(report);
    });
}

type StatusReport = Awaited<ReturnType<typeof readStatus>>;

async function readStatus(ctx: Context) {
  // The key the daemon sends with in this configuration: the embedded sandbox's when no API URL is set.
  const carrierKey = await carrierKeyOf(ctx.config);
  const limiter = carrierKey === null ? null : rateLimiterFor(ctx, carrierKey);
  return {
    prefix: ctx.config.prefix,
    redis: ctx.redisTarget.address,
    topology: await readTopology(ctx.redis, ctx.redisTarget, ctx.keys.topology, ctx.config.prefix),
    queues: await readQueues(ctx),
    authFailure: await ctx.authGate.failure(),
    rateLimiter: {
      ratePerMinute: ctx.config.delivery.ratePerMinute,
      inWindow: limiter === null ? null : await limiter.inWindow(),
      pausedForMs: limiter === null ? null : await limiter.pausedForMs(),
      note: limiter === null ? 'window figures need CARRIER_SYNC_CARRIER_KEY (the limiter is kept per key)' : undefined,
    },
    spools: await readSpools(ctx),
    spoolHolderFile: await readSpoolHolderFile(ctx),
    schedulers: (await ctx.queues.housekeeping.getJobSchedulers(0, -1, true)).map((s) => ({
      id: s.key,
      pattern: s.pattern ?? null,
      tz: s.tz ?? null,
      next: s.next === undefined ? null : new Date(s.next).toISOString(),
    })),
  };
}

async function readQueues(ctx: Context): Promise<Record<string, Record<string, number | boolean>>> {
  const stats = await ctx.stats.read();
  const queues: Record<string, Record<string, number | boolean>> = {};
  for (const kind of ITEM_KINDS) {
    const queue = ctx.queues.items[kind];
    const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'failed', 'prioritized');
    queues[kind] = {
      waiting: (counts['waiting'] ?? 0) + (counts['prioritized'] ?? 0),
      delayed: counts['delayed'] ?? 0,
      active: counts['active'] ?? 0,
      // Completed jobs are not kept (see queue/queues.ts): the shared counters say how items ended.
      completed: stats.sent[kind] + stats.superseded[kind] + stats.duplicates[kind],
      failed: stats.failed[kind],
      deadLettered: counts['failed'] ?? 0,
      paused: await queue.isPaused(),
      received: stats.received[kind],
      sent: stats.sent[kind],
      duplicates: stats.duplicates[kind],
      superseded: stats.superseded[kind],
      rateLimited: stats.rate_limited[kind],
    };
  }
  return queues;
}

async function readSpools(ctx: Context) {
  return Promise.all(
    (await ctx.redis.smembers(ctx.keys.spools)).sort().map(async (id) => {
      const holder = await createLease(ctx.redis, ctx.keys.spoolLease(id)).read();
      return {
        id,
        holder: holder === null ? null : { host: holder.host, pid: holder.pid, version: holder.version, since: holder.since, leaseLeftMs: holder.ttlMs },
      };
    }),
  );
}

/** The spool's own record of its holder: another deployment's keeps this one off the spool. */
async function readSpoolHolderFile(ctx: Context) {
  const holderRecord = await readHolderFile(ctx.config.spool.dir).catch(() => null);
  if (holderRecord === null) return null;
  const deploymentId = await readDeploymentId(ctx.redis, ctx.keys);
  return {
    path: join(resolve(ctx.config.spool.dir), HOLDER_FILE),
    holder: holderRecord,
    isLive: isLive(holderRecord, Date.now()),
    isOtherDeployment: holderRecord.deploymentId !== deploymentId,
  };
}

function printStatus(report: StatusReport): void {
  const rows = Object.entries(report.queues).map(
    ([kind, c]) =>
      `${kind.padEnd(11)} ${String(c['waiting']).padStart(8)} ${String(c['delayed']).padStart(8)} ${String(c['active']).padStart(7)} ${String(c['completed']).padStart(10)} ${String(c['failed']).padStart(7)} ${String(c['deadLettered']).padStart(6)} ${String(c['duplicates']).padStart(6)}  ${c['paused'] === true ? 'PAUSED' : ''}`,
  );
  print(['queue        waiting  delayed  active  completed  failed    dlq   dups', ...rows].join('\n'));
  if (report.authFailure !== null)
    print(
      `\n!! queues paused: the API refused the key (401) at ${report.authFailure.at}: ${report.authFailure.message}\n   fix the key, then run \`carrier-sync resume\` (a probe also retries with backoff)`,
    );
  const rl = report.rateLimiter;
  print(
    `\nrate limiter: ${rl.inWindow ?? '?'} of ${rl.ratePerMinute} per minute in the window${rl.pausedForMs ? `, paused ${rl.pausedForMs} ms by a 429` : ''}`,
  );
  print(`\nredis: ${describeTopology(report.topology, localTimeText)}`);
  for (const spool of report.spools) {
    const { holder } = spool;
    print(
      `\nspool ${spool.id}: ${holder === null ? 'no process holds it (no watcher running, or one is taking over)' : `held by pid ${holder.pid} on ${holder.host} (carrier-sync ${holder.version ?? 'version not recorded'}) since ${holder.since} (lease ${(holder.leaseLeftMs / 1000).toFixed(1)} s left)`}`,
    );
  }
  const file = report.spoolHolderFile;
  if (file?.isOtherDeployment === true) {
    const self = describeDeployment(report);
    print(
      file.isLive
        ? `\n!! spool ${file.path}: held by another deployment (${describeDeployment(file.holder)}; pid ${file.holder.pid} on ${file.holder.host}, live until ${file.holder.expiresAt}); this deployment (${self}) does not watch it`
        : `\nspool ${file.path}: last held by another deployment (${describeDeployment(file.holder)}), expired at ${file.holder.expiresAt}: a watcher of this deployment may take it`,
    );
  }
  if (report.schedulers.length > 0) {
    print('\nschedulers:');
    for (const s of report.schedulers) print(`  ${s.id.padEnd(18)} ${String(s.pattern).padEnd(16)} ${String(s.tz).padEnd(6)} next ${s.next ?? '-'}`);
  }
}
