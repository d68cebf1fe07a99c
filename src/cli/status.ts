import type { Command } from 'commander';
import { join, resolve } from 'node:path';
import { ITEM_KINDS } from '../store/keys.js';
import { createLease } from '../store/lease.js';
import { readDeploymentId } from '../store/deployment.js';
import { describeDeployment, HOLDER_FILE, isLive, readHolderFile } from '../spool/lease/holder-file.js';
import { rateLimiterFor } from '../gate/limiter.js';
import { carrierKeyOf } from '../runtime/api-target.js';
import { describeTopology, readTopology } from '../store/topology.js';
import { kindName } from '../i18n/kind-name.js';
import { describeAuthFailure } from '../i18n/auth-failure.js';
import { localTime } from '../i18n/local-time.js';
import { translator, type Lang, type Translate } from '../i18n/translate.js';
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
      const { report, lang } = await withContext(command, async (ctx) => ({ report: await readStatus(ctx), lang: ctx.config.lang }));
      if (options.json === true) print(JSON.stringify(report, null, 2));
      else printStatus(report, lang);
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

const COLUMNS = [
  ['waiting', 'cli.status.waiting', 8],
  ['delayed', 'cli.status.delayed', 8],
  ['active', 'cli.status.active', 7],
  ['completed', 'cli.status.completed', 10],
  ['failed', 'cli.status.failed', 7],
  ['deadLettered', 'cli.status.deadLettered', 6],
  ['duplicates', 'cli.status.duplicates', 6],
] as const;

/** The queues' table: a column as wide as its heading in the reader's language, or its usual width. */
function queueTable(report: StatusReport, t: Translate): string {
  const widths = COLUMNS.map(([, key, width]) => Math.max(width, t(key).length));
  const first = Math.max(11, t('cli.status.queue').length);
  const line = (name: string, cells: string[], tail: string): string =>
    `${name.padEnd(first)} ${cells.map((cell, i) => cell.padStart(widths[i]!)).join(' ')}${tail}`;
  const header = line(
    t('cli.status.queue'),
    COLUMNS.map(([, key]) => t(key)),
    '',
  );
  const rows = Object.entries(report.queues).map(([kind, c]) =>
    line(
      kindName(kind, t),
      COLUMNS.map(([field]) => String(c[field])),
      `  ${c['paused'] === true ? t('cli.status.paused') : ''}`,
    ),
  );
  return [header, ...rows].join('\n');
}

function printStatus(report: StatusReport, lang: Lang): void {
  const t = translator(lang);
  print(queueTable(report, t));
  if (report.authFailure !== null)
    print(
      `\n${t('cli.status.authPaused', { at: localTime(report.authFailure.at), message: describeAuthFailure(t, report.authFailure) })}\n   ${t('cli.status.authAction')}`,
    );
  const rl = report.rateLimiter;
  // Numbers as text: ICU would group their digits (a pid of 12345 is no "12,345").
  const window = { inWindow: String(rl.inWindow ?? '?'), limit: String(rl.ratePerMinute), ms: String(rl.pausedForMs ?? 0) };
  print(`\n${t(rl.pausedForMs ? 'cli.status.limiterPaused' : 'cli.status.limiter', window)}`);
  print(`\n${t('cli.status.redis', { topology: describeTopology(report.topology, t, (iso) => localTime(iso, { ms: true })) })}`);
  for (const spool of report.spools) print(`\n${spoolLine(spool, t)}`);
  const file = report.spoolHolderFile;
  if (file?.isOtherDeployment === true) {
    const values = { path: file.path, other: describeDeployment(file.holder), until: localTime(file.holder.expiresAt) };
    print(
      `\n${
        file.isLive
          ? t('cli.status.foreignLive', { ...values, pid: String(file.holder.pid), host: file.holder.host, self: describeDeployment(report) })
          : t('cli.status.foreignExpired', values)
      }`,
    );
  }
  if (report.schedulers.length > 0) {
    print(`\n${t('cli.status.schedulers')}`);
    for (const s of report.schedulers)
      print(
        `  ${s.id.padEnd(18)} ${String(s.pattern).padEnd(16)} ${String(s.tz).padEnd(6)} ${t('cli.status.next', { next: s.next === null ? '-' : localTime(s.next) })}`,
      );
  }
}

function spoolLine(spool: StatusReport['spools'][number], t: Translate): string {
  const { holder } = spool;
  if (holder === null) return t('cli.status.spoolFree', { spool: spool.id });
  return t('cli.status.spoolHeld', {
    spool: spool.id,
    pid: String(holder.pid),
    host: holder.host,
    version: holder.version ?? t('cli.status.versionUnknown'),
    since: localTime(holder.since),
    // A number: written the reader's way (4.8 s, 4,8 s).
    left: Math.round(holder.leaseLeftMs / 100) / 10,
  });
}
